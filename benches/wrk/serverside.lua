-- wrk script: product pages of the embedded demo (`vitrine serve` without --config).
-- Each request is a product page (`page_view` + `product_view`) of one of 10,000
-- returning shoppers, for a product drawn uniformly from the demo's 3,000, asking
-- for the two product-page zones (PP-01, PP-02), as a store's plugin sends it.
--
--   wrk -t1 -c32 -d10s -s benches/wrk/serverside.lua http://127.0.0.1:7480
--
-- The same script against `vitrine-loadtest baseline` gives the bare server's figure.

wrk.method = "POST"
wrk.path = "/api/serverside"
wrk.headers["Content-Type"] = "application/json"

local template = '{"appId":"demo-access-key","secretKey":"demo-secret-key",'
  .. '"currentUrl":"https://shop.example/product/%s","userAgent":"Mozilla/5.0",'
  .. '"ip":"203.0.113.9","visitorId":"wrk-%d","sessionId":"",'
  .. '"events":[{"name":"page_view","data":{"page_type":"product_page","product_id":"%s"}},'
  .. '{"name":"product_view","data":{"id":"%s"}}],"zones":["PP-01","PP-02"]}'

-- Bodies made once per thread, so the script's own cost per request stays small.
local bodies = {}
local next_body = 1

function init(args)
  math.randomseed(7)
  for i = 1, 20000 do
    local product = string.format("P%05d", math.random(1, 3000))
    local visitor = math.random(1, 10000)
    bodies[i] = string.format(template, product, visitor, product, product)
  end
end

function request()
  local body = bodies[next_body]
  next_body = next_body % #bodies + 1
  return wrk.format(nil, nil, nil, body)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format("non-2xx or socket errors: %d\n",
    errors.status + errors.connect + errors.read + errors.write + errors.timeout))
end

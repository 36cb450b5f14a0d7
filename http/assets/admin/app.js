// Vitrine's dashboard: reads the admin API (/admin/api/...) with the admin token the
// operator pastes (kept in this tab's sessionStorage) and shows, per account, the zones'
// analytics with charts (uPlot 1.6.32, vendored), the experiments and their verdicts,
// live figures, and a zone preview with the explanation beside each item.
"use strict";

const TOKEN_KEY = "vitrine-admin-token";
const COLOURS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00"];
const DAY_MS = 86400000;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  accounts: [],
  account: null,
  charts: [],
  liveTimer: null,
};

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text, never markup). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "className") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** GET an admin API path with the token; the JSON answer, or an Error with the server's message. */
async function api(path) {
  return (await call("GET", path)).body;
}

/** A request to an admin API path with the token and a JSON body: `{status, body, etag}`
 * when it succeeds, else an Error with the server's message, `status` and `body` (whose
 * `errors` name each problem's JSON path). */
async function call(method, path, body, headers) {
  const init = { method, headers: Object.assign({ Authorization: "Bearer " + state.token }, headers || {}) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("/admin/api/" + path, init);
  let answer = null;
  try {
    answer = await response.json();
  } catch (_) {
    answer = null;
  }
  if (!response.ok) {
    const error = new Error((answer && answer.error) || "HTTP " + response.status);
    error.status = response.status;
    error.body = answer;
    throw error;
  }
  return { status: response.status, body: answer, etag: response.headers.get("ETag") };
}

const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
const percent = (x) => (x === null || x === undefined ? "–" : (x * 100).toFixed(1) + " %");
const revenueText = (revenue) =>
  revenue.length ? revenue.map((r) => r.amount + " " + r.currency).join(", ") : "0";

async function logIn(token) {
  state.token = token;
  const overview = await api("accounts");
  sessionStorage.setItem(TOKEN_KEY, token);
  state.accounts = overview.accounts;
  state.role = overview.token.role;
  document.body.classList.toggle("viewer", state.role !== "editor");
  const select = $("account");
  select.replaceChildren(...state.accounts.map((a) => el("option", { value: a.accessKey }, a.accessKey)));
  $("login").hidden = true;
  $("session").hidden = false;
  $("dashboard").hidden = false;
  if (!$("to").value) {
    const today = Date.now();
    $("to").value = isoDay(today);
    $("from").value = isoDay(today - 29 * DAY_MS);
  }
  await showAccount(select.value);
  clearInterval(state.liveTimer);
  await refreshLive();
  state.liveTimer = setInterval(() => refreshLive().catch(showLoggedOut), 2000);
}

function showLoggedOut(error) {
  clearInterval(state.liveTimer);
  if (error && (error.status === 401 || error.status === 403)) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("login").hidden = false;
    $("dashboard").hidden = true;
    $("session").hidden = true;
    $("login-error").textContent = error.message;
  }
}

/** Shows the account's dashboard and console. While its parts load, the body's
 * `data-loading` says so (`account`), so what waits for the page to settle can tell;
 * a part that failed is thrown once every part has ended. */
async function showAccount(key) {
  state.account = state.accounts.find((a) => a.accessKey === key) || state.accounts[0];
  if (!state.account) return;
  const zones = state.account.zones.filter((z) => z.strategy);
  $("preview-zone").replaceChildren(...zones.map((z) => el("option", { value: z.id }, z.id + " — " + z.title)));
  document.body.dataset.loading = "account";
  const parts = await Promise.allSettled([
    showAnalytics(),
    window.vitrineExperiments ? window.vitrineExperiments.show() : null,
    showPredictions(),
    showTuning(),
    window.vitrineConsole ? window.vitrineConsole.show() : null,
  ]);
  delete document.body.dataset.loading;
  const failed = parts.find((part) => part.status === "rejected");
  if (failed) throw failed.reason;
}

async function showAnalytics() {
  const key = encodeURIComponent(state.account.accessKey);
  const range = "from=" + $("from").value + "&to=" + $("to").value;
  const analytics = await api("accounts/" + key + "/analytics?" + range);
  const rows = analytics.zones.map((z) => {
    const t = z.totals;
    return el(
      "tr",
      { dataset: { zone: z.zone, variant: z.variant } },
      el("td", {}, z.zone),
      el("td", {}, z.variant || "–"),
      el("td", {}, z.strategy || "–"),
      el("td", { className: "number answers" }, t.answers),
      el("td", { className: "number impressions" }, t.impressions),
      el("td", { className: "number visitors" }, t.visitors),
      el("td", { className: "number viewed" }, t.viewed),
      el("td", { className: "number view-through" }, percent(t.viewThroughRate)),
      el("td", { className: "number clicked" }, t.clicked),
      el("td", { className: "number click-through" }, percent(t.clickThroughRate)),
      el("td", { className: "number basketed" }, t.basketed),
      el("td", { className: "number ordered" }, t.orderedLines),
      el("td", { className: "number revenue" }, revenueText(t.revenue)),
    );
  });
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 13 }, "No zone answers in this range yet.")));
  $("zones-table").tBodies[0].replaceChildren(...rows);
  drawCharts(analytics);
}

/** The width a y axis needs for its longest label (uPlot keeps 50 px otherwise, and
 * cuts longer labels such as "12,345.00" to "45.00"). */
function axisSize(self, values, axisIdx, cycleNum) {
  const axis = self.axes[axisIdx];
  // uPlot sizes axes in a loop until they settle; keep the first answer.
  if (cycleNum > 1) return axis._size;
  let size = axis.ticks.size + axis.gap;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  if (longest) {
    self.ctx.font = axis.font[0];
    size += self.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size);
}

/** Days of the range as UTC midnights in seconds, and each zone's series over them. */
function drawCharts(analytics) {
  for (const chart of state.charts) chart.destroy();
  state.charts = [];
  const start = Date.parse(analytics.from + "T00:00:00Z");
  const end = Date.parse(analytics.to + "T00:00:00Z");
  const days = [];
  for (let t = start; t <= end; t += DAY_MS) days.push(t);
  const xs = days.map((t) => t / 1000);
  const currency = state.account.defaultCurrency;
  $("revenue-currency").textContent = currency;
  const series = (pick) =>
    analytics.zones.map((z) => {
      const byDay = new Map(z.days.map((d) => [d.date, d]));
      return days.map((t) => {
        const day = byDay.get(isoDay(t));
        return day ? pick(day) : 0;
      });
    });
  const labels = analytics.zones.map((z) => (z.variant ? z.zone + " / " + z.variant : z.zone));
  const revenue = (d) => {
    const line = d.revenue.find((r) => r.currency === currency);
    return line ? Number(line.amount) : 0;
  };
  const charts = [
    ["chart-answers", series((d) => d.answers), (v) => v],
    ["chart-viewthrough", series((d) => (d.impressions ? d.viewed / d.impressions : 0)), (v) => (v * 100).toFixed(1) + "%"],
    ["chart-revenue", series(revenue), (v) => v.toFixed(2)],
  ];
  for (const [id, ys, format] of charts) {
    const target = $(id);
    target.replaceChildren();
    const opts = {
      width: 420,
      height: 220,
      // Half a day of margin either side, so that every day (a single one too) stands
      // clear of the edges.
      scales: { x: { time: true, range: (_, min, max) => [min - DAY_MS / 2000, max + DAY_MS / 2000] } },
      series: [{}].concat(
        labels.map((label, i) => ({
          label,
          stroke: COLOURS[i % COLOURS.length],
          fill: COLOURS[i % COLOURS.length],
          width: 2,
          // Days are counts of their own: drawn as points, not joined by lines (which
          // would draw one day of data as a ramp from zero).
          paths: () => null,
          points: { show: true, size: 8 },
          value: (_, v) => (v === null ? "–" : format(v)),
        })),
      ),
      axes: [{}, { values: (_, ticks) => ticks.map(format), size: axisSize }],
    };
    state.charts.push(new uPlot(opts, [xs].concat(ys), target));
    target.dataset.series = String(labels.length);
    target.dataset.total = String(ys.flat().reduce((a, b) => a + b, 0));
  }
}

async function showPredictions() {
  const key = encodeURIComponent(state.account.accessKey);
  const predictions = await api("accounts/" + key + "/predictions");
  $("predictions-sample").textContent = predictions.sampledOneIn;
  $("predictions-top").textContent = predictions.top;
  $("predictions-window").textContent = predictions.windowTrials.toLocaleString("en");
  const rows = predictions.zones.map((z) =>
    el(
      "tr",
      { dataset: { zone: z.zone } },
      el("td", {}, z.zone),
      el("td", { className: "number trials" }, z.trials),
      el("td", { className: "number hit-rate" }, percent(z.hitRate)),
      el("td", { className: "number mrr" }, z.mrr.toFixed(3)),
      el("td", { className: "number trials-total" }, z.trialsTotal),
      el("td", { className: "number hits-total" }, z.hitsTotal),
    ),
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 6 }, "No shopper judged yet.")));
  $("predictions-table").tBodies[0].replaceChildren(...rows);
}

/** A setting of a tuning grid in words. */
function settingText(s) {
  if (!s) return "–";
  if ("history" in s) {
    return "history " + s.history + ", long-term " + s.longTerm + ", sessions " + s.sessions + ", popularity " + s.popularity + ", purchases " + s.purchases;
  }
  const steps = "coViewWindow" in s ? s.coViewWindow : s.coPurchaseWindow;
  const forward = "coViewForward" in s ? s.coViewForward : s.coPurchaseForward;
  return "window " + steps + ", damping " + s.partnerDamping + ", direction " + forward;
}

async function showTuning() {
  const key = encodeURIComponent(state.account.accessKey);
  const models = await api("accounts/" + key + "/models");
  const kinds = [
    ["co-view", "Co-view lists", models],
    ["co-purchase", "Co-purchase lists", models.purchases],
    ["recipe", "personalized recipe" + (models.recipe.zone ? " (" + models.recipe.zone + ")" : ""), models.recipe],
  ];
  const rows = kinds.map(([kind, name, report]) => {
    const active = report.settings.find((s) => s.active);
    const others = report.settings.filter((s) => !s.active && s.trials > 0);
    const best = others.reduce((a, b) => (a && a.hitRate >= b.hitRate ? a : b), null);
    const last = report.switches[report.switches.length - 1];
    return el(
      "tr",
      { dataset: { kind } },
      el("td", {}, name),
      el("td", { className: "active" }, settingText(report.active)),
      el("td", { className: "number trials" }, active ? active.trials : 0),
      el("td", { className: "number hit-rate" }, active ? percent(active.hitRate) : "–"),
      el("td", { className: "best" }, best ? settingText(best) + ": " + percent(best.hitRate) : "–"),
      el("td", { className: "number switches" }, report.switches.length),
      el(
        "td",
        { className: "last-switch" },
        last
          ? "from " + settingText(last.from) + " after " + last.trials + " trials (" + last.wins + " won, " + last.losses + " lost)"
          : "none",
      ),
    );
  });
  $("tuning-table").tBodies[0].replaceChildren(...rows);
}

async function refreshLive() {
  const live = await api("live");
  const ms = (v) => (v === null ? "–" : v.toFixed(3) + " ms");
  $("live-rps").textContent = live.serverside.perSecond.toFixed(1);
  $("live-p50").textContent = ms(live.serverside.p50Ms);
  $("live-p90").textContent = ms(live.serverside.p90Ms);
  $("live-p99").textContent = ms(live.serverside.p99Ms);
  const account = live.accounts.find((a) => state.account && a.accessKey === state.account.accessKey);
  if (account) {
    $("live-visitors").textContent = account.visitors;
    $("live-deltas").textContent = account.deltasPending;
    $("live-feeds").textContent = account.feedsInProgress.length;
  }
}

async function preview() {
  $("preview-error").textContent = "";
  const key = encodeURIComponent(state.account.accessKey);
  const params = new URLSearchParams({ zone: $("preview-zone").value });
  for (const [name, id] of [["visitor", "preview-visitor"], ["product", "preview-product"], ["currency", "preview-currency"]]) {
    const value = $(id).value.trim();
    if (value) params.set(name, value);
  }
  let answer;
  try {
    answer = await api("accounts/" + key + "/explain?" + params);
  } catch (error) {
    $("preview-error").textContent = error.message;
    return;
  }
  const variant = answer.variant ? ", experiment " + answer.variant.experiment + " variant " + answer.variant.name : "";
  $("preview-summary").textContent =
    answer.zone + ": " + (answer.strategy || "–") + (answer.fallback.length ? " then " + answer.fallback.join(", ") : "") +
    variant + "; " + (answer.visitorKnown ? "a known visitor" : "a new shopper") + ", prices in " + answer.currency;
  $("preview-items").replaceChildren(
    ...answer.items.map((item) =>
      el(
        "li",
        { className: "item", dataset: { id: item.id } },
        item.image ? el("img", { src: item.image, alt: item.title || item.id, loading: "eager" }) : null,
        el("div", { className: "title" }, item.title || item.id),
        el("div", {}, el("span", { className: "price" }, item.displayPrice), item.wasPrice ? el("span", { className: "was" }, item.wasPrice) : null),
        el("span", { className: "strategy" + (item.fallback ? " fallback" : "") }, item.strategy + (item.fallback ? " (fallback)" : "")),
        item.score === null ? null : el("span", { className: "score" }, " score " + item.score.toFixed(2)),
        el("ul", { className: "evidence" }, item.evidence.map((f) => el("li", {}, f.text))),
      ),
    ),
  );
  $("preview-filtered-count").textContent = answer.filtered.length;
  $("preview-filtered").replaceChildren(
    ...answer.filtered.map((f) => el("li", {}, f.id + " (" + f.strategy + "): " + f.reason)),
  );
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  $("login-error").textContent = "";
  logIn($("token").value.trim()).catch((error) => {
    $("login-error").textContent = error.message;
  });
});
$("logout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});
$("account").addEventListener("change", (event) => showAccount(event.target.value).catch(showLoggedOut));
for (const id of ["from", "to"]) {
  $(id).addEventListener("change", () => showAnalytics().catch(showLoggedOut));
}
$("preview-form").addEventListener("submit", (event) => {
  event.preventDefault();
  preview();
});
/** A token handed over in the address's fragment (`#token=…`, as the demo prints its
 * console's address): taken into this tab's storage and removed from the address. */
function tokenFromAddress() {
  const match = /^#token=([\x21-\x7e]+)$/.exec(location.hash);
  if (!match) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return decodeURIComponent(match[1]);
}
state.token = tokenFromAddress() || state.token;
if (state.token) logIn(state.token).catch(showLoggedOut);

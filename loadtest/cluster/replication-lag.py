#!/usr/bin/env python3
"""Replication lag between two cluster nodes: an event through node A, seen on node B.

    python3 loadtest/cluster/replication-lag.py --vitrine target/release/vitrine --events 500

Starts three clustered nats-server processes with JetStream on loopback and two
`vitrine` nodes (`replicas = 3`, `events_fsync = "interval"`: the default, the event's
publish is not waited for). Loads a catalogue through A, then, one at a time, sends a
product view for a new visitor through A and polls B's recently-viewed zone for that
visitor until the product shows; prints the median, p99 and max of the time from A's
200 to B's first answer showing it (a poll costs one round trip: the figure is an upper
bound by about that much). Only Python 3 and `nats-server` are needed.
"""

import argparse
import http.client
import importlib.util
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("latency", os.path.join(HERE, "delta-latency.py"))
latency = importlib.util.module_from_spec(spec)
spec.loader.exec_module(latency)

KEY, SECRET = "latency-shop", "latency-shop-secret"
latency.ACCOUNT += """
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
"""
PRODUCTS = 100


def post(connection, path, body):
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        sys.exit(f"{path}: status {response.status}: {answer[:300]!r}")
    return json.loads(answer)


def serverside(connection, visitor, events, zones):
    return post(connection, "/api/serverside", {
        "appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.example/",
        "userAgent": "Mozilla/5.0 (lag)", "ip": "203.0.113.7", "visitorId": visitor,
        "events": events, "zones": zones})


def recently_viewed(connection, visitor):
    answer = serverside(connection, visitor, [], ["RV"])
    return [item["Id"] for item in answer["zones"]["RV"]["items"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--events", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vitrine-lag-") as tmp:
        nats, urls = latency.start_nats(tmp)
        servers = []
        try:
            a, a_addr = latency.start_vitrine(args.vitrine, tmp, "a", urls)
            servers.append(a)
            b, b_addr = latency.start_vitrine(args.vitrine, tmp, "b", urls)
            servers.append(b)
            to_a = http.client.HTTPConnection(*a_addr, timeout=60)
            to_b = http.client.HTTPConnection(*b_addr, timeout=60)
            products = [{"Id": f"p{i}", "Title": f"Product {i}", "Link": f"/p/{i}",
                         "Image": f"/i/{i}.jpg", "Categories": [], "Prices": ["9.99 GBP"]}
                        for i in range(PRODUCTS)]
            token = post(to_a, "/api/delta", {"AppKey": KEY, "SecretKey": SECRET,
                                              "Products": products})["Token"]
            deadline = time.time() + 120
            while post(to_b, "/api/deltastatus", {"AppKey": KEY, "SecretKey": SECRET,
                                                  "Tokens": [token]})[0]["Status"] != 1:
                if time.time() > deadline:
                    sys.exit("the catalogue did not reach B within 120 s")
                time.sleep(0.01)
            taken = []
            for i in range(args.events):
                visitor, product = f"lag-{i}", f"p{i % PRODUCTS}"
                serverside(to_a, visitor, [{"name": "product_view", "data": {"id": product}}], [])
                acknowledged = time.perf_counter()
                deadline = time.time() + 60
                while product not in recently_viewed(to_b, visitor):
                    if time.time() > deadline:
                        sys.exit(f"event {i} not on B within 60 s")
                taken.append(time.perf_counter() - acknowledged)
            taken.sort()
            print(f"{args.events} product views through A, each polled for on B")
            latency.report("A's 200 -> seen on B", taken)
        finally:
            for p in servers + nats:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()

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
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ACCOUNT = harness.ACCOUNT + """
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
"""
PRODUCTS = 100


def serverside(connection, visitor, events, zones):
    return harness.post(connection, "/api/serverside", {
        "appId": harness.KEY, "secretKey": harness.SECRET,
        "currentUrl": "https://shop.example/", "userAgent": "Mozilla/5.0 (lag)",
        "ip": "203.0.113.7", "visitorId": visitor, "events": events, "zones": zones})


def recently_viewed(connection, visitor):
    answer = serverside(connection, visitor, [], ["RV"])
    return [item["Id"] for item in answer["zones"]["RV"]["items"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--events", type=int, default=500)
    args = parser.parse_args()
    with harness.Cluster("vitrine-lag-") as cluster:
        to_a = http.client.HTTPConnection(*cluster.vitrine(args.vitrine, "a", account=ACCOUNT),
                                          timeout=60)
        to_b = http.client.HTTPConnection(*cluster.vitrine(args.vitrine, "b", account=ACCOUNT),
                                          timeout=60)
        products = [{"Id": f"p{i}", "Title": f"Product {i}", "Link": f"/p/{i}",
                     "Image": f"/i/{i}.jpg", "Categories": [], "Prices": ["9.99 GBP"]}
                    for i in range(PRODUCTS)]
        token = harness.post(to_a, "/api/delta", {"AppKey": harness.KEY,
                                                  "SecretKey": harness.SECRET,
                                                  "Products": products})["Token"]
        harness.wait_applied(to_b, token, limit=120)
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
        harness.report("A's 200 -> seen on B", taken)


if __name__ == "__main__":
    main()

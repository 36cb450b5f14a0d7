#!/usr/bin/env python3
"""Catch-up of a joining node: time to its ready line, and records applied per second.

    python3 loadtest/cluster/catch-up.py --vitrine target/release/vitrine --products 100000 --events 1000000

Starts three clustered nats-server processes with JetStream on loopback and node A;
loads the catalogue through A as deltas of 1,000 products and the events as
server-side requests of 100 product views (visitors of 10 views each), waits until A
has applied them all, then starts node B with an empty data directory and times it from
spawn to its ready line (printed once caught up with the stream). With `--snapshot`,
the nodes store snapshot sets every few seconds: B is started once A has stored one
after the load, so it restores the set from the object store and reads only the stream
after it. Only Python 3 and `nats-server` are needed.
"""

import argparse
import http.client
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KEY, SECRET, post = harness.KEY, harness.SECRET, harness.post


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--snapshot", action="store_true",
                        help="B restores a snapshot set stored after the load")
    args = parser.parse_args()
    extra = "snapshot_interval_secs = 5\n" if args.snapshot else ""
    with harness.Cluster("vitrine-catch-up-") as cluster:
        to_a = http.client.HTTPConnection(
            *cluster.vitrine(args.vitrine, "a", cluster_extra=extra), timeout=120)
        started = time.perf_counter()
        deltas = 0
        for first in range(0, args.products, 1000):
            products = [{"Id": f"p{i}", "Title": f"Product {i}", "Link": f"/p/{i}",
                         "Image": f"/i/{i}.jpg", "Categories": [f"c{i % 100}"],
                         "Prices": ["9.99 GBP"]}
                        for i in range(first, min(first + 1000, args.products))]
            post(to_a, "/api/delta", {"AppKey": KEY, "SecretKey": SECRET, "Products": products})
            deltas += 1
        requests = 0
        for first in range(0, args.events, 100):
            events = [{"name": "product_view", "data": {"id": f"p{(i * 7919) % args.products}"}}
                      for i in range(first, min(first + 100, args.events))]
            post(to_a, "/api/serverside", {
                "appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.example/",
                "userAgent": "Mozilla/5.0 (catch-up)", "ip": "203.0.113.7",
                "visitorId": f"v{first // 10}", "events": events, "zones": []})
            requests += 1
        # A delta after the events: in the stream behind them (and the catalogue's).
        marker = post(to_a, "/api/delta", {"AppKey": KEY, "SecretKey": SECRET, "Products": [
            {"Id": "marker", "Title": "Marker", "Link": "/m", "Image": "/m.jpg",
             "Categories": [], "Prices": ["1 GBP"]}]})["Token"]
        harness.wait_applied(to_a, marker)
        loaded = time.perf_counter() - started
        print(f"loaded through A: {args.products} products in {deltas} deltas, "
              f"{args.events} events in {requests} requests ({loaded:.1f} s)")
        if args.snapshot:
            # A snapshot set stored after the load (the first one that started later).
            log_path = os.path.join(cluster.tmp, "a", "server.log")
            count = lambda: open(log_path).read().count("cluster snapshot stored")
            since, before = time.time(), count()
            while count() < before + 2:
                if time.time() - since > 600:
                    sys.exit("no snapshot set stored by A within 600 s")
                time.sleep(0.2)
            print("A stored snapshot sets after the load")
        spawned = time.perf_counter()
        cluster.vitrine(args.vitrine, "b", cluster_extra=extra)
        ready = time.perf_counter() - spawned
        with open(os.path.join(cluster.tmp, "b", "server.log")) as log:
            text = re.sub(r"\x1b\[[0-9;]*m", "", log.read())
        caught = [line for line in text.splitlines() if "caught up with the cluster" in line]
        found = re.search(r"from=(\d+) to=(\d+)", caught[-1]) if caught else None
        first, last = (int(found.group(1)), int(found.group(2))) if found else (1, 0)
        records = last - first + 1
        restored = "restored from the cluster's snapshot" in text
        print(f"B with an empty data directory{' (restored a snapshot set)' if restored else ''}: "
              f"ready in {ready:.2f} s ({records} stream records read, {first} to {last}; "
              f"{args.events / ready:,.0f} events/s of the account's history)")


if __name__ == "__main__":
    main()

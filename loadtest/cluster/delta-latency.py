#!/usr/bin/env python3
"""Delta acknowledgement latency, one server on its own vs a node of a cluster.

    python3 loadtest/cluster/delta-latency.py --vitrine target/release/vitrine --deltas 500

Starts three clustered nats-server processes with JetStream on loopback (their own
storage under a temporary directory), one `vitrine` without `[cluster]`, and one with
`[cluster] replicas = 3`; posts the same number of one-product deltas to each, one at a
time, and prints the median, p99 and max of the time to the 200 (the token) for each.
Only Python 3 and `nats-server` (Debian package) are needed.
"""

import argparse
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def latencies(addr, count):
    connection = http.client.HTTPConnection(*addr, timeout=60)
    taken = []
    for i in range(count):
        product = {"Id": f"p{i}", "Title": f"Product {i}", "Link": f"/p/{i}",
                   "Image": f"/i/{i}.jpg", "Categories": [], "Prices": ["9.99 GBP"]}
        body = {"AppKey": harness.KEY, "SecretKey": harness.SECRET, "Products": [product]}
        started = time.perf_counter()
        harness.post(connection, "/api/delta", body)
        taken.append(time.perf_counter() - started)
    return sorted(taken)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--deltas", type=int, default=500)
    args = parser.parse_args()
    with harness.Cluster("vitrine-latency-") as cluster:
        single_addr = cluster.vitrine(args.vitrine, "single", clustered=False)
        node_addr = cluster.vitrine(args.vitrine, "node")
        latencies(single_addr, 20)
        latencies(node_addr, 20)
        print(f"{args.deltas} one-product deltas, one at a time, after 20 to warm up")
        harness.report("single node (fsync)", latencies(single_addr, args.deltas))
        harness.report("cluster node (R = 3)", latencies(node_addr, args.deltas))


if __name__ == "__main__":
    main()

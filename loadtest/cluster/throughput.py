#!/usr/bin/env python3
"""Throughput of one node against two nodes of a cluster, and the replication lag under
the load harness's shoppers.

    python3 loadtest/cluster/throughput.py --vitrine target/release/vitrine \\
        --loadtest target/release/vitrine-loadtest --products 20000 --seconds 20

Starts three clustered nats-server processes with JetStream on loopback and nodes A and
B configured as the store `vitrine-loadtest run --spawn` starts (`store-config`), then
runs the harness three times with the same shoppers: in a closed loop against A alone
and against A and B (each visitor sticks to one node), and in an open loop at
`--lag-rate` requests/s against A and B while it probes the replication lag (a view
through one node until the other shows it).
The synthetic catalogue is submitted once, through A, as a full feed (built once for
the cluster). Extra arguments after `--` go to both runs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--loadtest", default="target/release/vitrine-loadtest")
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--lag-rate", type=float, default=2000)
    parser.add_argument("rest", nargs="*", help="more arguments for both runs (after --)")
    args = parser.parse_args()
    store = subprocess.run([args.loadtest, "store-config"], check=True,
                           capture_output=True, text=True).stdout
    with harness.Cluster("vitrine-throughput-") as cluster:
        a = cluster.vitrine(args.vitrine, "a", account=store)
        b = cluster.vitrine(args.vitrine, "b", account=store)
        url = lambda addr: f"http://{addr[0]}:{addr[1]}"
        common = ["--seconds", str(args.seconds), "--connections", str(args.connections),
                  *args.rest]
        reports = {}
        runs = [("one node", [a], True, []), ("two nodes", [a, b], True, []),
                ("two nodes at a rate", [a, b], True, ["--rate", str(args.lag_rate)])]
        for name, servers, provision, extra in runs:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                run = [args.loadtest, "run", "--server", ",".join(url(s) for s in servers),
                       "--products", str(args.products), "--json", out.name, *common, *extra]
                if provision:
                    run.append("--provision")
                print(f"== {name}: {' '.join(run)}", flush=True)
                subprocess.run(run, check=True)
                reports[name] = json.load(open(out.name))
        one = reports["one node"]["vitrine"]["idle"]["throughput_rps"]
        two = reports["two nodes"]["vitrine"]["idle"]["throughput_rps"]
        print(f"\nthroughput: one node {one:.0f} requests/s, two nodes {two:.0f} requests/s "
              f"({two / one:.2f}x)")
        lag = reports["two nodes at a rate"].get("replication_lag") or {}
        p = lag.get("lag_us") or {}
        if p:
            print(f"replication lag at {args.lag_rate:.0f} requests/s: {lag['samples']} samples, p50 {p['p50'] / 1000:.2f} ms, "
                  f"p99 {p['p99'] / 1000:.2f} ms, max {p['max'] / 1000:.2f} ms, "
                  f"{lag['timeouts']} not seen within 10 s")


if __name__ == "__main__":
    main()

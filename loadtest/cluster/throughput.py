#!/usr/bin/env python3
"""Throughput of one node against two nodes of a cluster, the replication lag under the
load harness's shoppers, and the CPU cost of serving a request against applying one
replicated from another node (the cluster's cost model in CLUSTER.md).

    python3 loadtest/cluster/throughput.py --vitrine target/release/vitrine \\
        --loadtest target/release/vitrine-loadtest --products 20000 --seconds 20

Starts three clustered nats-server processes with JetStream on loopback and nodes A and
B configured as the store `vitrine-loadtest run --spawn` starts (`store-config`),
submits the synthetic catalogue once through A (a full feed, built once for the
cluster), then runs the harness three times with the same shoppers:

1. closed loop against A alone: B serves nothing and applies everything A takes, so
   B's CPU per request is the cost of applying a replicated request, A's the cost of
   serving one (its publish included);
2. closed loop against A and B (each visitor sticks to one node);
3. open loop at --lag-rate requests/s against A and B while the harness probes the
   replication lag (a view through one node until the other shows it).

CPU is read from /proc (user + system time) over each whole run, warm-up included (the
same load throughout). Extra arguments after `--` go to every run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--loadtest", default="target/release/vitrine-loadtest")
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--lag-rate", type=float, default=2000)
    parser.add_argument("rest", nargs="*", help="more arguments for every run (after --)")
    args = parser.parse_args()
    store = subprocess.run([args.loadtest, "store-config"], check=True,
                           capture_output=True, text=True).stdout
    with harness.Cluster("vitrine-throughput-") as cluster:
        nats = [p.pid for p in cluster.processes[:3]]
        a = cluster.vitrine(args.vitrine, "a", account=store)
        pid_a = cluster.processes[-1].pid
        b = cluster.vitrine(args.vitrine, "b", account=store)
        pid_b = cluster.processes[-1].pid
        url = lambda addr: f"http://{addr[0]}:{addr[1]}"
        catalogue = ["--products", str(args.products)]
        print("== submitting the synthetic catalogue through A", flush=True)
        subprocess.run([args.loadtest, "run", "--server", url(a), *catalogue, "--provision",
                        "--warmup", "0", "--seconds", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        common = [*catalogue, "--browse-synthetic", "--seconds", str(args.seconds),
                  "--connections", str(args.connections), *args.rest]
        runs = [("one node", [a], []), ("two nodes", [a, b], []),
                ("two nodes at a rate", [a, b], ["--rate", str(args.lag_rate)])]
        reports, cpu = {}, {}
        for name, servers, extra in runs:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                run = [args.loadtest, "run", "--server", ",".join(url(s) for s in servers),
                       "--json", out.name, *common, *extra]
                print(f"== {name}: {' '.join(run)}", flush=True)
                pids = {"a": pid_a, "b": pid_b, "nats": None}
                before = {k: cpu_seconds(p) for k, p in pids.items() if p}
                before["nats"] = sum(cpu_seconds(p) for p in nats)
                started = time.perf_counter()
                subprocess.run(run, check=True)
                wall = time.perf_counter() - started
                after = {k: cpu_seconds(p) for k, p in pids.items() if p}
                after["nats"] = sum(cpu_seconds(p) for p in nats)
                reports[name] = json.load(open(out.name))
                cpu[name] = {k: (after[k] - before[k]) / wall for k in after}
                print(f"   CPU cores busy: A {cpu[name]['a']:.2f}, B {cpu[name]['b']:.2f}, "
                      f"NATS servers {cpu[name]['nats']:.2f}", flush=True)
        rps = lambda name: reports[name]["vitrine"]["idle"]["throughput_rps"]
        one, two = rps("one node"), rps("two nodes")
        print(f"\nthroughput: one node {one:.0f} requests/s, two nodes {two:.0f} requests/s "
              f"({two / one:.2f}x)")
        serve = cpu["one node"]["a"] / one * 1e6
        apply = cpu["one node"]["b"] / one * 1e6
        store_us = cpu["one node"]["nats"] / one * 1e6
        print(f"CPU per request (one node under load): serving it {serve:.1f} us on its node, "
              f"applying it {apply:.1f} us on every other node, storing it {store_us:.1f} us "
              f"on the three NATS servers together ({apply / serve:.2f} of serving)")
        lag = reports["two nodes at a rate"].get("replication_lag") or {}
        p = lag.get("lag_us") or {}
        if p:
            print(f"replication lag at {args.lag_rate:.0f} requests/s: {lag['samples']} samples, "
                  f"p50 {p['p50'] / 1000:.2f} ms, p99 {p['p99'] / 1000:.2f} ms, "
                  f"max {p['max'] / 1000:.2f} ms, {lag['timeouts']} not seen within 10 s")


if __name__ == "__main__":
    main()

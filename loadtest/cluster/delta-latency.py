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
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nats_binary():
    found = os.environ.get("NATS_SERVER") or shutil.which("nats-server")
    for path in (found, "/usr/sbin/nats-server", "/usr/local/bin/nats-server"):
        if path and os.path.exists(path):
            return path
    sys.exit("nats-server not found (Debian package nats-server, or set NATS_SERVER)")


def start_nats(tmp, size=3):
    nodes = [{"name": f"n{i + 1}", "client": free_port(), "route": free_port(),
              "monitor": free_port()} for i in range(size)]
    routes = ", ".join(f"nats-route://127.0.0.1:{n['route']}" for n in nodes)
    processes = []
    for n in nodes:
        conf = os.path.join(tmp, n["name"] + ".conf")
        with open(conf, "w") as f:
            f.write(f"server_name: {n['name']}\nlisten: 127.0.0.1:{n['client']}\n"
                    f"http: 127.0.0.1:{n['monitor']}\n"
                    f"jetstream {{ store_dir: \"{os.path.join(tmp, n['name'])}\" }}\n"
                    f"cluster {{ name: latency, listen: 127.0.0.1:{n['route']}, "
                    f"routes: [{routes}] }}\n")
        log = open(os.path.join(tmp, n["name"] + ".log"), "w")
        processes.append(subprocess.Popen([nats_binary(), "-c", conf], stdout=log, stderr=log))
    for n in nodes:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", n["monitor"], timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
    return processes, [f"nats://127.0.0.1:{n['client']}" for n in nodes]


ACCOUNT = """
[[accounts]]
access_key = "latency-shop"
secret_key = "latency-shop-secret"
default_currency = "GBP"
"""


def start_vitrine(binary, tmp, name, cluster):
    directory = os.path.join(tmp, name)
    os.makedirs(directory)
    config = os.path.join(directory, "vitrine.toml")
    with open(config, "w") as f:
        if cluster:
            servers = ", ".join(json.dumps(u) for u in cluster)
            f.write(f"[cluster]\nservers = [{servers}]\nnode = \"{name}\"\nreplicas = 3\n")
        f.write(ACCOUNT)
    log = open(os.path.join(directory, "server.log"), "w")
    process = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir",
         os.path.join(directory, "data"), "--config", config],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = process.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit(f"{name} did not start: {line!r}; see {log.name}")
    host, port = line.removeprefix("listening on http://").rsplit(":", 1)
    return process, (host, int(port))


def latencies(addr, count):
    connection = http.client.HTTPConnection(*addr, timeout=60)
    taken = []
    for i in range(count):
        body = json.dumps({"AppKey": "latency-shop", "SecretKey": "latency-shop-secret",
                           "Products": [{"Id": f"p{i}", "Title": f"Product {i}", "Link": f"/p/{i}", "Image": f"/i/{i}.jpg", "Categories": [],
                                         "Prices": ["9.99 GBP"]}]})
        started = time.perf_counter()
        connection.request("POST", "/api/delta", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        taken.append(time.perf_counter() - started)
        if response.status != 200:
            sys.exit(f"delta {i}: status {response.status}")
    return sorted(taken)


def report(name, taken):
    at = lambda q: taken[min(len(taken) - 1, int(q * len(taken)))] * 1000
    print(f"{name:<22} median {at(0.5):7.2f} ms   p99 {at(0.99):7.2f} ms   max {taken[-1] * 1000:7.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--deltas", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vitrine-latency-") as tmp:
        nats, urls = start_nats(tmp)
        servers = []
        try:
            single, single_addr = start_vitrine(args.vitrine, tmp, "single", None)
            servers.append(single)
            node, node_addr = start_vitrine(args.vitrine, tmp, "node", urls)
            servers.append(node)
            latencies(single_addr, 20)
            latencies(node_addr, 20)
            print(f"{args.deltas} one-product deltas, one at a time, after 20 to warm up")
            report("single node (fsync)", latencies(single_addr, args.deltas))
            report("cluster node (R = 3)", latencies(node_addr, args.deltas))
        finally:
            for p in servers + nats:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()

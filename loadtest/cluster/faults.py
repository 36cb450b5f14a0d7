#!/usr/bin/env python3
"""The cluster through faults: SIGKILLs of NATS servers and Vitrine nodes under orders,
with what every node holds afterwards checked against what the shoppers were answered.

    # one kill of the stream's leader (or a follower), measured:
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --kill leader
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --kill follower
    # 100 SIGKILLs of random NATS servers and Vitrine nodes:
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --loop 100

Starts three clustered nats-server processes (`$NATS_SERVER`, or the one on the PATH;
`scripts/nats-server` installs the pinned one) and nodes A and B, adds 8 products, and
runs two shoppers per node ordering one product per request (a product view and an
order). `--kill` SIGKILLs one NATS server once the shoppers have 2 s of answers,
restarts it 15 s later (JetStream's election takes 4 to 9 s) and reports, from the
kill: the answers (200, 503 "kept", 503 "nothing was recorded"), the window in which
writes were refused, and the slowest answer. `--loop N` does N rounds: each SIGKILLs a
random NATS server or node, waits 2 to 6 s under load, and starts it again (a node on
its own data directory). Shoppers of a dead node wait for it.

Then: every node's outbox drains, a delta through each node is applied on the other
(so each has read everything), every order answered 200 or "kept" must be on both
nodes, no order answered 503 "nothing was recorded" may be on them, and both nodes
must count exactly the first plus those they hold of the orders whose node was killed
under the request (unanswered: recorded or not, both are right). The report gives the
counts; the exit status is 1 on any order lost or refused and present.
"""

import argparse
import http.client
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KEY, SECRET = harness.KEY, harness.SECRET
# What a store's server sends with every server-side call.
CALLER = {"currentUrl": "https://shop.example/", "userAgent": "Mozilla/5.0 (faults)",
          "ip": "203.0.113.7"}
PRODUCTS = [f"f{i}" for i in range(8)]
ELECTION_SLACK = 15.0


class Node:
    """A Vitrine node that can be SIGKILLed and started again on its data directory."""

    def __init__(self, binary, tmp, name, urls, durability):
        self.binary, self.name = binary, name
        self.directory = os.path.join(tmp, name)
        os.makedirs(self.directory)
        self.config = os.path.join(self.directory, "vitrine.toml")
        servers = ", ".join(json.dumps(u) for u in urls)
        with open(self.config, "w") as f:
            # Room for every order id of a long loop (the default remembers a million).
            f.write(f"[memory]\nmax_order_ids = 100000000\n\n"
                    f"[durability]\nevents_fsync = \"{durability}\"\n\n"
                    f"[cluster]\nservers = [{servers}]\nnode = \"{name}\"\nreplicas = 3\n"
                    f"join_timeout_secs = 600\n" + harness.ACCOUNT)
        self.process, self.addr = None, None
        self.start()

    def start(self):
        log = open(os.path.join(self.directory, "server.log"), "a")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--listen", "127.0.0.1:0", "--data-dir",
             os.path.join(self.directory, "data"), "--config", self.config],
            stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on http://"):
            sys.exit(f"{self.name} did not start: {line!r}; see {log.name}")
        host, port = line.removeprefix("listening on http://").rsplit(":", 1)
        self.addr = (host, int(port))

    def kill(self):
        self.process.kill()
        self.process.wait()
        self.addr = None

    def connection(self):
        addr = self.addr
        return http.client.HTTPConnection(*addr, timeout=60) if addr else None

    def gauge(self, name):
        c = self.connection()
        c.request("GET", "/metrics")
        prefix = f'{name}{{account="{KEY}"}} '
        for line in c.getresponse().read().decode().splitlines():
            if line.startswith(prefix):
                return float(line.removeprefix(prefix))
        return float("nan")


class Outcomes:
    def __init__(self):
        self.lock = threading.Lock()
        self.acked, self.kept, self.refused = [], [], []
        # Orders whose node died under the request: recorded or not, both are right.
        self.unanswered = []
        self.slowest = 0.0


def shop(node, name, stop, outcomes):
    """Orders through `node` until `stop`; waits while the node is down."""
    n = 0
    connection = None
    while not stop.is_set():
        if connection is None:
            connection = node.connection()
            if connection is None:
                time.sleep(0.05)
                continue
        order_id = f"{name}-{n}"
        product = PRODUCTS[(n * n + n // 3) % len(PRODUCTS)]
        body = {**CALLER, "appId": KEY, "secretKey": SECRET, "visitorId": f"shopper-{name}",
                "events": [{"name": "product_view", "data": {"id": product}},
                           {"name": "order", "data": {"orderid": order_id, "userid": name,
                            "items": [{"id": product, "qty": 1, "unitprice": 10.0}]}}]}
        sent = time.monotonic()
        try:
            connection.request("POST", "/api/serverside", json.dumps(body),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read().decode()
        except (OSError, http.client.HTTPException):
            # The node died under the request: its answer is unknown (a 200 never
            # arrived), so it may be recorded or not.
            with outcomes.lock:
                outcomes.unanswered.append(order_id)
            connection = None
            n += 1
            continue
        waited = time.monotonic() - sent
        with outcomes.lock:
            outcomes.slowest = max(outcomes.slowest, waited)
            if response.status == 200:
                outcomes.acked.append(order_id)
            elif response.status == 503 and "it is kept" in answer:
                outcomes.kept.append(order_id)
            elif response.status == 503:
                outcomes.refused.append((order_id, time.monotonic()))
            else:
                print(f"unexpected answer {response.status}: {answer[:300]}", file=sys.stderr)
                os._exit(2)
        n += 1


def answered(outcomes):
    with outcomes.lock:
        return len(outcomes.acked) + len(outcomes.kept) + len(outcomes.refused)


def post(node, path, body):
    return harness.post(node.connection(), path, body)


def check(nodes, outcomes):
    """Waits until the nodes have read everything; the orders each holds and lacks."""
    for node in nodes:
        deadline = time.time() + 600
        while True:
            records = node.gauge("vitrine_cluster_outbox_records")
            # (A version without the outbox has no such gauge.)
            if records == 0 or math.isnan(records):
                break
            if time.time() > deadline:
                sys.exit(f"{node.name}'s outbox did not drain")
            time.sleep(0.1)
    for node in nodes:
        marker = {"AppKey": KEY, "SecretKey": SECRET, "Products": [
            {"Id": f"marker-{node.name}-{time.time_ns()}", "Title": "Marker",
             "Link": "/m", "Image": "//img/m.jpg", "Prices": ["1.00 GBP"],
             "Categories": []}]}
        token = post(node, "/api/delta", marker)["Token"]
        for other in nodes:
            harness.wait_applied(other.connection(), token)
    recorded = outcomes.acked + outcomes.kept
    refused = [order_id for order_id, _ in outcomes.refused]
    # A lookup records an order it does not find (and the node publishes it), so:
    # every count first, then the orders that must be everywhere, then, on the first
    # node only, the unanswered and the refused ones.
    report = {node.name: {"counted": int(node.gauge("vitrine_orders_known"))}
              for node in nodes}
    for node in nodes:
        report[node.name]["lost"] = sorted(set(recorded) - holding(node, recorded))
    first = report[nodes[0].name]
    first["unanswered present"] = len(holding(nodes[0], outcomes.unanswered))
    first["refused present"] = sorted(holding(nodes[0], refused))
    return report


def holding(node, orders):
    """Which of `orders` the node holds (it records those it does not)."""
    present = set()
    for start in range(0, len(orders), 50):
        chunk = orders[start:start + 50]
        events = [{"name": "order", "data": {"orderid": o, "userid": "checker",
                   "items": [{"id": "f0", "qty": 1, "unitprice": 1.0}]}} for o in chunk]
        answer = post(node, "/api/serverside", {**CALLER, "appId": KEY, "secretKey": SECRET,
                                                "visitorId": "checker", "events": events})
        for i, o in enumerate(chunk):
            if any(e.startswith(f"events[{i}].") and "already recorded" in e
                   for e in answer.get("errors", [])):
                present.add(o)
    return present


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--durability", default="always", choices=["always", "interval"])
    parser.add_argument("--kill", choices=["leader", "follower"])
    parser.add_argument("--loop", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not args.kill and not args.loop:
        sys.exit("--kill or --loop")
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="vitrine-faults-") as tmp:
        nats = harness.Nats(tmp)
        nodes = []
        try:
            nodes = [Node(args.vitrine, tmp, name, nats.urls(), args.durability)
                     for name in ("a", "b")]
            products = [{"Id": p, "Title": p, "Link": f"/p/{p}", "Image": "//img/p.jpg",
                         "Prices": ["10.00 GBP"], "Categories": ["c1"]} for p in PRODUCTS]
            token = post(nodes[0], "/api/delta", {"AppKey": KEY, "SecretKey": SECRET,
                                                  "Products": products})["Token"]
            harness.wait_applied(nodes[1].connection(), token)
            outcomes, stop = Outcomes(), threading.Event()
            shoppers = [threading.Thread(target=shop, args=(node, f"{node.name}{i}", stop,
                                                            outcomes))
                        for node in nodes for i in range(2)]
            for thread in shoppers:
                thread.start()
            time.sleep(2)
            stream = "VITRINE_" + KEY.encode().hex()
            kills = {"nats": 0, "node": 0}
            if args.kill:
                leader = None
                while leader is None:
                    leader = nats.leader(stream)
                    time.sleep(0.1)
                victim = leader if args.kill == "leader" else (leader + 1) % 3
                before = answered(outcomes)
                at = time.monotonic()
                nats.kill(victim)
                time.sleep(ELECTION_SLACK)
                nats.start(victim)
                nats.wait_healthy(victim)
                time.sleep(2)
                kills["nats"] = 1
            for _ in range(args.loop):
                victims = [("nats", i) for i in range(3)] + [("node", i) for i in range(2)]
                kind, i = random.choice(victims)
                if kind == "nats":
                    nats.kill(i)
                    time.sleep(random.uniform(2, 6))
                    nats.start(i)
                    nats.wait_healthy(i)
                else:
                    nodes[i].kill()
                    time.sleep(random.uniform(2, 6))
                    nodes[i].start()
                kills[kind] += 1
            stop.set()
            for thread in shoppers:
                thread.join()
            result = {"kills": kills, "answered 200": len(outcomes.acked),
                      "answered 503 kept": len(outcomes.kept),
                      "answered 503 nothing recorded": len(outcomes.refused),
                      "slowest answer ms": round(outcomes.slowest * 1000, 1)}
            if args.kill:
                refused = [(when - at) * 1000 for _, when in outcomes.refused]
                result["answers from the kill"] = answered(outcomes) - before
                result["refused from ms"] = round(min(refused), 1) if refused else None
                result["refused until ms"] = round(max(refused), 1) if refused else None
            report = check(nodes, outcomes)
            expected = len(outcomes.acked) + len(outcomes.kept)
            result["unanswered (node killed under the request)"] = len(outcomes.unanswered)
            for name, seen in report.items():
                result[f"node {name}"] = {"orders counted": seen["counted"],
                                          "answered 200 or kept": expected,
                                          "lost": len(seen["lost"]),
                                          "first lost": seen["lost"][:5]}
            first = report[nodes[0].name]
            result["unanswered present"] = first["unanswered present"]
            result["refused present"] = len(first["refused present"])
            result["first refused present"] = first["refused present"][:5]
            print(json.dumps(result, indent=2))
            counts = {seen["counted"] for seen in report.values()}
            failed = (any(seen["lost"] for seen in report.values())
                      or first["refused present"]
                      or counts != {expected + first["unanswered present"]})
            sys.exit(1 if failed else 0)
        finally:
            for node in nodes:
                if node.process and node.process.poll() is None:
                    node.kill()
            nats.stop()


if __name__ == "__main__":
    main()

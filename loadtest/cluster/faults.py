#!/usr/bin/env python3
"""The cluster through faults: SIGKILLs of NATS servers and Vitrine nodes under orders,
with what every node holds afterwards checked against what the shoppers were answered.

    # one kill of the stream's leader (or a follower), measured; phases in a row:
    python3 loadtest/cluster/faults.py --kill leader --kill follower --kill quorum --writer --join
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --kill leader
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --kill follower
    # 100 SIGKILLs of random NATS servers and Vitrine nodes:
    python3 loadtest/cluster/faults.py --vitrine target/release/vitrine --loop 100
    # the campaign: 200 kills with a delta-and-order writer, then a node joining:
    python3 loadtest/cluster/faults.py --loop 200 --writer --join --durability interval
    python3 loadtest/cluster/faults.py --loop 200 --writer --join --durability always

Starts three clustered nats-server processes (`$NATS_SERVER`, or the one on the PATH;
`scripts/nats-server` installs the pinned one) and nodes A and B, adds 8 products, and
runs two shoppers per node ordering one product per request (a product view and an
order). `--kill` SIGKILLs one NATS server once the shoppers have 2 s of answers,
restarts it 15 s later (JetStream's election takes 4 to 9 s) and reports, from the
kill: the answers (200, 503 "kept", 503 "nothing was recorded"), the window in which
writes were refused, and the slowest answer. `--loop N` does N rounds: each SIGKILLs a
random NATS server or node, waits 2 to 6 s under load, and starts it again (a node on
its own data directory). Shoppers of a dead node wait for it.

`--writer` adds a merchant and a shopper: a product added by a delta through one
node and ordered at once through the other, the nodes taking turns (the delta may not
be applied yet where the order is taken). `--join` ends with node C starting with an
empty data directory while the shoppers go on (snapshot sets are stored every 5 s,
and the stream trimmed behind them: it restores the newest and reads the stream after
it), checked as A and B are. Each round of `--loop` prints a line on stderr.

Then: every node's outbox drains, a delta through each node is applied on every other
(so each has read everything), every delta answered 200 must be applied on every
node, and every node must count the same orders (an order is on every node or on
none: never on some only). Under `always` every order answered 200 or "kept" must be
on every node and no order answered 503 "nothing was recorded" may be; under
`interval` an order a node answered in the last window before it was killed may be
on none ("lost within the window", counted). Orders are looked up on every node
after the counts (a lookup records an order it does not find). The report gives the
counts; the exit status is 1 on any order on some nodes only, lost under `always`,
or refused and present.
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
# Orders looked up a request when the nodes are checked (a 4-million-order campaign's
# checks took 46 minutes at 50).
LOOKUP_CHUNK = 1000
# What a store's server sends with every server-side call.
CALLER = {"currentUrl": "https://shop.example/", "userAgent": "Mozilla/5.0 (faults)",
          "ip": "203.0.113.7"}
PRODUCTS = [f"f{i}" for i in range(8)]
ELECTION_SLACK = 15.0


class Node:
    """A Vitrine node that can be SIGKILLed and started again on its data directory."""

    def __init__(self, binary, tmp, name, urls, durability, extra=""):
        self.binary, self.name = binary, name
        self.directory = os.path.join(tmp, name)
        os.makedirs(self.directory)
        self.config = os.path.join(self.directory, "vitrine.toml")
        servers = ", ".join(json.dumps(u) for u in urls)
        with open(self.config, "w") as f:
            # Room for every order id of a long loop (the default remembers a million),
            # and for the checks' lookups of a thousand orders a request.
            f.write(f"[memory]\nmax_order_ids = 100000000\n\n"
                    f"[limits]\nmax_events = {LOOKUP_CHUNK}\nmax_body_bytes = 4194304\n\n"
                    f"[durability]\nevents_fsync = \"{durability}\"\n\n"
                    f"[cluster]\nservers = [{servers}]\nnode = \"{name}\"\nreplicas = 3\n"
                    f"join_timeout_secs = 600\n{extra}" + harness.ACCOUNT)
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
            log.close()
            with open(os.path.join(self.directory, "server.log")) as kept:
                tail = "".join(kept.readlines()[-20:])
            sys.exit(f"{self.name} did not start: {line!r}; its log ends:\n{tail}")
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
        # Delta tokens answered 200.
        self.deltas = []
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
        # A node dead under the request: its answer is unknown (a 200 never arrived),
        # so the order may be recorded or not.
        if not ordered(connection, body, order_id, outcomes):
            connection = None
        n += 1


def write(nodes, stop, outcomes):
    """A merchant adding a product through one node and a shopper ordering it at once
    through the other, the nodes taking turns, until `stop`; waits while a node is
    down."""
    n = 0
    while not stop.is_set():
        merchant, shopper = nodes[n % 2], nodes[(n + 1) % 2]
        c, o = merchant.connection(), shopper.connection()
        if c is None or o is None:
            time.sleep(0.05)
            continue
        product = f"d{n}"
        delta = {"AppKey": KEY, "SecretKey": SECRET, "Products": [
            {"Id": product, "Title": f"New {product}", "Link": f"/p/{product}",
             "Image": "//img/d.jpg", "Prices": ["5.00 GBP"], "Categories": ["c2"]}]}
        try:
            c.request("POST", "/api/delta", json.dumps(delta),
                      {"Content-Type": "application/json"})
            response = c.getresponse()
            answer = response.read().decode()
        except (OSError, http.client.HTTPException):
            n += 1
            continue
        if response.status == 200:
            with outcomes.lock:
                outcomes.deltas.append(json.loads(answer)["Token"])
        elif response.status != 503:
            print(f"unexpected delta answer {response.status}: {answer[:300]}",
                  file=sys.stderr)
            os._exit(2)
        order_id = f"g-o{n}"
        body = {**CALLER, "appId": KEY, "secretKey": SECRET, "visitorId": "shopper-new",
                "events": [{"name": "order", "data": {"orderid": order_id, "userid": "new",
                            "items": [{"id": product, "qty": 1, "unitprice": 5.0}]}}]}
        ordered(o, body, order_id, outcomes)
        n += 1


def ordered(connection, body, order_id, outcomes):
    """Posts an order and files its answer; false when the node died under it."""
    sent = time.monotonic()
    try:
        connection.request("POST", "/api/serverside", json.dumps(body),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read().decode()
    except (OSError, http.client.HTTPException):
        with outcomes.lock:
            outcomes.unanswered.append(order_id)
        return False
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
    return True


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
    # every count first, then the lookups.
    report = {node.name: {"counted": int(node.gauge("vitrine_orders_known"))}
              for node in nodes}
    for node in nodes:
        report[node.name]["deltas not applied"] = not_applied(node, outcomes.deltas)
    for node in nodes:
        report[node.name]["lost"] = sorted(set(recorded) - holding(node, recorded))
    first = report[nodes[0].name]
    first["unanswered present"] = len(holding(nodes[0], outcomes.unanswered))
    first["refused present"] = sorted(holding(nodes[0], refused))
    return report


def not_applied(node, tokens):
    """How many of the delta `tokens` the node does not answer Status 1 for."""
    missing = 0
    for start in range(0, len(tokens), 100):
        chunk = tokens[start:start + 100]
        answer = post(node, "/api/deltastatus", {"AppKey": KEY, "SecretKey": SECRET,
                                                 "Tokens": chunk})
        missing += sum(1 for item in answer if item["Status"] != 1)
    return missing


def holding(node, orders):
    """Which of `orders` the node holds (it records those it does not)."""
    present = set()
    for start in range(0, len(orders), LOOKUP_CHUNK):
        chunk = orders[start:start + LOOKUP_CHUNK]
        events = [{"name": "order", "data": {"orderid": o, "userid": "checker",
                   "items": [{"id": "f0", "qty": 1, "unitprice": 1.0}]}} for o in chunk]
        answer = post(node, "/api/serverside", {**CALLER, "appId": KEY, "secretKey": SECRET,
                                                "visitorId": "checker", "events": events})
        for error in answer.get("errors", []):
            if error.startswith("events[") and "already recorded" in error:
                index = int(error[len("events["):error.index("]")])
                present.add(chunk[index])
    return present


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vitrine", default="target/release/vitrine")
    parser.add_argument("--durability", default="always", choices=["always", "interval"])
    parser.add_argument("--kill", action="append", choices=["leader", "follower", "quorum"],
                        help="a phase: the stream's leader, a follower, or two servers "
                             "(a quorum loss) SIGKILLed, restarted 15 s later; repeatable")
    parser.add_argument("--loop", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writer", action="store_true",
                        help="a merchant adding products and a shopper ordering them")
    parser.add_argument("--join", action="store_true",
                        help="node C joins at the end from the snapshot sets")
    args = parser.parse_args()
    if not args.kill and not args.loop:
        sys.exit("--kill or --loop")
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="vitrine-faults-") as tmp:
        nats = harness.Nats(tmp)
        nodes = []
        try:
            extra = "snapshot_interval_secs = 5\n" if args.join else ""
            nodes = [Node(args.vitrine, tmp, name, nats.urls(), args.durability, extra)
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
            if args.writer:
                shoppers.append(threading.Thread(target=write, args=(nodes, stop, outcomes)))
            for thread in shoppers:
                thread.start()
            time.sleep(2)
            stream = "VITRINE_" + KEY.encode().hex()
            kills = {"nats": 0, "node": 0}
            before, at = answered(outcomes), time.monotonic()
            for phase in args.kill or []:
                leader = None
                while leader is None:
                    leader = nats.leader(stream)
                    time.sleep(0.1)
                victims = {"leader": [leader], "follower": [(leader + 1) % 3],
                           "quorum": [(leader + 1) % 3, (leader + 2) % 3]}[phase]
                for victim in victims:
                    nats.kill(victim)
                time.sleep(ELECTION_SLACK)
                for victim in victims:
                    nats.start(victim)
                for victim in victims:
                    nats.wait_healthy(victim)
                time.sleep(2)
                kills["nats"] += len(victims)
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
                print(f"round {sum(kills.values())}: {kind} {i} killed and started again",
                      file=sys.stderr, flush=True)
            if args.join:
                # C joins under the load, sets stored every 5 s meanwhile.
                nodes.append(Node(args.vitrine, tmp, "c", nats.urls(), args.durability,
                                  extra))
                time.sleep(5)
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
            result["deltas answered 200"] = len(outcomes.deltas)
            report = check(nodes, outcomes)
            expected = len(outcomes.acked) + len(outcomes.kept)
            result["unanswered (node killed under the request)"] = len(outcomes.unanswered)
            for name, seen in report.items():
                result[f"node {name}"] = {"orders counted": seen["counted"],
                                          "answered 200 or kept": expected,
                                          "deltas not applied": seen["deltas not applied"],
                                          "lost": len(seen["lost"]),
                                          "first lost": seen["lost"][:5]}
            first = report[nodes[0].name]
            result["unanswered present"] = first["unanswered present"]
            result["refused present"] = len(first["refused present"])
            result["first refused present"] = first["refused present"][:5]
            counts = {seen["counted"] for seen in report.values()}
            # On some nodes only: the nodes count different orders (counted before
            # any lookup; the lookups on the first node then say which are lost).
            lost = first["lost"]
            result["orders counted alike on every node"] = len(counts) == 1
            result["lost within the window (on none)"] = len(lost) if len(counts) == 1 else None
            print(json.dumps(result, indent=2))
            failed = (len(counts) != 1
                      or any(seen["deltas not applied"] for seen in report.values())
                      or first["refused present"]
                      or (args.durability == "always"
                          and (any(seen["lost"] for seen in report.values())
                               or counts != {expected + first["unanswered present"]})))
            sys.exit(1 if failed else 0)
        finally:
            for node in nodes:
                if node.process and node.process.poll() is None:
                    node.kill()
            nats.stop()


if __name__ == "__main__":
    main()

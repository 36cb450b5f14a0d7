"""What the cluster measurement scripts share: three clustered nats-server processes
with JetStream on loopback, `vitrine` nodes, a JSON POST, and the report line.

    with harness.Cluster("vitrine-lag-") as cluster:
        a = cluster.vitrine(binary, "a")          # a node of the cluster
        single = cluster.vitrine(binary, "s", clustered=False)

Everything started is killed when the block ends.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

KEY, SECRET = "latency-shop", "latency-shop-secret"

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


class Nats:
    """Three clustered NATS servers that can be killed and restarted one by one."""

    def __init__(self, tmp, size=3):
        self.tmp = tmp
        self.nodes = [{"name": f"n{i + 1}", "client": free_port(),
                       "route": free_port(), "monitor": free_port()}
                      for i in range(size)]
        routes = ", ".join(f"nats-route://127.0.0.1:{n['route']}" for n in self.nodes)
        for n in self.nodes:
            n["conf"] = os.path.join(tmp, n["name"] + ".conf")
            with open(n["conf"], "w") as f:
                f.write(f"server_name: {n['name']}\nlisten: 127.0.0.1:{n['client']}\n"
                        f"http: 127.0.0.1:{n['monitor']}\n"
                        f"jetstream {{ store_dir: \"{os.path.join(tmp, n['name'])}\" }}\n"
                        f"cluster {{ name: vitrine, listen: 127.0.0.1:{n['route']}, "
                        f"routes: [{routes}] }}\n")
            n["process"] = None
        for i in range(size):
            self.start(i)
        for i in range(size):
            self.wait_healthy(i)

    def urls(self):
        return [f"nats://127.0.0.1:{n['client']}" for n in self.nodes]

    def start(self, i):
        n = self.nodes[i]
        log = open(os.path.join(self.tmp, n["name"] + ".log"), "a")
        n["process"] = subprocess.Popen([nats_binary(), "-c", n["conf"]],
                                        stdout=log, stderr=log)

    def monitor(self, i, path):
        c = http.client.HTTPConnection("127.0.0.1", self.nodes[i]["monitor"], timeout=2)
        c.request("GET", path)
        response = c.getresponse()
        return response.status, response.read()

    def wait_healthy(self, i, limit=600):
        deadline = time.time() + limit
        while time.time() < deadline:
            try:
                if self.monitor(i, "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        sys.exit(f"NATS server {self.nodes[i]['name']} not healthy within {limit} s")

    def kill(self, i):
        self.nodes[i]["process"].kill()
        self.nodes[i]["process"].wait()
        self.nodes[i]["process"] = None

    def leader(self, stream):
        for i, n in enumerate(self.nodes):
            if n["process"] is None:
                continue
            try:
                status, body = self.monitor(i, "/jsz?accounts=true&streams=true")
            except OSError:
                continue
            if status != 200:
                continue
            for account in json.loads(body).get("account_details", []):
                for detail in account.get("stream_detail", []):
                    if detail.get("name") == stream:
                        leader = detail.get("cluster", {}).get("leader")
                        for j, m in enumerate(self.nodes):
                            if m["name"] == leader:
                                return j
        return None

    def stop(self):
        for i, n in enumerate(self.nodes):
            if n["process"] is not None:
                self.kill(i)


def start_nats(tmp, size=3):
    """Starts `size` clustered NATS servers; their processes and client URLs."""
    nats = Nats(tmp, size)
    return [n["process"] for n in nats.nodes], nats.urls()


ACCOUNT = """
[[accounts]]
access_key = "latency-shop"
secret_key = "latency-shop-secret"
default_currency = "GBP"
"""


def start_vitrine(binary, tmp, name, cluster, account=ACCOUNT, cluster_extra=""):
    directory = os.path.join(tmp, name)
    os.makedirs(directory)
    config = os.path.join(directory, "vitrine.toml")
    with open(config, "w") as f:
        # The account first: it may start with top-level keys.
        f.write(account)
        if cluster:
            servers = ", ".join(json.dumps(u) for u in cluster)
            f.write(f"\n[cluster]\nservers = [{servers}]\nnode = \"{name}\"\nreplicas = 3\n"
                    f"{cluster_extra}")
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


def post(connection, path, body):
    """POSTs `body` as JSON; its answer, parsed (exits on any status but 200)."""
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        sys.exit(f"{path}: status {response.status}: {answer[:300]!r}")
    return json.loads(answer)


def wait_applied(connection, token, limit=600):
    """Waits until the node answers Status 1 for the delta `token`."""
    deadline = time.time() + limit
    while post(connection, "/api/deltastatus", {"AppKey": KEY, "SecretKey": SECRET,
                                                "Tokens": [token]})[0]["Status"] != 1:
        if time.time() > deadline:
            sys.exit(f"a delta was not applied within {limit} s")
        time.sleep(0.01)


def report(name, taken):
    at = lambda q: taken[min(len(taken) - 1, int(q * len(taken)))] * 1000
    print(f"{name:<22} median {at(0.5):7.2f} ms   p99 {at(0.99):7.2f} ms   max {taken[-1] * 1000:7.2f} ms")


class Cluster:
    """Three NATS servers in a temporary directory, and the nodes started on them."""

    def __init__(self, prefix):
        self.prefix = prefix

    def __enter__(self):
        self.temporary = tempfile.TemporaryDirectory(prefix=self.prefix)
        self.tmp = self.temporary.name
        self.processes, self.urls = start_nats(self.tmp)
        return self

    def vitrine(self, binary, name, clustered=True, account=ACCOUNT, cluster_extra=""):
        """Starts a node (or, not `clustered`, a server on its own); its address.
        `cluster_extra`: more lines of its `[cluster]` table."""
        process, addr = start_vitrine(binary, self.tmp, name,
                                      self.urls if clustered else None, account, cluster_extra)
        self.processes.append(process)
        return addr

    def __exit__(self, *_):
        for process in self.processes:
            process.kill()
            process.wait()
        self.temporary.cleanup()

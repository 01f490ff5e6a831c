#!/usr/bin/env python3
"""Another user's chat turns while one run fans out to thousands of tasks.

Starts `palgraph serve` (SQLite, a fresh file; `--postgres URL` for Postgres, a fresh
schema), measures the time from `POST /chat` to its first `status` event over IDLE turns
of an idle server, then starts a background run of the `jokes` graph whose command sends
ITEMS tasks in one step (`goto` of `Send`s) and makes the same turns one after another
until the fan-out ends. Reports the idle and busy p50/p99 and their ratios, the fan-out's
duration, and the server's CPU seconds; `--rounds R` repeats the whole, each round on a new
server, and prints one line per round.

    python3 bench/fanout_fairness.py target/release/palgraph [--items 30000] [--rounds 3]
"""

import argparse
import http.client
import json
import os
import subprocess
import tempfile
import time

QUESTION = "What is the retention period for customer records?"
TERMINAL = ("response", "interrupt", "error", "cancelled")


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Server:
    def __init__(self, binary, items, postgres):
        env = dict(os.environ, PALGRAPH_PORT="0", RUST_LOG="error",
                   PALGRAPH_RATE_PER_SEC="0", PALGRAPH_MAX_SENDS_PER_STEP=str(items))
        env.pop("OPENAI_API_KEY", None)
        if postgres:
            schema = f"fanout_{os.getpid()}_{int(time.time())}"
            subprocess.run(["psql", postgres, "-qc", f"CREATE SCHEMA {schema}"], check=True)
            sep = "&" if "?" in postgres else "?"
            env["DATABASE_URL"] = f"{postgres}{sep}options=-csearch_path%3D{schema}"
        else:
            env.pop("DATABASE_URL", None)
            env["PALGRAPH_DB"] = os.path.join(tempfile.mkdtemp(), "fanout.db")
        self.proc = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.PIPE)
        base = self.proc.stdout.readline().decode().split()[-1]
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        c.request(method, path, body=None if body is None else json.dumps(body),
                  headers={"content-type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None

    def first_status_ms(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        started = time.perf_counter()
        c.request("POST", "/chat", body=json.dumps({"message": QUESTION}),
                  headers={"content-type": "application/json", "accept": "text/event-stream"})
        r = c.getresponse()
        first = None
        while True:
            line = r.readline()
            if not line:
                break
            if not line.startswith(b"data:"):
                continue
            kind = json.loads(line[5:]).get("type")
            if kind == "status" and first is None:
                first = (time.perf_counter() - started) * 1000
            if kind in TERMINAL:
                break
        c.close()
        return first

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def one_round(binary, items, idle_turns, postgres):
    server = Server(binary, items, postgres)
    try:
        for _ in range(5):
            server.first_status_ms()
        idle = [server.first_status_ms() for _ in range(idle_turns)]
        _, thread = server.request("POST", "/threads", {})
        sends = [{"node": "generate_joke", "input": {"subject": f"subject {i}"}}
                 for i in range(items)]
        cpu = server.cpu_seconds()
        started = time.perf_counter()
        code, run = server.request("POST", f"/threads/{thread['thread_id']}/runs",
                                   {"assistant_id": "jokes", "command": {"goto": sends}})
        assert code == 200, run
        busy = []
        while True:
            took = server.first_status_ms()
            _, now = server.request("GET", f"/threads/{thread['thread_id']}/runs/{run['run_id']}")
            if now["status"] not in ("pending", "running"):
                break
            busy.append(took)
        fan_out = time.perf_counter() - started
        assert now["status"] == "success", now
        out = {
            "items": items,
            "fan_out_s": round(fan_out, 2),
            "server_cpu_s": round(server.cpu_seconds() - cpu, 2),
            "idle_turns": len(idle),
            "busy_turns": len(busy),
            "idle_p50_ms": round(quantile(idle, 0.5), 1),
            "idle_p99_ms": round(quantile(idle, 0.99), 1),
            "busy_p50_ms": round(quantile(busy, 0.5), 1),
            "busy_p99_ms": round(quantile(busy, 0.99), 1),
        }
        out["p50_ratio"] = round(out["busy_p50_ms"] / out["idle_p50_ms"], 2)
        out["p99_ratio"] = round(out["busy_p99_ms"] / out["idle_p99_ms"], 2)
        return out
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--items", type=int, default=30000)
    ap.add_argument("--idle-turns", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--postgres", help="a Postgres URL (default: SQLite)")
    args = ap.parse_args()
    for _ in range(args.rounds):
        print(json.dumps(one_round(args.binary, args.items, args.idle_turns, args.postgres)),
              flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The server's memory while it answers a thread's history.

Starts `palgraph serve` (SQLite, a fresh file), grows one thread of the `fanout` graph by
TURNS turns (each turn's state holds every message so far, so the states grow with the
thread), then reads 1,000 of its states with `POST /threads/{id}/history` as a client
pages through them (`limit` 1000, continued with `before` where a response ends at the
server's response size) and reports the bytes read and the server's RSS before, at its
peak (VmHWM, reset just before) and after.

    python3 bench/history_memory.py target/release/palgraph [TURNS]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request


def main():
    binary = sys.argv[1]
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    db = os.path.join(tempfile.mkdtemp(), "history.db")
    env = dict(os.environ, PALGRAPH_PORT="0", PALGRAPH_DB=db, RUST_LOG="error",
               PALGRAPH_RATE_PER_SEC="0")
    env.pop("DATABASE_URL", None)
    server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.PIPE)
    try:
        base = server.stdout.readline().decode().split()[-1]

        def post(path, body):
            req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                         {"content-type": "application/json"})
            return urllib.request.urlopen(req).read()

        def kib(field):
            with open(f"/proc/{server.pid}/status") as f:
                for line in f:
                    if line.startswith(field):
                        return int(line.split()[1])
            raise KeyError(field)

        thread = json.loads(post("/threads", {}))["thread_id"]
        started = time.time()
        for i in range(turns):
            text = f"turn {i} " + "lorem ipsum " * 10
            post(f"/threads/{thread}/runs/wait", {
                "assistant_id": "fanout",
                "input": {"messages": [{"type": "human", "content": text}]}})
        grown = time.time() - started
        with open(f"/proc/{server.pid}/clear_refs", "w") as f:
            f.write("5")
        before_kib = kib("VmRSS:")
        started = time.time()
        states, responses, read, cursor = 0, 0, 0, None
        while states < 1000:
            body = {"limit": 1000 - states}
            if cursor:
                body["before"] = cursor
            data = post(f"/threads/{thread}/history", body)
            page = json.loads(data)
            if not page:
                break
            states += len(page)
            responses += 1
            read += len(data)
            cursor = page[-1]["checkpoint"]["checkpoint_id"]
        took = time.time() - started
        print(json.dumps({
            "turns": turns, "grow_s": round(grown, 1), "states": states,
            "responses": responses, "bytes": read, "read_s": round(took, 2),
            "rss_before_mib": before_kib // 1024, "rss_peak_mib": kib("VmHWM:") // 1024,
            "rss_after_mib": kib("VmRSS:") // 1024}))
    finally:
        server.kill()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One long conversation through `POST /chat`: TURNS turns on one thread, each stream read
to its `response` event, one client. Prints the median turn of the first 50 turns and of
the last TAIL, so a cost that grows with the conversation shows as a rising median.

    palgraph serve  (on PORT, a fresh database)
    python3 bench/long_thread.py PORT [TURNS=400] [TAIL=50]

Read the server's CPU around it from /proc/PID/stat (utime + stime), as
benchmarks/palassist-cpu-budget.md does. Standard library only.
"""

import http.client
import json
import sys
import time
import uuid


def main() -> None:
    port = int(sys.argv[1])
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    tail = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    thread = str(uuid.uuid4())
    conn = http.client.HTTPConnection("127.0.0.1", port)
    times = []
    for i in range(turns):
        body = json.dumps({"message": "What are the capital requirements?", "thread_id": thread})
        t0 = time.perf_counter()
        conn.request("POST", "/chat", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        answered = False
        while True:
            line = resp.readline()
            if not line:
                break
            if line.startswith(b"data:") and b'"type":"response"' in line:
                answered = True
        resp.read()
        if not answered:
            sys.exit(f"turn {i} ended without a response")
        times.append(time.perf_counter() - t0)

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] * 1e3

    print(json.dumps({
        "turns": turns,
        "first50_median_ms": median(times[:50]),
        "last_median_ms": median(times[-tail:]),
    }))


if __name__ == "__main__":
    main()

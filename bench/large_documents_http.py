"""PalAssist chat turns over HTTP for a user whose library holds large documents, against a
user with only the five sample documents, on one running server (release build, offline
model). Standard library only.

    cargo build --release -p palgraph-app
    PALGRAPH_DB=/tmp/large.db PALGRAPH_API_KEYS=ksmall=small,kbig=big \
        target/release/palgraph serve &
    python3 bench/large_documents_http.py [--url http://127.0.0.1:8123] [--large 10]
        [--mib 7.5] [--rounds 4] [--skip-upload]

Both users get the five samples (nodes/samples); the large user also gets `--large`
handbooks of `--mib` MiB each, made of the evaluation library's documents
(graphs/eval/library/dev) one after the other. Then `--rounds` rounds of the same turns
(a question naming no document, one naming its document, a summary, a comparison, and a
follow-up on the first turn's thread), the two users alternating turn by turn; a turn is
timed from the request to the stream's terminal event. Prints the warm-up turns (the
first may analyse a quoted document again: the analyses memo holds about two handbooks),
each kind's median per user and the ratio, and the server's CPU time per turn (from /proc,
with `--pid`).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TURNS = [
    ("question", "What is the retention period for customer records?", False),
    ("named question", "What does the Incident Response Procedure say about notifying the regulator?", False),
    ("summary", "Summarise the AML/KYC policy", False),
    ("comparison", "Compare the 2023 and 2024 data retention policies", False),
    ("follow-up", "And what about backups?", True),
]


def request(url, key, method, path, body=None):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    data = json.dumps(body).encode() if body is not None else None
    headers = {"x-api-key": key}
    if data is not None:
        headers["content-type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    return conn, conn.getresponse()


def call(url, key, method, path, body=None):
    conn, resp = request(url, key, method, path, body)
    out = resp.read()
    conn.close()
    if resp.status >= 300:
        raise SystemExit(f"{method} {path}: {resp.status} {out[:300]!r}")
    return json.loads(out) if out else None


def chat(url, key, message, thread_id=None):
    """One turn: (seconds to the terminal event, its type, the thread id)."""
    body = {"message": message}
    if thread_id:
        body["thread_id"] = thread_id
    started = time.perf_counter()
    conn, resp = request(url, key, "POST", "/chat", body)
    if resp.status != 200:
        raise SystemExit(f"POST /chat: {resp.status} {resp.read()[:300]!r}")
    thread = resp.getheader("x-thread-id")
    end = None
    for raw in resp:
        line = raw.decode().rstrip("\r\n")
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("type") in ("response", "interrupt", "error", "cancelled"):
            end = event["type"]
            break
    took = time.perf_counter() - started
    conn.close()
    return took, end, thread


def samples():
    out = []
    for path in sorted((ROOT / "nodes" / "samples").glob("*.md")):
        text = path.read_text()
        first, _, rest = text.partition("\n")
        out.append((first.lstrip("# ").strip(), rest.strip()))
    return out


def handbooks(count, mib):
    originals = []
    for path in sorted((ROOT / "graphs" / "eval" / "library" / "dev").rglob("*.md")):
        text = path.read_text()
        first, _, rest = text.partition("\n")
        originals.append((first.lstrip("# ").strip() or path.stem, rest))
    size = int(mib * 1024 * 1024)
    nxt = 0
    for k in range(count):
        parts = [f"This handbook applies to Group Entity {k + 1} only.\n\n"]
        length = len(parts[0])
        while length < size:
            title, body = originals[nxt % len(originals)]
            part = nxt // len(originals) + 1
            nxt += 1
            chunk = f"# {title} (Part {part})\n\n{body}\n\n"
            parts.append(chunk)
            length += len(chunk)
        text = "".join(parts).encode()[:size].decode(errors="ignore")
        yield f"Group Entity {k + 1} Compliance Handbook", text


def cpu_secs(pid):
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8123")
    p.add_argument("--small-key", default="ksmall")
    p.add_argument("--big-key", default="kbig")
    p.add_argument("--large", type=int, default=10)
    p.add_argument("--mib", type=float, default=7.5)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--pid", type=int, default=0, help="the server's pid, for its CPU time")
    p.add_argument("--skip-upload", action="store_true")
    a = p.parse_args()

    if not a.skip_upload:
        for key in (a.small_key, a.big_key):
            if not call(a.url, key, "GET", "/documents"):
                for title, content in samples():
                    call(a.url, key, "POST", "/documents", {"title": title, "content": content})
        have = len(call(a.url, a.big_key, "GET", "/documents"))
        t = time.perf_counter()
        for title, content in list(handbooks(a.large, a.mib))[max(0, have - 5):]:
            call(a.url, a.big_key, "POST", "/documents", {"title": title, "content": content})
        print(f"uploads: {time.perf_counter() - t:.1f} s")

    users = {"samples": a.small_key, "large": a.big_key}
    # One warm-up round (the first turn over each library may read what no memo holds).
    for user, key in users.items():
        first, _, thread = chat(a.url, key, TURNS[0][1])
        then, _, _ = chat(a.url, key, TURNS[-1][1], thread)
        print(f"warm-up, {user}: {first * 1e3:.0f} ms, then {then * 1e3:.0f} ms")
    took = {(u, name): [] for u in users for name, _, _ in TURNS}
    cpu = {u: 0.0 for u in users}
    ends = {}
    for _ in range(a.rounds):
        threads = {}
        for name, say, follow in TURNS:
            for user, key in users.items():
                before = cpu_secs(a.pid)
                secs, end, thread = chat(a.url, key, say, threads.get(user) if follow else None)
                cpu[user] += cpu_secs(a.pid) - before
                threads.setdefault(user, thread)
                took[(user, name)].append(secs)
                ends[(user, name)] = end
    print(f"{'turn':16} {'samples ms':>11} {'large ms':>9} {'ratio':>6}  ends")
    totals = {u: 0.0 for u in users}
    for name, _, _ in TURNS:
        s = statistics.median(took[("samples", name)]) * 1e3
        l = statistics.median(took[("large", name)]) * 1e3
        totals["samples"] += s
        totals["large"] += l
        print(f"{name:16} {s:11.1f} {l:9.1f} {l / s:6.2f}  "
              f"{ends[('samples', name)]}/{ends[('large', name)]}")
    print(f"{'all':16} {totals['samples']:11.1f} {totals['large']:9.1f} "
          f"{totals['large'] / totals['samples']:6.2f}")
    if a.pid:
        n = a.rounds * len(TURNS)
        print(f"server CPU per turn: samples {cpu['samples'] / n * 1e3:.0f} ms, "
              f"large {cpu['large'] / n * 1e3:.0f} ms")


if __name__ == "__main__":
    main()

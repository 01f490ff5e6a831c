"""The server comparison: `palgraph serve` (Postgres, a fresh database) against the official
LangGraph Agent Server (`langgraph dev`, in-memory runtime) serving twin graphs, driven by the
same load client, interleaved A/B. Run it through compare.py:

    python3 bench/compare.py server [--quick] [--out DIR] [--rounds R] [--secs S] [--warm W]
        [--ns 1,8,32] [--graphs fanout,streaming] [--words K] [--twins DIR] [--skip-build]

- palgraph: `cargo build --release -p palgraph-app -p palgraph-bench`, then
  `target/release/palgraph serve` on database `servercmp_palgraph` (dropped and created at
  the start) with the offline LLM.
- LangGraph: the twins folder (default bench/langgraph-server) is copied to
  OUT/langgraph-server, a venv is made there with its pinned requirements.txt (PyPI), and
  `langgraph dev --no-reload --n-jobs-per-worker 32` serves the copy.
- The client: `target/release/palgraph-loadbench --drive` (see bench/src/bin/loadbench/
  drive.rs), one process per window: N clients, each turn a new thread and a run streamed
  with `stream_mode: ["values", "custom"]`. Each round runs every (graph, N) once on each
  server, back to back, the order alternating (AB, BA, ...), so both see the same machine.
- Per window: turns/s, first status (first `custom` event) and end of stream, server CPU
  (the process and its descendants) and RSS; for palgraph also the CPU of its Postgres
  backends and the bytes its tables grew by.
- Postgres: BENCH_PG_HOST/BENCH_PG_PORT/BENCH_PG_USER/BENCH_PG_PASSWORD as for the engine
  comparison.

Writes benchmarks/server-comparison.md and .json (`--quick`: server-comparison-quick.*,
labelled quick); working files (venv, logs, each window's JSON) stay in OUT (default
target/bench/server). Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "target" / "release"
DATABASE = "servercmp_palgraph"


def sh(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def pg_url(database: str) -> str:
    host = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
    port = os.environ.get("BENCH_PG_PORT", "5432")
    user = os.environ.get("BENCH_PG_USER", "postgres")
    password = os.environ.get("BENCH_PG_PASSWORD", "")
    auth = user + (f":{password}" if password else "")
    return f"postgres://{auth}@{host}:{port}/{database}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ok(url: str, proc: subprocess.Popen, log: Path, secs: float = 120) -> None:
    """Waits until GET url answers 200 (or the process dies)."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"the server exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    sys.exit(f"{url} did not answer in {secs:.0f} s; see {log}")


class Server:
    """A server under test: its process (a group of its own), base URL and how it is named."""

    def __init__(self, name: str, proc: subprocess.Popen, base: str, log: Path):
        self.name, self.proc, self.base, self.log = name, proc, base, log

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def tree_rss_kib(pid: int) -> int:
    """Resident memory of pid and its descendants, KiB."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d.name))
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def start_palgraph(out: Path) -> Server:
    sh([str(RELEASE / "palgraph-loadbench"), "--create-database", pg_url(DATABASE)])
    log = out / "palgraph-serve.log"
    env = dict(os.environ, PALGRAPH_PORT="0", DATABASE_URL=pg_url(DATABASE), RUST_LOG="warn")
    for k in ("OPENAI_API_KEY", "PALASSIST_OFFLINE_PACE_MS", "PALGRAPH_TEST_DATABASE_URL"):
        env.pop(k, None)
    proc = subprocess.Popen([str(RELEASE / "palgraph"), "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=log.open("w"), text=True, start_new_session=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("palgraph listening on "):
        proc.kill()
        sys.exit(f"palgraph serve printed {line!r}; see {log}")
    base = line.removeprefix("palgraph listening on ").strip()
    # Keep reading its stdout so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
    wait_ok(f"{base}/ok", proc, log)
    return Server("palgraph", proc, base, log)


def start_langgraph(twins: Path, out: Path) -> tuple[Server, dict]:
    work = out / "langgraph-server"
    app = work / "app"
    if app.exists():
        shutil.rmtree(app)
    app.mkdir(parents=True)
    for name in ("twins.py", "langgraph.json", "requirements.txt"):
        shutil.copy2(twins / name, app / name)
        (app / name).chmod(0o644)
    venv = work / ".venv"
    py = venv / "bin" / "python"
    if not py.exists():
        sh([sys.executable, "-m", "venv", str(venv)])
    sh([str(py), "-m", "pip", "install", "-q", "-r", str(app / "requirements.txt")])
    listed = subprocess.run([str(py), "-m", "pip", "list", "--format", "json"], capture_output=True,
                            text=True, check=True).stdout
    versions = {p["name"]: p["version"] for p in json.loads(listed)
                if p["name"].startswith(("langgraph", "langchain-core"))}
    port = free_port()
    log = out / "langgraph-dev.log"
    env = dict(os.environ, LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false",
               LANGCHAIN_TRACING_V2="false", LOG_LEVEL="WARNING")
    cmd = [str(venv / "bin" / "langgraph"), "dev", "--port", str(port), "--host", "127.0.0.1",
           "--no-browser", "--no-reload", "--n-jobs-per-worker", "32"]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=app, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    wait_ok(f"{base}/ok", proc, log)
    return Server("langgraph", proc, base, log), versions


def drive(server: Server, graph: str, n: int, secs: float, warm: float, words: int) -> dict:
    cmd = [str(RELEASE / "palgraph-loadbench"), "--drive", server.base, "--graph", graph, "--n", str(n),
           "--secs", str(secs), "--warm", str(warm), "--words", str(words), "--pid", str(server.proc.pid)]
    if server.name == "palgraph":
        cmd += ["--database-url", pg_url(DATABASE)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(f"[{server.name}]" + r.stderr)
    if r.returncode != 0:
        sys.exit(f"the load client failed against {server.name}: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def pct(v: list[float], q: float) -> float | None:
    if not v:
        return None
    s = sorted(v)
    return s[round((len(s) - 1) * q)]


def aggregate(windows: list[dict]) -> dict:
    """One (server, graph, N) over its windows: times pooled, CPU and bytes summed per turn."""
    turns = sum(w["turns"] for w in windows)
    secs = sum(w["secs"] for w in windows)
    first = [x for w in windows for x in w["first_status_ms"]]
    end = [x for w in windows for x in w["end_ms"]]

    def per_turn(key: str, scale: float = 1.0) -> float | None:
        if turns == 0 or any(key not in w for w in windows):
            return None
        return sum(w[key] for w in windows) * scale / turns

    return {
        "windows": len(windows),
        "turns": turns,
        "errors": sum(w["errors"] for w in windows),
        "turns_per_s": turns / secs if secs else None,
        "turns_per_s_by_window": [w["turns_per_s"] for w in windows],
        "first_status_ms_p50": pct(first, 0.5),
        "first_status_ms_p99": pct(first, 0.99),
        "end_ms_p50": pct(end, 0.5),
        "end_ms_p99": pct(end, 0.99),
        "server_cpu_ms_per_turn": per_turn("server_cpu_s", 1e3),
        "server_cpu_cores": sum(w["server_cpu_s"] for w in windows) / secs if secs else None,
        "postgres_cpu_ms_per_turn": per_turn("postgres_cpu_s", 1e3),
        "postgres_all_cpu_ms_per_turn": per_turn("postgres_all_cpu_s", 1e3),
        "server_rss_kib_max": max(w["server_rss_kib"] for w in windows),
        "event_bytes_per_turn": per_turn("event_bytes"),
        "run_bytes_per_turn": per_turn("run_bytes"),
        "checkpoint_bytes_per_turn": per_turn("checkpoint_bytes"),
    }


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.{digits}f}"


def ratio(ours: float | None, theirs: float | None, higher_is_better: bool) -> str:
    """How many times better palgraph is (>1: palgraph better)."""
    if not ours or not theirs:
        return "n/a"
    r = ours / theirs if higher_is_better else theirs / ours
    return f"{r:,.1f}x"


def table(results: dict, graphs: list[str], ns: list[int]) -> list[str]:
    out = ["| graph | N | measurement | palgraph | LangGraph | palgraph is |", "|---|---:|---|---:|---:|---:|"]
    for g in graphs:
        for n in ns:
            p, l = results["palgraph"][g][str(n)], results["langgraph"][g][str(n)]
            p_cpu = None
            if p["server_cpu_ms_per_turn"] is not None and p["postgres_cpu_ms_per_turn"] is not None:
                p_cpu = p["server_cpu_ms_per_turn"] + p["postgres_cpu_ms_per_turn"]
            stored = None
            if p["event_bytes_per_turn"] is not None:
                stored = p["event_bytes_per_turn"] + p["run_bytes_per_turn"] + p["checkpoint_bytes_per_turn"]
            rows = [
                ("turns/s (higher is better)", p["turns_per_s"], l["turns_per_s"], True),
                ("first status p50, ms", p["first_status_ms_p50"], l["first_status_ms_p50"], False),
                ("first status p99, ms", p["first_status_ms_p99"], l["first_status_ms_p99"], False),
                ("end of stream p50, ms", p["end_ms_p50"], l["end_ms_p50"], False),
                ("end of stream p99, ms", p["end_ms_p99"], l["end_ms_p99"], False),
                ("server CPU per turn, ms", p["server_cpu_ms_per_turn"], l["server_cpu_ms_per_turn"], False),
                ("server + its Postgres backends CPU per turn, ms", p_cpu, l["server_cpu_ms_per_turn"], False),
                ("server CPU, cores busy", p["server_cpu_cores"], l["server_cpu_cores"], None),
                ("server RSS (max of the windows), MiB", p["server_rss_kib_max"] / 1024,
                 l["server_rss_kib_max"] / 1024, False),
            ]
            for label, ours, theirs, higher in rows:
                better = "" if higher is None else ratio(ours, theirs, higher)
                out.append(f"| {g} | {n} | {label} | {fmt(ours, 2 if higher is None else 1)} | "
                           f"{fmt(theirs, 2 if higher is None else 1)} | {better} |")
            out.append(f"| {g} | {n} | Postgres backends CPU per turn, ms (all postgres processes) | "
                       f"{fmt(p['postgres_cpu_ms_per_turn'])} ({fmt(p['postgres_all_cpu_ms_per_turn'])}) "
                       "| in memory | |")
            out.append(f"| {g} | {n} | stored bytes per turn: run events / runs+threads / checkpoints | "
                       f"{fmt(stored)}: {fmt(p['event_bytes_per_turn'])} / {fmt(p['run_bytes_per_turn'])} / "
                       f"{fmt(p['checkpoint_bytes_per_turn'])} | in memory | |")
            out.append(f"| {g} | {n} | turns counted (errors) | {p['turns']} ({p['errors']}) | "
                       f"{l['turns']} ({l['errors']}) | |")
    return out


def postgres_version() -> str:
    try:
        return subprocess.run(["psql", pg_url("postgres"), "-Atc", "SHOW server_version"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (no psql)"


def environment(meta: dict) -> list[str]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem_kib = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("MemTotal")), 0)
    mem = f"{mem_kib / 1024 / 1024:.1f} GiB RAM"
    return [
        f"- Machine: {os.cpu_count()} cores, {cpu}, {mem}; kernel {platform.release()}; "
        f"the load client runs on the same machine",
        f"- Postgres {meta['postgres']} (palgraph's database `{DATABASE}`, fresh at the start)",
        f"- palgraph: `target/release/palgraph serve` at {meta['palgraph_rev']}, "
        f"{meta['rustc']}; offline LLM; RUST_LOG=warn",
        "- LangGraph: `langgraph dev --no-reload --n-jobs-per-worker 32` (in-memory runtime) on "
        "bench/langgraph-server/twins.py; " + ", ".join(f"{k}=={v}" for k, v in sorted(meta["langgraph"].items()))
        + f"; Python {meta['python']}",
        "- Load average (1, 5, 15 min) before the build: "
        + ", ".join(f"{x:.1f}" for x in meta["loadavg_before_build"]) + "; at the end of the load: "
        + ", ".join(f"{x:.1f}" for x in meta["loadavg_at_end"])
        + " (on a quiet machine only this run loads it)",
        f"- Windows: {meta['rounds']} round(s) of {meta['secs']} s measured after {meta['warm']} s of the same "
        f"load, per server, graph and N; streaming: {meta['words']} words, no delay",
    ]


def run(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="compare.py server", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short windows, one round (smoke run)")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "bench" / "server")
    ap.add_argument("--twins", type=Path, default=ROOT / "bench" / "langgraph-server")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick 1)")
    ap.add_argument("--secs", type=float, default=None, help="measured seconds per window (default 10; --quick 2)")
    ap.add_argument("--warm", type=float, default=None, help="warm-up seconds per window (default 2; --quick 1)")
    ap.add_argument("--ns", default="1,8,32")
    ap.add_argument("--graphs", default="fanout,streaming")
    ap.add_argument("--words", type=int, default=100, help="words per streaming answer")
    ap.add_argument("--skip-build", action="store_true", help="use the release binaries as they are")
    a = ap.parse_args(argv)
    rounds = a.rounds or (1 if a.quick else 3)
    secs = a.secs or (2.0 if a.quick else 10.0)
    warm = a.warm if a.warm is not None else (1.0 if a.quick else 2.0)
    ns = [int(x) for x in a.ns.split(",")]
    graphs = [g.strip() for g in a.graphs.split(",")]
    a.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    if not a.skip_build:
        sh(["cargo", "build", "--release", "-q", "-p", "palgraph-app", "-p", "palgraph-bench"], cwd=ROOT)
    servers: list[Server] = []
    try:
        lg, lg_versions = start_langgraph(a.twins, a.out)
        servers.append(lg)
        pal = start_palgraph(a.out)
        servers.append(pal)
        time.sleep(2)
        idle = {s.name: tree_rss_kib(s.proc.pid) for s in servers}
        print(f"idle RSS: {idle}", flush=True)
        # One untimed window each, so imports, caches and pools are warm.
        for g in graphs:
            for s in servers:
                drive(s, g, max(ns), 1.0, 0.5, a.words)
        windows: list[dict] = []
        k = 0
        for r in range(rounds):
            for g in graphs:
                for n in ns:
                    order = servers if k % 2 == 0 else list(reversed(servers))
                    k += 1
                    for s in order:
                        w = drive(s, g, n, secs, warm, a.words)
                        w.update(server=s.name, round=r)
                        windows.append(w)
        after = {s.name: tree_rss_kib(s.proc.pid) for s in servers}
        load_after = os.getloadavg()
    finally:
        for s in servers:
            s.stop()
    results: dict = {s: {g: {} for g in graphs} for s in ("palgraph", "langgraph")}
    for s in ("palgraph", "langgraph"):
        for g in graphs:
            for n in ns:
                ws = [w for w in windows if w["server"] == s and w["graph"] == g and w["n"] == n]
                results[s][g][str(n)] = aggregate(ws)
    meta = {
        "command": "python3 bench/compare.py server " + " ".join(argv),
        "started": started.isoformat(),
        "quick": a.quick,
        "rounds": rounds, "secs": secs, "warm": warm, "words": a.words, "ns": ns, "graphs": graphs,
        "postgres": postgres_version(),
        "palgraph_rev": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                       text=True).stdout.strip(),
        "rustc": subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip(),
        "langgraph": lg_versions,
        "python": platform.python_version(),
        "idle_rss_kib": idle,
        "after_rss_kib": after,
        "loadavg_before_build": load_before,
        "loadavg_at_end": load_after,
    }
    label = " (QUICK: short windows, one round; a smoke run, not figures)" if a.quick else ""
    md = [
        f"# palgraph's server against LangGraph's Agent Server{label}",
        "",
        f"Run {started:%Y-%m-%d %H:%M} UTC with `{meta['command'].strip()}`: `palgraph serve` (Postgres) and the "
        "official `langgraph dev` (in-memory runtime) serving twins of the same graphs, driven by the same client "
        "(`palgraph-loadbench --drive`: N clients, each turn a new thread and a run streamed with "
        "`stream_mode: [\"values\", \"custom\"]`), in alternating windows. `palgraph is` says how many times "
        "better palgraph is; below 1 it is worse.",
        "",
        *table(results, graphs, ns),
        "",
        f"Idle RSS: palgraph {idle['palgraph'] / 1024:,.0f} MiB, LangGraph {idle['langgraph'] / 1024:,.0f} MiB; "
        f"after the load: palgraph {after['palgraph'] / 1024:,.0f} MiB, "
        f"LangGraph {after['langgraph'] / 1024:,.0f} MiB.",
        "",
        "## Notes",
        "",
        "- First status: from the stream request to the first `custom` event (the first node's status line); "
        "end of stream: to the end of the response. Percentiles pool every turn of every window; turns/s is all "
        "turns over all measured seconds; a turn counts in the window it ends in. Thread creation "
        "(`POST /threads`) is part of each turn but not of these times.",
        "- Server CPU: the server process and its descendants (/proc). palgraph's Postgres CPU is that of the "
        "backends connected to its database (sampled at the window's ends); in brackets every postgres process "
        "of the machine (WAL writer and checkpointer included, and anyone else's load). LangGraph's in-memory "
        "runtime has no database: it keeps state in process memory and pickles it to disk every 10 s, so it "
        "does not make a turn durable.",
        "- The in-memory runtime's scheduler sleeps 0.5 s whenever it found no run to start "
        "(`langgraph_runtime_inmem.ops.Runs.next`), so a run waits for that poll: about 1 s per turn at any of "
        "these N, and its turns/s is N per second or so while its CPU (`cores busy`) stays low; it is held "
        "back by the poll, not saturated. Its turns end in batches about 1 s apart, so a short window "
        "(`--quick`) counts one batch more or less: its turns/s there is coarse.",
        "- Stored bytes: growth of palgraph's tables (with indexes and TOAST) over the window, per turn; pages "
        "are allocated 8 KiB at a time, so short windows are coarse.",
        "- Both servers run all the time (the idle one polls); the client is on the same machine.",
        "",
        "## Environment",
        "",
        *environment(meta),
        "",
    ]
    suffix = "-quick" if a.quick else ""
    dest = ROOT / "benchmarks"
    (dest / f"server-comparison{suffix}.md").write_text("\n".join(md))
    raw = {"meta": meta, "results": results,
           "windows": [{k: v for k, v in w.items() if k not in ("first_status_ms", "end_ms")} for w in windows]}
    (dest / f"server-comparison{suffix}.json").write_text(json.dumps(raw, indent=1))
    (a.out / "windows.json").write_text(json.dumps(windows))
    print("\n".join(md))
    print(f"wrote {dest / f'server-comparison{suffix}.md'} and .json")

#!/usr/bin/env python3
"""Runs palgraph's benchmark and the LangGraph reference one after the other against the
same Postgres, then writes one table of both with the ratio for every row.

    python3 bench/compare.py [--quick] [--langgraph DIR] [--out DIR] [--skip-langgraph FILE]

- palgraph: `cargo run --release -p palgraph-bench -- --out OUT` (a fresh schema).
- LangGraph: bench.py and requirements.txt from DIR (default ../shared/bench/langgraph) are
  copied to OUT/langgraph, a venv is made there with the pinned requirements (PyPI), and
  bench.py runs against database `bench` (created if missing) on the same server.
- Postgres: BENCH_PG_HOST/BENCH_PG_PORT/BENCH_PG_USER (default 127.0.0.1, 5432, postgres,
  trust auth as on the CI machine). Set BENCH_PG_PASSWORD if yours needs one.

Writes OUT/comparison.md (default OUT: target/bench). `--skip-langgraph FILE` reuses a
LangGraph results.json instead of running it again. Standard library only.

    python3 bench/compare.py server [--quick] [...]

runs the server comparison instead: `palgraph serve` against the official `langgraph dev`
on twin graphs, the same load client, interleaved A/B (see bench/servercmp.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def pg_env() -> dict[str, str]:
    return {
        "host": os.environ.get("BENCH_PG_HOST", "127.0.0.1"),
        "port": os.environ.get("BENCH_PG_PORT", "5432"),
        "user": os.environ.get("BENCH_PG_USER", "postgres"),
        "password": os.environ.get("BENCH_PG_PASSWORD", ""),
    }


def run_palgraph(out: Path, quick: bool) -> dict:
    pg = pg_env()
    auth = pg["user"] + (f":{pg['password']}" if pg["password"] else "")
    env = dict(os.environ)
    env["BENCH_DATABASE_URL"] = f"postgres://{auth}@{pg['host']}:{pg['port']}/postgres"
    env.pop("PALGRAPH_TEST_DATABASE_URL", None)
    cmd = ["cargo", "run", "--release", "-q", "-p", "palgraph-bench", "--", "--out", str(out)]
    if quick:
        cmd.append("--quick")
    sh(cmd, cwd=ROOT, env=env)
    return json.loads((out / "palgraph-results.json").read_text())


def ensure_bench_database(venv_python: Path) -> None:
    """Creates database `bench` through psycopg (installed in the venv) when missing."""
    pg = pg_env()
    code = (
        "import psycopg,sys\n"
        f"c=psycopg.connect(host={pg['host']!r},port={pg['port']!r},user={pg['user']!r},"
        f"password={pg['password']!r} or None,dbname='postgres',autocommit=True)\n"
        "if not c.execute(\"SELECT 1 FROM pg_database WHERE datname='bench'\").fetchone():\n"
        "    c.execute('CREATE DATABASE bench')\n"
    )
    sh([str(venv_python), "-c", code])


def run_langgraph(src: Path, out: Path, quick: bool) -> dict:
    if not (src / "bench.py").exists():
        sys.exit(f"no LangGraph reference at {src} (pass --langgraph DIR)")
    work = out / "langgraph"
    work.mkdir(parents=True, exist_ok=True)
    for name in ("bench.py", "requirements.txt"):
        shutil.copy2(src / name, work / name)
    venv = work / ".venv"
    py = venv / "bin" / "python"
    if not py.exists():
        sh([sys.executable, "-m", "venv", str(venv)])
    sh([str(py), "-m", "pip", "install", "-q", "-r", str(work / "requirements.txt")])
    ensure_bench_database(py)
    pg = pg_env()
    dsn = f"host={pg['host']} port={pg['port']} dbname=bench user={pg['user']} sslmode=disable"
    if pg["password"]:
        dsn += f" password={pg['password']}"
    env = dict(os.environ, BENCH_PG_DSN=dsn)
    cmd = [str(py), "bench.py"] + (["--quick"] if quick else [])
    sh(cmd, cwd=work, env=env)
    return json.loads((work / "results.json").read_text())


def median(res: dict, key: str) -> float | None:
    f = res.get("figures", {}).get(key)
    if not f:
        return None
    v = f.get("median")
    return None if v is None or v != v else float(v)


def note(res: dict, key: str, field: str) -> float | None:
    v = res.get("figures", {}).get(key, {}).get(field)
    return float(v) if isinstance(v, (int, float)) else None


def fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "n/a"
    if unit == "turns/s":
        return f"{x:,.0f}"
    if unit == "B":
        return f"{x:,.0f}"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def ratio(ours: float | None, theirs: float | None, higher_is_better: bool) -> str:
    """How many times better palgraph is (>1: palgraph better)."""
    if not ours or not theirs:
        return "n/a"
    r = ours / theirs if higher_is_better else theirs / ours
    return f"{r:,.1f}x"


def lg_growth(lg: dict, turn: int, field: str) -> float | None:
    for row in lg.get("extra", {}).get("growth", {}).get("rows", []):
        if row.get("turn") == turn:
            return row.get(field)
    return None


def pal_growth(pal: dict, turn: int, field: str) -> float | None:
    for row in pal.get("extra", {}).get("growth", {}).get("per_mark", []):
        if row.get("turn") == turn:
            return row.get(field)
    return None


def best_lg_tput(lg: dict, n: int) -> tuple[float | None, str]:
    both = [(median(lg, f"h_tput_N{n}"), "one saver"), (median(lg, f"h_tput_persaver_N{n}"), "saver per worker")]
    both = [b for b in both if b[0] is not None]
    return max(both) if both else (None, "")


def table(pal: dict, lg: dict) -> tuple[list[str], list[str]]:
    rows: list[tuple[str, float | None, float | None, str, bool]] = []

    def same(key: str, label: str, unit: str = "us", higher: bool = False, lg_key: str | None = None):
        rows.append((label, median(pal, key), median(lg, lg_key or key), unit, higher))

    same("a_inmem_turn", "in-memory checkpointer, per turn")
    same("b_pg_turn", "Postgres, per turn")
    same("b_pg_per_checkpoint", "Postgres, per checkpoint")
    same("b_pg_get_state", "Postgres, get_state of a 1-turn thread")
    same("d_sqlite_turn", "SQLite (WAL, synchronous=FULL), per turn")
    same("d_sqlite_per_checkpoint", "SQLite, per checkpoint")
    same("e_hitl_run_to_interrupt", "interrupt: run to the interrupt")
    same("e_hitl_resume_to_end", "interrupt: resume to the end")
    same("e_hitl_round_trip", "interrupt round trip")
    for m in (1, 10, 50, 100, 200, 1000):
        same(f"f_growth_turn_{m}", f"growth: time of turn #{m}")
    for m in (1, 10, 50, 100, 200, 1000):
        rows.append((f"growth: raw payload written by turn #{m}", pal_growth(pal, m, "payload_bytes"),
                     lg_growth(lg, m, "raw_payload_bytes_turn"), "B", False))
    for m in (1, 10, 50, 100, 200, 1000):
        rows.append((f"growth: WAL written by turn #{m}", pal_growth(pal, m, "wal_bytes"),
                     lg_growth(lg, m, "wal_bytes_turn"), "B", False))
    same("g_floor_insert_sc_on", "floor: one bare INSERT + COMMIT")
    same("g_floor_turn_sc_on", "floor: a turn's commits as bare INSERTs (palgraph 6, LangGraph 13)")
    same("g_select1_rtt", "SELECT 1 round trip")
    for n in (1, 8, 32):
        theirs, how = best_lg_tput(lg, n)
        rows.append((f"throughput, N={n} conversations (LangGraph: best of {how or 'n/a'})",
                     median(pal, f"h_tput_N{n}"), theirs, "turns/s", True))
    for n in (1, 8, 32):
        same(f"h_latency_N{n}", f"latency of a turn under load, N={n}")
    shapes = (("send100", "Send fan-out over 100 items"), ("sub2", "two-level subgraph turn"))
    for name, label in shapes:
        same(f"i_{name}_mem_turn", f"{label}, in memory, per turn")
        same(f"i_{name}_pg_turn", f"{label}, Postgres, per turn")
        for field, what in (("payload_bytes_per_turn", "payload"), ("wal_bytes_per_turn", "WAL")):
            rows.append((f"{label}, Postgres: {what} written per turn", note(pal, f"i_{name}_pg_turn", field),
                         note(lg, f"i_{name}_pg_turn", field), "B", False))

    out = ["| measurement | unit | palgraph | LangGraph | palgraph is |", "|---|---|---:|---:|---:|"]
    for label, ours, theirs, unit, higher in rows:
        better = "higher" if higher else "lower"
        out.append(f"| {label} | {unit} ({better} is better) | {fmt(ours, unit)} | {fmt(theirs, unit)} "
                   f"| {ratio(ours, theirs, higher)} |")

    # palgraph against its own targets
    targets = []

    def target(label: str, value: float | None, goal: str, ok: bool | None):
        mark = "n/a" if ok is None else ("met" if ok else "MISSED")
        targets.append(f"| {label} | {'n/a' if value is None else f'{value:,.2f}'} | {goal} | {mark} |")

    a_p, a_l = median(pal, "a_inmem_turn"), median(lg, "a_inmem_turn")
    v = a_l / a_p if a_p and a_l else None
    target("in-memory: LangGraph InMemorySaver turn / palgraph turn", v, ">= 100", None if v is None else v >= 100)
    b_p, floor = median(pal, "b_pg_turn"), median(pal, "g_floor_turn_sc_on")
    v = b_p / floor if b_p and floor else None
    target("Postgres: palgraph turn / palgraph floor (same commits, bare INSERTs)", v, "<= 1.2",
           None if v is None else v <= 1.2)
    v = median(pal, "g_turn_over_floor_paired")
    target("Postgres: the same, turn and floor measured in alternating pairs (median of ratios)", v, "<= 1.2",
           None if v is None else v <= 1.2)
    b_l = median(lg, "b_pg_turn")
    v = b_l / b_p if b_p and b_l else None
    target("Postgres: LangGraph PostgresSaver turn / palgraph turn", v, "faster (> 1)", None if v is None else v > 1)
    t1, tn = median(pal, "f_growth_turn_1"), median(pal, "f_growth_turn_1000")
    v = tn / t1 if t1 and tn else None
    target("growth: time of turn 1000 / turn 1", v, "<= 1.2", None if v is None else v <= 1.2)
    p1, pn = pal_growth(pal, 1, "payload_bytes"), pal_growth(pal, 1000, "payload_bytes")
    v = pn / p1 if p1 and pn else None
    target("growth: bytes written by turn 1000 / turn 1", v, "<= 1.2", None if v is None else v <= 1.2)
    h_p = median(pal, "h_tput_N32")
    h_l = max((median(lg, k) or 0 for k in ("h_tput_N1", "h_tput_N8", "h_tput_N32",
                                                "h_tput_persaver_N8", "h_tput_persaver_N32")), default=0)
    v = h_p / h_l if h_p and h_l else None
    target("throughput: palgraph N=32 / LangGraph's best turns/s", v, ">= 10", None if v is None else v >= 10)
    head = ["| target | value | goal | |", "|---|---:|---|---|"]
    return out, head + targets


def environment(pal: dict, lg: dict) -> list[str]:
    pm = pal.get("meta", {})
    lm = lg.get("meta", {})
    lines = [
        f"- Machine: {pm.get('machine', {}).get('nproc')} cores, {pm.get('machine', {}).get('cpu')}, "
        f"{pm.get('machine', {}).get('mem', '').replace('MemTotal:', '').strip()}; kernel {platform.release()}",
        "- Postgres (as palgraph-bench read it): "
        + ", ".join(f"{k}={v}" for k, v in sorted((pm.get("postgres") or {}).items())),
        f"- palgraph: `{pm.get('command')}` ({pm.get('runtime_s', 0):.0f} s), rustc "
        + subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip(),
    ]
    versions = lm.get("versions") or lm.get("packages")
    lines.append(f"- LangGraph: `{lm.get('command', 'bench.py')}`; "
                 + (", ".join(f"{k}=={v}" for k, v in versions.items()) if isinstance(versions, dict)
                    else "pinned requirements.txt of the reference"))
    return lines


def main() -> None:
    if sys.argv[1:2] == ["server"]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import servercmp

        servercmp.run(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small samples (smoke run)")
    ap.add_argument("--langgraph", type=Path, default=ROOT.parent / "shared" / "bench" / "langgraph")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "bench")
    ap.add_argument("--skip-langgraph", type=Path, default=None, help="reuse this LangGraph results.json")
    ap.add_argument("--skip-palgraph", type=Path, default=None, help="reuse this palgraph-results.json")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
    pal = json.loads(a.skip_palgraph.read_text()) if a.skip_palgraph else run_palgraph(a.out, a.quick)
    lg = json.loads(a.skip_langgraph.read_text()) if a.skip_langgraph else run_langgraph(a.langgraph, a.out, a.quick)
    rows, targets = table(pal, lg)
    md = [
        "# palgraph against LangGraph, one run",
        "",
        f"Run {started:%Y-%m-%d %H:%M} UTC with `python3 bench/compare.py{' --quick' if a.quick else ''}`: "
        "palgraph's benchmark (`bench/`) and then the LangGraph 1.2 reference (same graph shape, same stub "
        "nodes, same state fields) against the same Postgres. Medians; times in microseconds. "
        "`palgraph is` says how many times faster (or higher throughput) palgraph is; below 1 it is slower.",
        "",
        *rows,
        "",
        "## palgraph against its targets",
        "",
        *targets,
        "",
        "## Environment",
        "",
        *environment(pal, lg),
        "",
    ]
    path = a.out / "comparison.md"
    path.write_text("\n".join(md))
    print("\n".join(md))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

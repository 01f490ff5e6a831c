#!/usr/bin/env python3
"""Writes the databases of tests/upgrade.rs with a palgraph binary: one SQLite file and one
Postgres schema, each holding what a running deployment holds. Thread `paused` is the
`approval` graph waiting at its prompt, thread `answered` a PalAssist turn with its answer,
and the store has an item under ("notes",). The SQLite file is written whole
(`sqlite.db`); the Postgres schema as a plain dump with INSERTs (`postgres.dump`), its schema
named `palgraph_release`.

    python3 tests/upgrade/write_databases.py target/release/palgraph [--postgres URL]
"""

import argparse
import http.client
import json
import os
import sqlite3
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "palgraph_release"
PAUSED = "0193a9c4-0000-7000-8000-00000000000a"
ANSWERED = "0193a9c4-0000-7000-8000-00000000000b"


def serve(binary, env):
    env = dict(os.environ, PALGRAPH_PORT="0", RUST_LOG="error", **env)
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.PIPE)
    host, port = proc.stdout.readline().decode().split()[-1].removeprefix("http://").split(":")
    return proc, host, int(port)


def request(host, port, method, path, body):
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request(method, path, json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    assert r.status < 300, (path, r.status, data)
    return data


def write(binary, env):
    proc, host, port = serve(binary, env)
    try:
        paused = request(host, port, "POST", "/chat", {
            "thread_id": PAUSED, "graph_id": "approval", "message": "Write about otters"})
        assert '"type":"interrupt"' in paused, paused
        answered = request(host, port, "POST", "/chat", {
            "thread_id": ANSWERED,
            "message": "What is the retention period for customer records?"})
        assert '"type":"response"' in answered, answered
        request(host, port, "PUT", "/store/items", {
            "namespace": ["notes"], "key": "kept", "value": {"text": "written before"}})
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()

    path = os.path.join(tempfile.mkdtemp(), "release.db")
    write(args.binary, {"PALGRAPH_DB": path})
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("VACUUM INTO ?", (os.path.join(HERE, "sqlite.db.new"),))
    db.close()
    os.replace(os.path.join(HERE, "sqlite.db.new"), os.path.join(HERE, "sqlite.db"))

    subprocess.run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}"], check=True)
    sep = "&" if "?" in args.postgres else "?"
    write(args.binary, {"DATABASE_URL": f"{args.postgres}{sep}options=-csearch_path%3D{SCHEMA}"})
    dump = subprocess.run(["pg_dump", args.postgres, "--schema", SCHEMA, "--inserts",
                           "--no-owner", "--no-privileges", "--no-comments"],
                          check=True, capture_output=True, text=True).stdout
    # pg_dump's psql meta-commands (`\restrict`) are not SQL: the test runs the dump as SQL.
    dump = "".join(l for l in dump.splitlines(keepends=True) if not l.startswith("\\"))
    with open(os.path.join(HERE, "postgres.dump"), "w") as f:
        f.write(dump)
    subprocess.run(["psql", args.postgres, "-qc", f"DROP SCHEMA {SCHEMA} CASCADE"], check=True)


if __name__ == "__main__":
    main()

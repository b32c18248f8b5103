"""Store management as a user runs it: the `mnem` tool on a store of N ADK events, beside
SQLite (the store a user would otherwise pick) holding the same events in one table.

    . scripts/env
    cargo build --release --bin mnem --example bench_indexes
    $CARGO_TARGET_DIR/release/examples/bench_indexes adk-cold --n 100000 --keep --out /tmp/mnem-admin
    python3 bench/admin.py --mnem $CARGO_TARGET_DIR/release/mnem --store /tmp/mnem-admin/adk-store \
        --corpus /tmp/mnem-admin/corpus.jsonl

Each figure is one run of the command as a process (wall time, and the child's peak RSS from
wait4). mnem: `export` (JSON Lines to a file), `import` of that file into a new store, `check`,
`backup` and `forget` of the namespace (on the backup, so the source survives), with the
store's size before and after forgetting. SQLite (Python's sqlite3, WAL mode, one table of
the events' JSON and an FTS5 index of their texts): `.dump`-like export (iterdump), a backup (`Connection.backup`),
`PRAGMA integrity_check`, and `DELETE` of the user (rows and FTS5 entries) followed by `VACUUM`. The last line is a
JSON summary.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time


def run(argv, stdin=None, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    err = p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed: {err}")
    return dt, usage.ru_maxrss // 1024


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnem", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", default="/tmp/mnem-admin-work")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    out = {}

    exp = os.path.join(a.work, "export.jsonl")
    with open(exp, "wb") as f:
        out["export_s"], out["export_rss_mib"] = run([a.mnem, "export", a.store], stdout=f)
    out["export_bytes"] = os.path.getsize(exp)
    with open(exp, "rb") as f:
        out["import_s"], out["import_rss_mib"] = run([a.mnem, "import", os.path.join(a.work, "imported")], stdin=f)
    out["check_s"], out["check_rss_mib"] = run([a.mnem, "check", a.store])
    bk = os.path.join(a.work, "backup")
    out["backup_s"], _ = run([a.mnem, "backup", a.store, bk])
    out["store_bytes"] = du(bk)
    # `namespaces --json` prints one JSON object per namespace, one per line.
    first = json.loads(subprocess.check_output([a.mnem, "namespaces", "--json", bk]).splitlines()[0])
    out["forget_s"], _ = run([a.mnem, "forget", bk, "--app", first["app_name"], "--user", first["user_id"]])
    out["store_bytes_after_forget"] = du(bk)

    with open(exp) as f:
        n = sum(1 for line in f if '"type":"episode"' in line)
    db_path = os.path.join(a.work, "events.sqlite")
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE events(app TEXT, user TEXT, id TEXT, session TEXT, event TEXT)")
    # Full-text search over the same texts, as mnem indexes them (unicode61, SQLite's default).
    db.execute("CREATE VIRTUAL TABLE events_fts USING fts5(app UNINDEXED, user UNINDEXED, text)")
    with open(a.corpus) as f:
        rows = []
        for i, line in enumerate(f):
            if i >= n:
                break
            ev = json.loads(line)
            text = " ".join(p.get("text", "") for p in (ev.get("content") or {}).get("parts", []))
            rows.append(("bench", "user", ev["id"], ev.get("session_id"), line, text))

    def insert():
        for r in rows:
            db.execute("INSERT INTO events VALUES (?,?,?,?,?)", r[:5])
            db.execute("INSERT INTO events_fts VALUES (?,?,?)", (r[0], r[1], r[5]))
        db.commit()

    out["sqlite_insert_s"] = timed(insert)
    dump = os.path.join(a.work, "dump.sql")

    def dump_all():
        with open(dump, "w") as f:
            for line in db.iterdump():
                f.write(line + "\n")

    out["sqlite_export_s"] = timed(dump_all)
    out["sqlite_backup_s"] = timed(lambda: db.backup(sqlite3.connect(os.path.join(a.work, "backup.sqlite"))))
    out["sqlite_check_s"] = timed(lambda: db.execute("PRAGMA integrity_check").fetchall())
    out["sqlite_forget_s"] = timed(
        lambda: (
            db.execute("DELETE FROM events_fts WHERE app=? AND user=?", ("bench", "user")),
            db.execute("DELETE FROM events WHERE app=? AND user=?", ("bench", "user")),
            db.commit(),
            db.execute("VACUUM"),
        )
    )
    out["episodes"] = n
    for k, v in out.items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()

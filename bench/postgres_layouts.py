"""What the PostgreSQL backend's table layout costs its writers: the index rows of a real
ingest inserted again, by four processes at once, into tables that differ only in their
namespace column and primary key.

    /var/cache/mnem/venv/bin/python bench/postgres.py --server "$MNEM_PG_URI" \\
        --corpus /tmp/pgbench-corpus.jsonl --n 100000 --phases ingest
    /var/cache/mnem/venv/bin/python bench/postgres_layouts.py [--rows 1200000] [--rounds 2]

The rows are those of the `index_keys` table that `bench/postgres.py --phases ingest` leaves
in the schema `pgbench_ingest_mnem` (keyword and ADK postings of four namespaces): `--rows`
of them, the same at every run (ordered by the MD5 of the key), shuffled once (a write's
postings land all over the key space, as they do), and
cut into statements of 900 rows (the postings of about one call of 20 events), each its own
transaction, dealt to four writer processes. Every layout gets the same rows in the same
statements; the layouts take turns, `--rounds` times. Layouts:

- `shipped`: `(ns bytea, key bytea, value bytea)`, primary key `(ns, key) INCLUDE (value)`,
  `ns` the namespace prefix that `key` starts with (what mnem creates);
- `suffix`: the same, `key` without the namespace prefix;
- `int8`: `ns` a 64-bit digest of the namespace prefix (first 8 bytes of its MD5), `key`
  whole;
- `key_ns`: primary key `(key, ns)`;
- `key`: primary key `(key)` alone (not distributable by namespace: a bound).

Prints, per layout and round, rows per second and the table's and index's sizes, then one
JSON line of the medians.
"""
import argparse
import hashlib
import json
import multiprocessing as mp
import os
import random
import statistics
import time

SOURCE = "pgbench_ingest_mnem.index_keys"
SCHEMA = "pgbench_layouts"
BATCH = 900
WRITERS = 4

LAYOUTS = {
    "shipped": ("bytea", "PRIMARY KEY (ns, key) INCLUDE (value)"),
    "suffix": ("bytea", "PRIMARY KEY (ns, key) INCLUDE (value)"),
    "int8": ("int8", "PRIMARY KEY (ns, key) INCLUDE (value)"),
    "key_ns": ("bytea", "PRIMARY KEY (key, ns) INCLUDE (value)"),
    "key": ("bytea", "PRIMARY KEY (key) INCLUDE (value)"),
}


def connect():
    import psycopg
    return psycopg.connect(os.environ["MNEM_PG_URI"], autocommit=True)


def digest(ns):
    return int.from_bytes(hashlib.md5(ns).digest()[:8], "big", signed=True)


def rows_for(layout, rows):
    if layout == "suffix":
        return [(ns, key[len(ns):], v) for ns, key, v in rows]
    if layout == "int8":
        return [(digest(ns), key, v) for ns, key, v in rows]
    return rows


def writer(layout, batches, start, end):
    ns_type = LAYOUTS[layout][0]
    sql = (f"INSERT INTO {SCHEMA}.{layout} (ns, key, value) "
           f"SELECT * FROM unnest(%s::{ns_type}[], %s::bytea[], %s::bytea[])")
    with connect() as c:
        start.wait()
        for b in batches:
            with c.transaction():
                c.execute(sql, ([r[0] for r in b], [r[1] for r in b], [r[2] for r in b]))
        end.wait()


def run(layout, rows):
    ns_type, key = LAYOUTS[layout]
    with connect() as c:
        c.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        c.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{layout}")
        c.execute(f"CREATE TABLE {SCHEMA}.{layout} (ns {ns_type} NOT NULL, key bytea NOT NULL, "
                  f"value bytea NOT NULL, {key})")
    mine = rows_for(layout, rows)
    batches = [mine[i:i + BATCH] for i in range(0, len(mine), BATCH)]
    ctx = mp.get_context("fork")
    start, end = ctx.Barrier(WRITERS + 1), ctx.Barrier(WRITERS + 1)
    procs = [ctx.Process(target=writer, args=(layout, batches[i::WRITERS], start, end)) for i in range(WRITERS)]
    for p in procs:
        p.start()
    start.wait()
    t = time.perf_counter()
    end.wait()
    wall = time.perf_counter() - t
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"a writer of {layout} failed"
    with connect() as c:
        heap, index = c.execute(f"SELECT pg_relation_size('{SCHEMA}.{layout}'), "
                                f"pg_indexes_size('{SCHEMA}.{layout}')").fetchone()
        c.execute(f"DROP TABLE {SCHEMA}.{layout}")
    return len(mine) / wall, heap >> 20, index >> 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_200_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    a = ap.parse_args()
    layouts = a.layouts.split(",")
    with connect() as c:
        # A sample of every namespace and kind of row, the same at every run.
        rows = c.execute(f"SELECT ns, key, value FROM {SOURCE} ORDER BY md5(key) LIMIT %s", (a.rows,)).fetchall()
    if not rows:
        raise SystemExit(f"no rows in {SOURCE}: run bench/postgres.py --phases ingest first")
    rows = [(bytes(ns), bytes(k), bytes(v)) for ns, k, v in rows]
    random.Random(1).shuffle(rows)
    results = {name: [] for name in layouts}
    for r in range(a.rounds):
        for name in layouts:
            rate, heap, index = run(name, rows)
            results[name].append(rate)
            print(f"round {r + 1} {name:8s} {rate:10,.0f} rows/s  table {heap} MiB  index {index} MiB", flush=True)
    base = statistics.median(results[layouts[0]])
    print(json.dumps({"rows": len(rows), "writers": WRITERS, "batch": BATCH,
                      "rows_per_s": {n: round(statistics.median(v)) for n, v in results.items()},
                      f"ratio_to_{layouts[0]}": {n: round(statistics.median(v) / base, 2)
                                                 for n, v in results.items()}}))


if __name__ == "__main__":
    main()

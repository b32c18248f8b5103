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
- `key`: primary key `(key)` alone (not distributable by namespace: a bound);
- `hash4`, `hash8`: `shipped`, partitioned by the hash of `ns` into 4 or 8 tables (each
  its own heap, primary key and relation extension lock).

With `--by-namespace`, each writer gets the rows of one namespace (as in the ingest, where
each writer process writes its own), instead of statements that mix them.

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
    "hash4": ("bytea", "PRIMARY KEY (ns, key) INCLUDE (value)"),
    "hash8": ("bytea", "PRIMARY KEY (ns, key) INCLUDE (value)"),
}
PARTITIONS = {"hash4": 4, "hash8": 8}


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


def run(layout, rows, by_namespace):
    ns_type, key = LAYOUTS[layout]
    parts = PARTITIONS.get(layout)
    with connect() as c:
        c.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        c.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{layout}")
        c.execute(f"CREATE TABLE {SCHEMA}.{layout} (ns {ns_type} NOT NULL, key bytea NOT NULL, "
                  f"value bytea NOT NULL, {key})" + (" PARTITION BY HASH (ns)" if parts else ""))
        for i in range(parts or 0):
            c.execute(f"CREATE TABLE {SCHEMA}.{layout}_{i} PARTITION OF {SCHEMA}.{layout} "
                      f"FOR VALUES WITH (MODULUS {parts}, REMAINDER {i})")
    mine = rows_for(layout, rows)
    if by_namespace:
        # One namespace's statements to each writer, in turn: writer i gets namespace i's.
        names = sorted({r[0] for r in mine})
        own = {n: [r for r in mine if r[0] == n] for n in names}
        batches = [[] for _ in range(WRITERS)]
        for i, n in enumerate(names):
            batches[i % WRITERS].extend(own[n][j:j + BATCH] for j in range(0, len(own[n]), BATCH))
        dealt = batches
    else:
        batches = [mine[i:i + BATCH] for i in range(0, len(mine), BATCH)]
        dealt = [batches[i::WRITERS] for i in range(WRITERS)]
    ctx = mp.get_context("fork")
    start, end = ctx.Barrier(WRITERS + 1), ctx.Barrier(WRITERS + 1)
    procs = [ctx.Process(target=writer, args=(layout, dealt[i], start, end)) for i in range(WRITERS)]
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
        # A partitioned table's sizes are its partitions' (the tree is empty for a plain one).
        t = f"'{SCHEMA}.{layout}'::regclass"
        heap, index = c.execute(f"SELECT coalesce(sum(pg_relation_size(relid)), pg_relation_size({t}))::int8, "
                                f"coalesce(sum(pg_indexes_size(relid)), pg_indexes_size({t}))::int8 "
                                f"FROM pg_partition_tree({t})").fetchone()
        c.execute(f"DROP TABLE {SCHEMA}.{layout}")
    return len(mine) / wall, heap >> 20, index >> 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_200_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--by-namespace", action="store_true", help="each writer its own namespace's rows")
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
            rate, heap, index = run(name, rows, a.by_namespace)
            results[name].append(rate)
            print(f"round {r + 1} {name:8s} {rate:10,.0f} rows/s  table {heap} MiB  index {index} MiB", flush=True)
    base = statistics.median(results[layouts[0]])
    print(json.dumps({"rows": len(rows), "writers": WRITERS, "batch": BATCH,
                      "rows_per_s": {n: round(statistics.median(v)) for n, v in results.items()},
                      f"ratio_to_{layouts[0]}": {n: round(statistics.median(v) / base, 2)
                                                 for n, v in results.items()}}))


if __name__ == "__main__":
    main()

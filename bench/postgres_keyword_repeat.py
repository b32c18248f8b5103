"""Keyword search on the store that `bench/postgres.py --phases keyword` left on the server
(schemas `pgbench_kw` and `pgbench_kw_peer`), beside the peer table's `ts_rank`: each of the
same 60 queries run `REPS` times by each side in turn, the fastest kept, then the median over
the queries (less noise from a shared machine than one run of each). The peer runs twice:
returning the ten best ids, and returning their text and score too (what mnem returns).
`-v` lists every query.

With `--query TEXT` (repeatable), only those texts: each run `REPS` times by each side in
turn, and the median of each side's runs printed per text (a query's fixed cost: a word
found nowhere, a word found once). `--side mnem` runs mnem's side alone (to profile the
calling process: `perf record -g python bench/postgres_keyword_repeat.py 5000 --query ...
--side mnem`).

`--store PATH_OR_URI` times that store's namespace `bench`/`user` instead (mnem's side
only; `bench_indexes keyword --n 100000 --keep` leaves one at
`/tmp/mnem-bench/keyword-store`), to time single queries through the C ABI on any backend.

`--postings` prints instead how many postings each of the 60 queries reads, approximately:
for each of its distinct words, the texts that hold it (`\w+` runs, lowercased: close to
the BM25 tokenizer's terms), summed, sorted.

    MNEM_LIB=.../libmnem.so /var/cache/mnem/venv/bin/python bench/postgres_keyword_repeat.py 5 [-v]
    MNEM_LIB=.../libmnem.so /var/cache/mnem/venv/bin/python bench/postgres_keyword_repeat.py 300 \\
        --query zzqqxx --query 你是偏執狂
"""
import argparse
import collections
import os
import re
import statistics
import time

from mnem_env import ROOT  # noqa: F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402
import postgres as B  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("reps", nargs="?", type=int, default=5)
ap.add_argument("-v", action="store_true", help="list every query")
ap.add_argument("--query", action="append", help="time only this text (repeatable)")
ap.add_argument("--side", choices=["both", "mnem"], default="both")
ap.add_argument("--store", help="time this store (path or URI) instead, mnem's side only")
ap.add_argument("--postings", action="store_true", help="print each query's postings, approximately")
a = ap.parse_args()

if a.postings:
    sessions = B.load(os.environ.get("CORPUS", "/tmp/pgbench-corpus.jsonl"), 100000)
    df = collections.Counter(w for _, evs in sessions for e in evs for w in set(re.findall(r"\w+", B.text_of(e).lower())))
    counts = sorted((sum(df[w] for w in set(re.findall(r"\w+", q.lower()))), q) for q in B.queries(sessions, 60))
    for n, q in counts:
        print(f"{n:7d}  {q[:40]}")
    raise SystemExit

if a.query:
    qs = a.query
else:
    qs = B.queries(B.load(os.environ.get("CORPUS", "/tmp/pgbench-corpus.jsonl"), 100000), 60)
store = mnem.Store(a.store or B.with_schema(os.environ["MNEM_PG_URI"], "pgbench_kw"))
conn = B.peer_connect(os.environ["MNEM_PG_URI"]) if a.side == "both" and not a.store else None
sql = B.PEER_QUERY.format(schema="pgbench_kw_peer")
sql_rows = B.PEER_QUERY_ROWS.format(schema="pgbench_kw_peer")


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


rows = []
for q in qs:
    m, p, pr = [], [], []
    for _ in range(a.reps):
        m.append(timed(lambda: store.keyword_search(B.APP, "user", {"text": q, "limit": 10})))
        if conn is not None:
            p.append(timed(lambda: conn.execute(sql, (q.split(), "bench/user")).fetchall()))
            pr.append(timed(lambda: conn.execute(sql_rows, (q.split(), "bench/user")).fetchall()))
    if a.query:
        peer = (f", peer {statistics.median(p) * 1e3:.3f} ms (with text and score "
                f"{statistics.median(pr) * 1e3:.3f} ms)") if p else ""
        print(f"{q}: median of {a.reps}: mnem {statistics.median(m) * 1e3:.3f} ms{peer}")
    else:
        nan = float("nan")
        rows.append((min(m) * 1e3, min(p) * 1e3 if p else nan, min(pr) * 1e3 if pr else nan, q))
if not a.query:
    mm, pp, ppr = (statistics.median(r[i] for r in rows) for i in range(3))
    print(f"median of per-query min: mnem {mm:.3f} ms, peer {pp:.3f} ms, ratio {mm / pp:.2f}; "
          f"peer returning text and score {ppr:.3f} ms, ratio {mm / ppr:.2f}")
    if a.v:
        for r in sorted(rows):
            print(f"{r[0]:8.3f} {r[1]:8.3f} {r[2]:8.3f}  {r[3][:40]}")

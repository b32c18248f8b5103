"""mnem_search query by query on one RocksDB store: which queries are slow, and whether two
builds answer the same.

    /var/cache/mnem/venv/bin/python bench/corpus.py 100000 > /tmp/corpus100k.jsonl
    . scripts/env && cargo build --release --lib
    /var/cache/mnem/venv/bin/python bench/adk_queries.py --corpus /tmp/corpus100k.jsonl \\
        --n 100000 --store /tmp/adk-queries-store

Through the C ABI (the Python binding over ctypes). The store is written from the first N
corpus events (calls of one corpus session, as `bench/adk_reopen.py` writes them) when
`--store` does not exist yet, then closed; every run reopens it, so that builds alternated
with `MNEM_LIB` search the same settled store. `bench/adk_reopen.py`'s query sample (1-3
words from the stored texts) is searched `--passes` times in a row. Prints JSON lines: the
`--slowest` queries with their time in each pass (`--only Q`, any number of times: the passes
search those queries instead of the sample); the p50 of each pass; with `--hash K`, a
SHA-256 of the raw answers of the first K sampled queries (equal hashes: equal answers); with
`--repeat Q` (any number of times), the median of 50 searches of Q. For an instruction count
that does not depend on the machine's load, run it under callgrind with `--toggle-collect=
'mnem::mnem::Mnem::search'`.
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from mnem_env import ROOT  # noqa: E402,F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402
from postgres import APP, load, queries  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--store", required=True, help="a store directory, written first if absent")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--hash", type=int, default=0, help="hash the answers of this many sampled queries")
    ap.add_argument("--repeat", action="append", default=[], help="a query to time 50 times (median)")
    ap.add_argument("--only", action="append", default=[], help="search this query in the passes, not the sample")
    a = ap.parse_args()
    sessions = load(a.corpus, a.n)
    if not os.path.exists(a.store):
        store = mnem.Store(a.store, create=True)
        for sid, evs in sessions:
            store.add_events(APP, "user", sid, "\n".join(json.dumps(e) for e in evs))
        store.close()
    store = mnem.Store(a.store)
    qs = queries(sessions, max(a.queries, a.hash))
    timed = a.only or qs[:a.queries]
    lat = {q: [] for q in timed}
    for _ in range(a.passes):
        for q in timed:
            t = time.perf_counter()
            store.search_raw(APP, "user", q)
            lat[q].append((time.perf_counter() - t) * 1e3)
    for q, xs in sorted(lat.items(), key=lambda kv: -max(kv[1]))[:a.slowest]:
        print(json.dumps({"query": q, "ms": [round(x, 3) for x in xs]}, ensure_ascii=False))
    if a.passes:
        p50 = [round(statistics.median(lat[q][p] for q in timed), 3) for p in range(a.passes)]
        print(json.dumps({"p50_ms_per_pass": p50}))
    if a.hash:
        h = hashlib.sha256()
        for q in qs[:a.hash]:
            h.update(store.search_raw(APP, "user", q))
        print(json.dumps({"answers": a.hash, "sha256": h.hexdigest()}))
    for q in a.repeat:
        xs = []
        for _ in range(50):
            t = time.perf_counter()
            store.search_raw(APP, "user", q)
            xs.append((time.perf_counter() - t) * 1e3)
        print(json.dumps({"query": q, "median_ms_of_50": round(statistics.median(xs), 3)}, ensure_ascii=False))
    store.close()


if __name__ == "__main__":
    main()

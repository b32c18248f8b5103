"""mnem_search on a RocksDB store after it is closed and reopened, and the ingest before it.

    /var/cache/mnem/venv/bin/python bench/corpus.py 100000 > /tmp/pgbench-corpus.jsonl
    . scripts/env && cargo build --release --lib
    /var/cache/mnem/venv/bin/python bench/adk_reopen.py --corpus /tmp/pgbench-corpus.jsonl --n 100000

Through the C ABI (the Python binding over ctypes), as `bench/postgres.py` drives it, with
the same events and queries: the first N corpus events written in calls of one corpus session
each (JSON encoded before the clock starts), the store closed and reopened, then the 60
queries (1-3 words sampled from the stored texts) `--passes` times. `MNEM_LIB` picks the
build, so two builds alternate on one machine. With `--peer`, google-adk's own
`SqliteMemoryService` (a database file, FTS5) ingests the same events in the same calls,
as `Event` objects built before its clock starts, and answers the same queries once after
it is reopened. Prints one JSON line: ingest events/s, then per pass the p50 of all queries,
of the ASCII-only ones, of the others, and the slowest; then the peer's figures and the
ratios.

With `--killed`, the ingest runs in a child process that is killed with SIGKILL once it
has written everything (no close, no flush): the reopen is then a recovery. Either way the
JSON gives the reopen's time, the first search's, and how many journal entries of postings
the reopen moved into the index (`mnem_stats`' `journal_replayed`).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mnem_env import ROOT  # noqa: E402,F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402
from postgres import APP, load, queries  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--peer", action="store_true", help="also google-adk's SqliteMemoryService")
    ap.add_argument("--killed", action="store_true", help="kill the ingesting process instead of closing")
    ap.add_argument("--ingest-into", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sessions = load(a.corpus, a.n)
    qs = queries(sessions, a.queries)
    bodies = [(sid, "\n".join(json.dumps(e) for e in evs)) for sid, evs in sessions]
    events = sum(len(evs) for _, evs in sessions)
    if a.ingest_into:
        # The child of `--killed`: ingest, report, and wait to be killed.
        store = mnem.Store(a.ingest_into, create=True)
        t = time.perf_counter()
        for sid, body in bodies:
            store.add_events(APP, "user", sid, body)
        print(events / (time.perf_counter() - t), flush=True)
        sys.stdin.read()
        return
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "store")
        if a.killed:
            child = subprocess.Popen([sys.executable, __file__, "--corpus", a.corpus, "--n", str(a.n),
                                      "--ingest-into", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            ingest = float(child.stdout.readline())
            child.kill()
            child.wait()
        else:
            store = mnem.Store(path, create=True)
            t = time.perf_counter()
            for sid, body in bodies:
                store.add_events(APP, "user", sid, body)
            ingest = events / (time.perf_counter() - t)
            store.close()
        t = time.perf_counter()
        store = mnem.Store(path)
        reopen = time.perf_counter() - t
        t = time.perf_counter()
        store.search_raw(APP, "user", qs[0])
        first = time.perf_counter() - t
        replayed = store.stats()["journal_replayed"]
        passes = []
        for _ in range(a.passes):
            lat = []
            for q in qs:
                t = time.perf_counter()
                store.search_raw(APP, "user", q)
                lat.append(time.perf_counter() - t)
            passes.append(lat)
        store.close()
    finally:
        shutil.rmtree(d)

    def ms(xs):
        return round(statistics.median(xs) * 1e3, 3) if xs else None

    out = {"events": events, "ingest_events_per_s": round(ingest), "reopen_ms": round(reopen * 1e3, 1),
           "first_search_ms": round(first * 1e3, 2), "journal_replayed": replayed, "passes": []}
    for lat in passes:
        out["passes"].append({
            "p50_ms": ms(lat),
            "p50_ascii_ms": ms([x for q, x in zip(qs, lat) if q.isascii()]),
            "p50_non_ascii_ms": ms([x for q, x in zip(qs, lat) if not q.isascii()]),
            "max_ms": round(max(lat) * 1e3, 2),
        })
    if a.peer:
        peer_ingest, peer_lat = sqlite_peer(sessions, qs)
        out["peer"] = {"ingest_events_per_s": round(events / peer_ingest), "p50_ms": ms(peer_lat)}
        out["ingest_ratio"] = round(ingest / (events / peer_ingest), 2)
        out["search_p50_ratio"] = round(statistics.median(peer_lat) / statistics.median(passes[-1]), 1)
    print(json.dumps(out))


def sqlite_peer(sessions, qs):
    """google-adk's SqliteMemoryService on the same events and queries: (ingest seconds, latencies)."""
    import asyncio
    from google.adk.events.event import Event
    from google.adk.memory._sqlite_memory_service import SqliteMemoryService

    batches = [(sid, [Event.model_validate(e) for e in evs]) for sid, evs in sessions]
    d = tempfile.mkdtemp()

    async def run():
        path = os.path.join(d, "memory.db")
        svc = SqliteMemoryService(path)
        t = time.perf_counter()
        for sid, evs in batches:
            await svc.add_events_to_memory(app_name=APP, user_id="user", events=evs, session_id=sid)
        took = time.perf_counter() - t
        await svc.close()
        svc = SqliteMemoryService(path)
        lat = []
        for q in qs:
            t = time.perf_counter()
            await svc.search_memory(app_name=APP, user_id="user", query=q)
            lat.append(time.perf_counter() - t)
        await svc.close()
        return took, lat

    try:
        return asyncio.run(run())
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()

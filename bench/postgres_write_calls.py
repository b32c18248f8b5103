"""One-event writes to a store on PostgreSQL, one call each, as a loop of a single agent
would make them (`--kind adk`: `add_events`; `episodes`: `put_episodes`): the median and p90
of a call. Run under strace to count what a write sends
to the server (its round trips), which is the same on any machine:

    scripts/pg-server start /tmp/pgb/s && . /tmp/pgb/s/env
    strace -f -c -e trace=sendto \\
        /var/cache/mnem/venv/bin/python bench/postgres_write_calls.py --corpus /tmp/pgbench-corpus.jsonl --n 300

The store is made in a schema of its own (`--schema`), dropped before and after.
"""
import argparse
import json
import os
import sys
import time

from mnem_env import ROOT  # noqa: F401 (first: the binding and MNEM_LIB)

import postgres as B  # noqa: E402
import mnem  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.environ.get("MNEM_PG_URI"), help="postgresql:// URI (default $MNEM_PG_URI)")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=300, help="events, one per call")
    ap.add_argument("--kind", choices=["adk", "episodes"], default="adk")
    ap.add_argument("--schema", default="pgbench_write_calls")
    a = ap.parse_args()
    if not a.server:
        sys.exit("no server: pass --server or set MNEM_PG_URI")
    sessions = B.load(a.corpus, a.n)
    with B.peer_connect(a.server) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {a.schema} CASCADE")
    store = mnem.Store(B.with_schema(a.server, a.schema), create=True)
    took = []
    for sid, events in sessions:
        for e in events:
            if a.kind == "adk":
                t = time.perf_counter()
                store.add_events(B.APP, "user", sid, json.dumps(e))
            else:
                episode = {"episode_type": "message", "primary": B.text_of(e)}
                t = time.perf_counter()
                store.put_episodes(B.APP, "user", [episode])
            took.append(time.perf_counter() - t)
    store.close()
    with B.peer_connect(a.server) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {a.schema} CASCADE")
    took.sort()
    print(f"{len(took)} one-event writes: median {took[len(took) // 2] * 1e3:.3f} ms, "
          f"p90 {took[int(len(took) * 0.9)] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

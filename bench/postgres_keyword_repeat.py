"""Keyword search on the store that `bench/postgres.py --phases keyword` left on the server
(schemas `pgbench_kw` and `pgbench_kw_peer`), beside the peer table's `ts_rank`: each of the
same 60 queries run `REPS` times by each side in turn, the fastest kept, then the median over
the queries (less noise from a shared machine than one run of each). `-v` lists every query.

    MNEM_LIB=.../libmnem.so /var/cache/mnem/venv/bin/python bench/postgres_keyword_repeat.py 5 [-v]
"""
import sys, os, time, statistics, json
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench")); sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import postgres as B  # noqa: E402
import mnem  # noqa: E402
server = os.environ["MNEM_PG_URI"]
sessions = B.load(os.environ.get("CORPUS", "/tmp/pgbench-corpus.jsonl"), 100000)
qs = B.queries(sessions, 60)
store = mnem.Store(B.with_schema(server, "pgbench_kw"))
conn = B.peer_connect(server)
sql = B.PEER_QUERY.format(schema="pgbench_kw_peer")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
rows = []
for q in qs:
    m, p = [], []
    for _ in range(reps):
        t = time.perf_counter(); store.keyword_search(B.APP, "user", {"text": q, "limit": 10}); m.append(time.perf_counter() - t)
        t = time.perf_counter(); conn.execute(sql, (q.split(), "bench/user")).fetchall(); p.append(time.perf_counter() - t)
    rows.append((min(m)*1e3, min(p)*1e3, q))
mm = statistics.median(r[0] for r in rows); pp = statistics.median(r[1] for r in rows)
print(f"median of per-query min: mnem {mm:.3f} ms, peer {pp:.3f} ms, ratio {mm/pp:.2f}")
if "-v" in sys.argv:
    for r in sorted(rows): print(f"{r[0]:8.3f} {r[1]:8.3f}  {r[2][:40]}")

"""What BM25 ranked by the server itself would cost: the server's execution time of a SQL
statement that ranks a query's postings (read from mnem's own index rows), beside that of
the statement mnem sends for the same postings (it ranks them itself, in the client) and that
of the peer's `ts_rank` query, for the 60 queries of `bench/postgres.py`.

    /var/cache/mnem/venv/bin/python bench/postgres.py --server "$MNEM_PG_URI" \\
        --corpus /tmp/pgbench-corpus.jsonl --n 100000 --phases keyword
    /var/cache/mnem/venv/bin/python bench/postgres_sql_rank.py [REPS]

Needs the schemas that the keyword phase leaves (`pgbench_kw`, `pgbench_kw_peer`). Each
statement runs under `EXPLAIN (ANALYZE, TIMING OFF)`, with the planner settings mnem's own
sessions use, `REPS` times (default 5) per query; the fastest is kept, and the median over
the queries printed. The SQL ranking applies BM25 as mnem does (k1 = 1.2, b = 0.75), with the
namespace's counters, but without expiry or filters (the benchmark's episodes have neither);
a query's terms are its lowercased alphanumeric runs (close to mnem's tokenizer). The
statement's top ten are compared with `mnem_keyword_search`'s, to show it ranks the same.
"""
import json
import os
import re
import statistics
import sys

from mnem_env import ROOT  # noqa: F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402
import postgres as B  # noqa: E402

SCHEMA, PEER = "pgbench_kw", "pgbench_kw_peer"
SETTINGS = ("SET enable_seqscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off; "
            "SET jit = off")


def u32be(n):
    return n.to_bytes(4, "big")


NS = u32be(len(B.APP)) + B.APP.encode() + u32be(4) + b"user"
POSTING, STATS = 0x11, 0x12


def term_prefix(term):
    t = term.encode()
    return NS + bytes([POSTING]) + u32be(len(t)) + t


def successor(p):
    p = bytearray(p)
    while p and p[-1] == 0xFF:
        p.pop()
    p[-1] += 1
    return bytes(p)


def terms_of(text):
    return list(dict.fromkeys(re.findall(r"[^\W_]+", text.lower())))


# mnem's statement for a search's lists (`store::postgres`, `PgView::cursors`).
LISTS = (f"SELECT p.i, k.key, k.value FROM unnest(%(lo)s::bytea[], %(hi)s::bytea[]) WITH ORDINALITY AS p(lo, hi, i) "
         f"CROSS JOIN LATERAL (SELECT key, value FROM {SCHEMA}.index_keys WHERE ns = %(ns)s AND key >= p.lo "
         f"AND key < p.hi ORDER BY key LIMIT 16384) k")

# The same postings ranked by the server: tf is the posting's first u32 (little-endian), the
# document's length the u64 after it, the counter's value two u64s (documents, total length).
LE32 = "(get_byte({v},{o}) + get_byte({v},{o}+1)*256 + get_byte({v},{o}+2)*65536 + get_byte({v},{o}+3)*16777216::int8)"
RANK = f"""
WITH stats AS (
  SELECT {LE32.format(v='value', o=0)}::float8 AS n, {LE32.format(v='value', o=8)}::float8 AS total
  FROM {SCHEMA}.index_keys WHERE ns = %(ns)s AND key = %(counter)s
), p AS (
  SELECT t.i, substring(k.key FROM length(t.lo) + 1) AS id,
         {LE32.format(v='k.value', o=0)}::float8 AS tf, {LE32.format(v='k.value', o=4)}::float8 AS dl
  FROM unnest(%(lo)s::bytea[], %(hi)s::bytea[]) WITH ORDINALITY AS t(lo, hi, i)
  CROSS JOIN LATERAL (SELECT key, value FROM {SCHEMA}.index_keys WHERE ns = %(ns)s AND key >= t.lo AND key < t.hi) k
), df AS (
  SELECT i, ln(1 + (stats.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf FROM p, stats GROUP BY i, stats.n
)
SELECT p.id, sum(df.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / (stats.total / stats.n)))) AS score
FROM p JOIN df USING (i), stats GROUP BY p.id ORDER BY score DESC, p.id LIMIT 10
"""


def server_ms(conn, sql, params):
    plan = conn.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, params).fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return plan[0]["Execution Time"]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    server = os.environ["MNEM_PG_URI"]
    qs = B.queries(B.load(os.environ.get("CORPUS", "/tmp/pgbench-corpus.jsonl"), 100000), 60)
    store = mnem.Store(B.with_schema(server, SCHEMA))
    conn = B.peer_connect(server)
    conn.execute(SETTINGS)
    peer_sql = B.PEER_QUERY_ROWS.format(schema=PEER).replace("%s::text[]", "%(words)s::text[]").replace(
        "ns = %s", "ns = %(peer_ns)s")
    times = {"lists": [], "rank": [], "peer": []}
    same = 0
    for q in qs:
        terms = terms_of(q)
        if not terms:
            continue
        lo = [term_prefix(t) for t in terms]
        params = {"ns": NS, "lo": lo, "hi": [successor(p) for p in lo], "counter": NS + bytes([STATS, 0]),
                  "words": q.split(), "peer_ns": f"{B.APP}/user"}
        for name, sql in (("lists", LISTS), ("rank", RANK), ("peer", peer_sql)):
            times[name].append(min(server_ms(conn, sql, params) for _ in range(reps)))
        ranked = [bytes(r[0]) for r in conn.execute(RANK, params).fetchall()]
        hits = store.keyword_search(B.APP, "user", {"text": " ".join(terms), "limit": 10})["results"]
        same += [bytes.fromhex(h["record"]["id"].replace("-", "")) for h in hits] == ranked
    n = len(times["rank"])
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{n} queries, server execution time, median of per-query min of {reps}: "
          f"mnem's lists {med['lists']:.3f} ms, ranked in SQL {med['rank']:.3f} ms, "
          f"peer's ts_rank {med['peer']:.3f} ms; the SQL ranking's top 10 equal mnem's for {same} of {n}")
    print(json.dumps({"queries": n, "reps": reps, "server_ms_median": med, "same_top10": same}))


if __name__ == "__main__":
    main()

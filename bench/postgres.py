"""mnem on PostgreSQL beside what a PostgreSQL user would otherwise use, on the same server in
the same run: a table of the same events with a `tsvector` column and a GIN index, ranked by
`ts_rank` (PostgreSQL's own full-text search).

    scripts/python-env                      # the dev venv: google-adk and the corpus packages
    /var/cache/mnem/venv/bin/pip install 'psycopg[binary]'
    /var/cache/mnem/venv/bin/python bench/corpus.py 100000 > /tmp/pgbench-corpus.jsonl
    scripts/pg-server start /tmp/pgb/s && . /tmp/pgb/s/env
    . scripts/env && cargo build --release --lib
    /var/cache/mnem/venv/bin/python bench/postgres.py --server "$MNEM_PG_URI" \
        --corpus /tmp/pgbench-corpus.jsonl --n 100000

Everything goes through the C ABI (the Python binding over ctypes), each phase in new schemas:
1. Ingest: `--writers` processes at once, each its own namespace (one user per process), ADK
   events in calls of 20 (one corpus session per call). The peer: the same processes insert
   the same events, 20 rows per transaction, into the table with its GIN index.
2. One namespace of N events written in calls of 20 by one process, then a new process opens
   the store and searches: open + first `search`, then `--queries` queries sampled from the
   stored texts (1-3 words), each once: p50 and p99 of `mnem_search`. Every answer is checked
   byte for byte against a RocksDB store of the same events (whose answers the differential
   test holds equal to google-adk's) and the first `--adk-check` against google-adk's
   `InMemoryMemoryService` itself. Also: a word found in no event (median of 20: a search's
   fixed cost, its round trips) and the index rows each event wrote. The p50 is also split
   into queries of ASCII words only and the rest (their non-ASCII tokens also match as
   substrings), each beside the same queries on the RocksDB store, timed as they are checked.
3. Keyword search: the same N texts as episodes (`put_episodes` of 1,000), the same queries
   through `mnem_keyword_search` (exact BM25, top 10) and through the peer table (the query's
   words OR-ed in a `to_tsquery('simple', ...)`, `ORDER BY ts_rank DESC LIMIT 10`).
After each load the tables are VACUUM ANALYZEd, as autovacuum would do soon after.
The last line is a JSON summary.
"""
import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mnem_env import ROOT  # noqa: E402,F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402

APP = "bench"


def with_schema(server, schema):
    return f"{server}{'&' if '?' in server else '?'}schema={schema}"


def load(path, n):
    """The first n events, grouped by session in order: [(session_id, [json line, ...])]."""
    sessions, order = {}, []
    with open(path, encoding="utf-8") as f:
        for _, line in zip(range(n), f):
            d = json.loads(line)
            sid = d.pop("session_id")
            if sid not in sessions:
                sessions[sid] = []
                order.append(sid)
            sessions[sid].append(d)
    return [(sid, sessions[sid]) for sid in order]


def text_of(event):
    return " ".join(p.get("text") or "" for p in (event.get("content") or {}).get("parts") or [])


def queries(sessions, k, seed=11):
    rng = random.Random(seed)
    texts = [text_of(e) for _, evs in sessions for e in evs if text_of(e).split()]
    out = []
    while len(out) < k:
        words = rng.choice(texts).split()
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 3)))))
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


# ---- the peer: one table, a tsvector column, a GIN index ----------------------------------------

def vacuum(server, schema):
    """VACUUM ANALYZE every table of `schema`, as autovacuum would soon after a bulk load (it
    sets the visibility map and the planner's statistics), so both sides are measured settled."""
    with peer_connect(server) as c:
        for (t,) in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)).fetchall():
            c.execute(f"VACUUM ANALYZE {schema}.{t}")


def peer_connect(server):
    import psycopg
    return psycopg.connect(server, autocommit=True)


def peer_create(server, schema):
    with peer_connect(server) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        c.execute(f"CREATE SCHEMA {schema}")
        c.execute(f"""CREATE TABLE {schema}.events (ns text NOT NULL, id text NOT NULL, session text,
                      event jsonb NOT NULL, body text NOT NULL,
                      tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
                      PRIMARY KEY (ns, id))""")
        c.execute(f"CREATE INDEX ON {schema}.events USING gin (tsv)")


def peer_insert(conn, schema, ns, sid, events):
    with conn.transaction():
        conn.execute(
            f"INSERT INTO {schema}.events (ns, id, session, event, body) "
            "SELECT %s, i, %s, e::jsonb, b FROM unnest(%s::text[], %s::text[], %s::text[]) AS t(i, e, b) "
            "ON CONFLICT DO NOTHING",
            (ns, sid, [e["id"] for e in events], [json.dumps(e) for e in events], [text_of(e) for e in events]))


PEER_MATCH = ("FROM {schema}.events, "
              "to_tsquery('simple', (SELECT string_agg(quote_literal(lower(w)), ' | ') FROM unnest(%s::text[]) w)) q "
              "WHERE ns = %s AND tsv @@ q ORDER BY ts_rank(tsv, q) DESC LIMIT 10")
# The ten best rows' ids, as the peer was first measured; and what a memory service answers
# with (as mnem's keyword search does): each row's text and score too.
PEER_QUERY = "SELECT id " + PEER_MATCH
PEER_QUERY_ROWS = "SELECT id, body, ts_rank(tsv, q) " + PEER_MATCH


# ---- 1. ingest from several processes ----------------------------------------------------------

def writer(kind, uri, schema, user, sessions, start, done):
    if kind == "mnem":
        store = mnem.Store(uri, create=True)
        start.wait()
        for sid, evs in sessions:
            store.add_events(APP, user, sid, "\n".join(json.dumps(e) for e in evs))
        store.close()
    else:
        conn = peer_connect(uri)
        start.wait()
        for sid, evs in sessions:
            peer_insert(conn, schema, f"{APP}/{user}", sid, evs)
        conn.close()
    done.put(True)


def ingest(kind, server, sessions, writers):
    schema = f"pgbench_ingest_{kind}"
    if kind == "peer":
        peer_create(server, schema)
        uri = server
    else:
        with peer_connect(server) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        uri = with_schema(server, schema)
        mnem.Store(uri, create=True).close()  # the schema, before the writers race to it
    ctx = mp.get_context("spawn")
    start, done = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(kind, uri, schema, f"user{i}", sessions[i::writers], start, done))
             for i in range(writers)]
    for p in procs:
        p.start()
    start.wait()
    t = time.perf_counter()
    for _ in procs:
        done.get()
    wall = time.perf_counter() - t
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"a {kind} writer failed"
    return sum(len(evs) for _, evs in sessions) / wall


# ---- 2. ADK search in a new process ------------------------------------------------------------

def first_search(uri, query, out):
    t = time.perf_counter()
    store = mnem.Store(uri)
    t_open = time.perf_counter() - t
    store.search_raw(APP, "user", query)
    out.put((t_open, time.perf_counter() - t))
    store.close()


def adk_entries(raw):
    return [(m["id"], m.get("author"), m.get("timestamp"), m.get("content")) for m in json.loads(raw)["memories"]]


async def reference_answers(sessions, qs):
    from google.adk.events import Event
    from google.adk.memory import InMemoryMemoryService
    from google.adk.sessions import Session
    ref = InMemoryMemoryService()
    for sid, evs in sessions:
        await ref.add_session_to_memory(Session(id=sid, app_name=APP, user_id="user",
                                                events=[Event.model_validate(e) for e in evs]))
    out = []
    for q in qs:
        r = await ref.search_memory(app_name=APP, user_id="user", query=q)
        out.append([(m.id, m.author, m.timestamp, m.content.model_dump(mode="json", exclude_none=True))
                    for m in r.memories])
    return out


def adk_search(server, sessions, qs, adk_check):
    schema = "pgbench_adk"
    with peer_connect(server) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    uri = with_schema(server, schema)
    store = mnem.Store(uri, create=True)
    t = time.perf_counter()
    for sid, evs in sessions:
        store.add_events(APP, "user", sid, "\n".join(json.dumps(e) for e in evs))
    single = sum(len(evs) for _, evs in sessions) / (time.perf_counter() - t)
    store.close()
    vacuum(server, schema)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=first_search, args=(uri, qs[0], out))
    p.start()
    t_open, t_first = out.get()
    p.join()
    store = mnem.Store(uri)
    lat, answers = [], []
    for q in qs:
        t = time.perf_counter()
        answers.append(store.search_raw(APP, "user", q))
        lat.append(time.perf_counter() - t)
    # A search's fixed cost (its round trips): a word in no event, median of 20.
    nothing = []
    for _ in range(20):
        t = time.perf_counter()
        store.search_raw(APP, "user", "qqzzxqq")
        nothing.append(time.perf_counter() - t)
    store.close()
    with peer_connect(server) as c:
        index_rows = c.execute(f"SELECT count(*) FROM {schema}.index_keys").fetchone()[0]
    with tempfile.TemporaryDirectory() as d:
        rocks = mnem.Store(os.path.join(d, "store"), create=True)
        for sid, evs in sessions:
            rocks.add_events(APP, "user", sid, "\n".join(json.dumps(e) for e in evs))
        rocks.search_raw(APP, "user", qs[0])
        differ, rocks_lat = [], []
        for q, a in zip(qs, answers):
            t = time.perf_counter()
            if rocks.search_raw(APP, "user", q) != a:
                differ.append(q)
            rocks_lat.append(time.perf_counter() - t)
        rocks.close()
    adk_differ = None
    if adk_check:
        want = asyncio.run(reference_answers(sessions, qs[:adk_check]))
        got = [adk_entries(raw) for raw in answers[:adk_check]]
        adk_differ = sum(1 for w, g in zip(want, got) if w != g)
    return {"single_writer_events_per_s": single, "open_ms": t_open * 1e3, "open_first_search_ms": t_first * 1e3,
            "p50_ms": statistics.median(lat) * 1e3, "p99_ms": pct(lat, 99) * 1e3,
            # ADK matches a non-ASCII token as a substring too (char postings, then the texts):
            # the two kinds of query cost differently, so each gets its own median.
            "p50_ascii_ms": statistics.median([t for q, t in zip(qs, lat) if q.isascii()] or [0]) * 1e3,
            "p50_non_ascii_ms": statistics.median([t for q, t in zip(qs, lat) if not q.isascii()] or [0]) * 1e3,
            "non_ascii_queries": sum(1 for q in qs if not q.isascii()),
            # The same queries on a RocksDB store of the same events, in the same run.
            "rocksdb_p50_ascii_ms": statistics.median([t for q, t in zip(qs, rocks_lat) if q.isascii()] or [0]) * 1e3,
            "rocksdb_p50_non_ascii_ms":
                statistics.median([t for q, t in zip(qs, rocks_lat) if not q.isascii()] or [0]) * 1e3,
            "no_match_ms": statistics.median(nothing) * 1e3,
            "index_rows_per_event": index_rows / sum(len(evs) for _, evs in sessions),
            "differ_from_rocksdb": len(differ), "differ_from_adk": adk_differ,
            "results": sum(len(json.loads(a)["memories"]) for a in answers)}


# ---- 3. keyword search beside ts_rank -----------------------------------------------------------

def keyword(server, sessions, qs):
    schema, peer = "pgbench_kw", "pgbench_kw_peer"
    with peer_connect(server) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    store = mnem.Store(with_schema(server, schema), create=True)
    texts = [(e["id"], text_of(e)) for _, evs in sessions for e in evs]
    t = time.perf_counter()
    for i in range(0, len(texts), 1000):
        store.put_episodes(APP, "user", [json.dumps({"primary": x}) for _, x in texts[i:i + 1000]])
    mnem_load = time.perf_counter() - t
    peer_create(server, peer)
    conn = peer_connect(server)
    t = time.perf_counter()
    for i in range(0, len(texts), 1000):
        chunk = texts[i:i + 1000]
        with conn.transaction():
            conn.execute(f"INSERT INTO {peer}.events (ns, id, event, body) "
                         "SELECT 'bench/user', i, '{}'::jsonb, b FROM unnest(%s::text[], %s::text[]) AS t(i, b)",
                         ([i for i, _ in chunk], [x for _, x in chunk]))
    peer_load = time.perf_counter() - t
    vacuum(server, schema)
    vacuum(server, peer)
    # Warm both once, then each query once.
    store.keyword_search(APP, "user", {"text": qs[0], "limit": 10})
    sql, sql_rows = PEER_QUERY.format(schema=peer), PEER_QUERY_ROWS.format(schema=peer)
    conn.execute(sql, (qs[0].split(), "bench/user")).fetchall()
    conn.execute(sql_rows, (qs[0].split(), "bench/user")).fetchall()
    m_lat, p_lat, r_lat, m_hits, p_hits = [], [], [], 0, 0
    for q in qs:
        t = time.perf_counter()
        r = store.keyword_search(APP, "user", {"text": q, "limit": 10})
        m_lat.append(time.perf_counter() - t)
        m_hits += len(r["results"])
        # The peer's two queries in turns, so that neither is always the one that runs on
        # pages the other just read.
        for first in ((True, False) if len(p_lat) % 2 else (False, True)):
            t = time.perf_counter()
            rows = conn.execute(sql if first else sql_rows, (q.split(), "bench/user")).fetchall()
            (p_lat if first else r_lat).append(time.perf_counter() - t)
            p_hits += len(rows) if first else 0
    store.close()
    conn.close()
    return {"mnem_p50_ms": statistics.median(m_lat) * 1e3, "mnem_p99_ms": pct(m_lat, 99) * 1e3,
            "peer_p50_ms": statistics.median(p_lat) * 1e3, "peer_p99_ms": pct(p_lat, 99) * 1e3,
            "peer_rows_p50_ms": statistics.median(r_lat) * 1e3, "peer_rows_p99_ms": pct(r_lat, 99) * 1e3,
            "mnem_load_s": mnem_load, "peer_load_s": peer_load, "mnem_hits": m_hits, "peer_hits": p_hits}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="postgresql:// URI of a database the role may create schemas in")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--adk-check", type=int, default=20)
    ap.add_argument("--phases", default="ingest,adk,keyword")
    a = ap.parse_args()
    sessions = load(a.corpus, a.n)
    qs = queries(sessions, a.queries)
    n = sum(len(evs) for _, evs in sessions)
    summary = {"events": n, "sessions": len(sessions), "writers": a.writers, "queries": len(qs)}
    phases = a.phases.split(",")
    if "ingest" in phases:
        m_rate = ingest("mnem", a.server, sessions, a.writers)
        p_rate = ingest("peer", a.server, sessions, a.writers)
        summary["ingest"] = {"mnem_events_per_s": m_rate, "peer_events_per_s": p_rate}
        print(f"ingest, {a.writers} processes, calls of 20: mnem {m_rate:,.0f} events/s, "
              f"table + GIN {p_rate:,.0f} events/s ({m_rate / p_rate:.2f}x)")
    if "adk" in phases:
        r = adk_search(a.server, sessions, qs, a.adk_check)
        summary["adk"] = r
        print(f"ADK search, {n:,} events in one namespace: one writer {r['single_writer_events_per_s']:,.0f} events/s; "
              f"new process: open {r['open_ms']:.1f} ms, open + first search {r['open_first_search_ms']:.1f} ms; "
              f"p50 {r['p50_ms']:.3f} ms (ASCII-only queries {r['p50_ascii_ms']:.3f}, the "
              f"{r['non_ascii_queries']} others {r['p50_non_ascii_ms']:.3f}; on RocksDB "
              f"{r['rocksdb_p50_ascii_ms']:.3f} and {r['rocksdb_p50_non_ascii_ms']:.3f}), p99 {r['p99_ms']:.3f} ms, "
              f"a word in no event {r['no_match_ms']:.3f} ms; "
              f"{r['index_rows_per_event']:.1f} index rows per event; answers differing from RocksDB "
              f"{r['differ_from_rocksdb']}/{len(qs)}, from google-adk {r['differ_from_adk']}/{a.adk_check}")
    if "keyword" in phases:
        r = keyword(a.server, sessions, qs)
        summary["keyword"] = r
        print(f"keyword search, {n:,} episodes: mnem p50 {r['mnem_p50_ms']:.3f} ms (p99 {r['mnem_p99_ms']:.3f}), "
              f"ts_rank + GIN p50 {r['peer_p50_ms']:.3f} ms (p99 {r['peer_p99_ms']:.3f}): "
              f"{r['peer_p50_ms'] / r['mnem_p50_ms']:.2f}x; the same returning text and score p50 "
              f"{r['peer_rows_p50_ms']:.3f} ms (p99 {r['peer_rows_p99_ms']:.3f}): "
              f"{r['peer_rows_p50_ms'] / r['mnem_p50_ms']:.2f}x; load {r['mnem_load_s']:.1f} s vs {r['peer_load_s']:.1f} s")
    print(json.dumps(summary))
    bad = summary.get("adk", {})
    if bad.get("differ_from_rocksdb") or bad.get("differ_from_adk"):
        sys.exit("answers differ")


if __name__ == "__main__":
    main()

"""The libraries a user would pick instead of mnem's indexes, on the data bench_indexes wrote.

    python3 -m venv /var/cache/mnem/bench-venv
    /var/cache/mnem/bench-venv/bin/pip install usearch==2.26.6 hnswlib==0.8.0 tantivy==0.27.0 numpy
    cargo run --release --example bench_indexes -- keyword --n 100000
    cargo run --release --example bench_indexes -- hybrid-cold --n 20000
    /var/cache/mnem/bench-venv/bin/python bench/compare.py --text-n 100000 --vector-n 20000

Benchmark-only packages live in their own venv, never in the test venv. Reads from --out
(default /tmp/mnem-bench), as bench_indexes writes it:
- vectors: `vectors-NxD.f32` and `qvectors-NxD.f32` (little-endian f32, row-major, unit
  length). hnswlib and usearch build single-threaded with mnem's graph parameters (M 16,
  ef_construction 128, search ef 128, cosine); reported: build ms per vector, search p50
  (one query at a time, top 10), recall@10 against exact cosine (numpy). `--vector-libs
  usearch` runs only usearch: `bench_indexes hybrid-cold` calls that to compare its write
  time with usearch's build on the same vectors in the same run.
- texts: the first N lines of `corpus.jsonl` (each event's text) and `queries-N.txt`.
  tantivy (default tokenizer, BM25, on disk, one writer thread) and SQLite FTS5 (unicode61,
  bm25(), on disk) answer each query's words OR-ed, top 10 with their texts; reported: index
  build time, p50/p99, and open plus first query on a new handle (OS page cache warm).
Each part prints human lines; the last line is a JSON summary. A missing package or input
skips its part and says so.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time

WORD = re.compile(r"\w+")


def pct(times, p):
    t = sorted(times)
    k = max(1, min(len(t), int(-(-p * len(t) // 1))))
    return t[k - 1]


def ms_stats(times):
    return {"p50_ms": round(pct(times, 0.5) * 1e3, 4), "p99_ms": round(pct(times, 0.99) * 1e3, 4)}


def load_vectors(out, n, dim):
    import numpy as np

    data = np.fromfile(os.path.join(out, f"vectors-{n}x{dim}.f32"), dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(os.path.join(out, f"qvectors-{n}x{dim}.f32"), dtype="<f4").reshape(-1, dim)
    return np.ascontiguousarray(data), np.ascontiguousarray(queries)


def exact_top10(data, queries):
    import numpy as np

    sims = queries @ data.T
    top = np.argpartition(-sims, 10, axis=1)[:, :10]
    return [set(row.tolist()) for row in top]


def recall(found, truth):
    return round(sum(len(set(f) & t) for f, t in zip(found, truth)) / (10 * len(truth)), 4)


def bench_hnswlib(data, queries, truth):
    import hnswlib

    n, dim = data.shape
    ix = hnswlib.Index(space="cosine", dim=dim)
    ix.init_index(max_elements=n, M=16, ef_construction=128, random_seed=100)
    ix.set_num_threads(1)
    t = time.perf_counter()
    ix.add_items(data, list(range(n)), num_threads=1)
    build = time.perf_counter() - t
    ix.set_ef(128)
    times, found = [], []
    for q in queries:
        t = time.perf_counter()
        labels, _ = ix.knn_query(q, k=10, num_threads=1)
        times.append(time.perf_counter() - t)
        found.append(labels[0].tolist())
    return {"build_s": round(build, 3), "build_ms_per_vector": round(build * 1e3 / n, 4),
            **ms_stats(times), "recall_at_10": recall(found, truth)}


def bench_usearch(data, queries, truth):
    import numpy as np
    from usearch.index import Index

    n, dim = data.shape
    ix = Index(ndim=dim, metric="cos", dtype="f32", connectivity=16, expansion_add=128, expansion_search=128)
    t = time.perf_counter()
    ix.add(np.arange(n, dtype=np.uint64), data, threads=1)
    build = time.perf_counter() - t
    times, found = [], []
    for q in queries:
        t = time.perf_counter()
        m = ix.search(q, 10, threads=1)
        times.append(time.perf_counter() - t)
        found.append(m.keys.tolist())
    return {"build_s": round(build, 3), "build_ms_per_vector": round(build * 1e3 / n, 4),
            **ms_stats(times), "recall_at_10": recall(found, truth)}


def load_texts(out, n):
    texts = []
    with open(os.path.join(out, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            if len(texts) == n:
                break
            texts.append(json.loads(line)["content"]["parts"][0]["text"])
    if len(texts) < n:
        sys.exit(f"compare.py: corpus.jsonl has {len(texts)} lines, {n} needed")
    with open(os.path.join(out, f"queries-{n}.txt"), encoding="utf-8") as f:
        queries = [q for q in f.read().split("\n") if q]
    return texts, queries


def terms(q):
    return WORD.findall(q.lower())


def bench_tantivy(texts, queries, workdir):
    import tantivy

    path = os.path.join(workdir, "tantivy")
    os.makedirs(path)
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=True)
    schema = sb.build()
    ix = tantivy.Index(schema, path=path)
    t = time.perf_counter()
    w = ix.writer(heap_size=128_000_000, num_threads=1)
    for text in texts:
        w.add_document(tantivy.Document(text=text))
    w.commit()
    w.wait_merging_threads()
    build = time.perf_counter() - t

    def run(index, q):
        # The default tokenizer's tokens (alphanumeric runs, lowercased), OR-ed, built
        # directly: the query parser rejects words its tokenizer drops (over 40 bytes).
        words = terms(q)
        if not words:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", x)) for x in words])
        s = index.searcher()
        return [s.doc(addr)["text"] for _, addr in s.search(query, 10).hits]

    t = time.perf_counter()
    fresh = tantivy.Index.open(path)
    run(fresh, queries[0])
    first = time.perf_counter() - t
    ix.reload()
    times = []
    for q in queries:
        t = time.perf_counter()
        run(ix, q)
        times.append(time.perf_counter() - t)
    return {"build_s": round(build, 3), "reopen_first_ms": round(first * 1e3, 3), **ms_stats(times)}


def bench_fts5(texts, queries, workdir):
    db = os.path.join(workdir, "fts5.db")
    con = sqlite3.connect(db)
    try:
        con.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='unicode61')")
    except sqlite3.OperationalError as e:
        return {"skipped": f"FTS5 not available: {e}"}
    t = time.perf_counter()
    with con:
        con.executemany("INSERT INTO docs(text) VALUES (?)", ((x,) for x in texts))
    build = time.perf_counter() - t
    con.close()
    sql = "SELECT rowid, text FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10"

    def run(c, q):
        words = terms(q)
        if not words:
            return []
        return c.execute(sql, (" OR ".join('"' + x + '"' for x in words),)).fetchall()

    t = time.perf_counter()
    con = sqlite3.connect(db)
    run(con, queries[0])
    first = time.perf_counter() - t
    times = []
    for q in queries:
        t = time.perf_counter()
        run(con, q)
        times.append(time.perf_counter() - t)
    con.close()
    return {"build_s": round(build, 3), "reopen_first_ms": round(first * 1e3, 3), **ms_stats(times),
            "sqlite": sqlite3.sqlite_version}


def attempt(name, fn, *args):
    print(f"{name} ...", file=sys.stderr, flush=True)
    try:
        return fn(*args)
    except ImportError as e:
        return {"skipped": f"not installed: {e}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="/tmp/mnem-bench")
    ap.add_argument("--text-n", type=int, default=100_000)
    ap.add_argument("--vector-n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--skip-vectors", action="store_true")
    ap.add_argument("--vector-libs", default="hnswlib,usearch",
                    help="comma-separated: which vector libraries to run")
    ap.add_argument("--skip-texts", action="store_true")
    a = ap.parse_args()
    summary = {"vector_n": a.vector_n, "dim": a.dim, "text_n": a.text_n}
    if not a.skip_vectors:
        data, queries = load_vectors(a.out, a.vector_n, a.dim)
        truth = exact_top10(data, queries)
        summary["vector_queries"] = len(queries)
        libs = (("hnswlib", bench_hnswlib), ("usearch", bench_usearch))
        for name, fn in (lib for lib in libs if lib[0] in a.vector_libs.split(",")):
            r = summary[name] = attempt(name, fn, data, queries, truth)
            if "skipped" in r:
                print(f"{name}: skipped ({r['skipped']})")
            else:
                print(f"{name}, {a.vector_n} x {a.dim}-d, 1 thread: build {r['build_s']} s "
                      f"({r['build_ms_per_vector']} ms/vector), search p50 {r['p50_ms']} ms, "
                      f"p99 {r['p99_ms']} ms, recall@10 {r['recall_at_10']}")
    if not a.skip_texts:
        texts, queries = load_texts(a.out, a.text_n)
        summary["text_queries"] = len(queries)
        workdir = tempfile.mkdtemp(prefix="mnem-compare-")
        try:
            for name, fn in (("tantivy", bench_tantivy), ("fts5", bench_fts5)):
                r = summary[name] = attempt(name, fn, texts, queries, workdir)
                if "skipped" in r:
                    print(f"{name}: skipped ({r['skipped']})")
                else:
                    print(f"{name}, {a.text_n} texts: build {r['build_s']} s, reopen + first query "
                          f"{r['reopen_first_ms']} ms, BM25 top-10 p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()

"""The built-in embedder's throughput beside the model's reference implementation, in one run.

    . scripts/env && cargo build --release --lib && MODEL=$(scripts/model)
    python bench/embed_speed.py DIR [--n 400] [--embed previous2]

DIR is a LoCoMo-format folder (bench/retrieval.py); the texts are the first N turns as
bench/retrieval.py embeds them (`--embed`: `turn`, `speaker`, `previous2`, ...). mnem embeds
them through `mnem_put_episodes` with `"embed": true`, in calls of 20, on a store opened with
`{"embedder": "builtin"}` (the model from $MNEM_MODEL_DIR or where the library looks). When
`torch` and `sentence-transformers` import, the same texts go through
`SentenceTransformer.encode` in batches of 20, with torch given as many threads as the
machine has cores: the peer. Queries: the first N questions of the conversations, each once, as
a hybrid search with text alone (on an empty store: the time is the query's embedding).
Prints texts/s (median of --runs), the spread, and the ratio.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from mnem_env import ROOT  # noqa: E402,F401 (first: the binding and MNEM_LIB)

import mnem  # noqa: E402
import retrieval  # noqa: E402


def rate(n, f):
    t = time.perf_counter()
    f()
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--embed", default="previous2")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    convs = {f.stem: retrieval.load(f) for f in sorted(Path(a.dir).glob("*.json"))}
    texts = retrieval.embedded_texts(convs, a.embed)[:a.n]
    queries = [q["question"] for _, qs in convs.values() for q in qs][:a.n]
    tokens = None
    model_dir = os.environ.get("MNEM_MODEL_DIR")
    opts = {"embedder": "builtin", **({"model_dir": model_dir} if model_dir else {})}

    def mnem_put():
        with mnem.Store(":memory:", options=opts) as s:
            for i in range(0, len(texts), 20):
                s.put_episodes("a", "u", [{"primary": t, "embed": True} for t in texts[i:i + 20]])

    def mnem_query():
        with mnem.Store(":memory:", options=opts) as s:
            for q in queries:
                s.hybrid_search("a", "u", {"text": q})

    out = {"mnem put (texts/s)": [rate(len(texts), mnem_put) for _ in range(a.runs)],
           "mnem query embedded (queries/s)": [rate(len(queries), mnem_query) for _ in range(a.runs)]}
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers is not importable: mnem alone", file=sys.stderr)
    else:
        torch.set_num_threads(os.cpu_count())
        m = SentenceTransformer(model_dir or str(ROOT / "no-model-dir"), device="cpu")
        tokens = sum(len(m.tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in texts)

        def st():
            for i in range(0, len(texts), 20):
                m.encode(texts[i:i + 20], batch_size=20)
        out[f"sentence-transformers, torch {torch.__version__} (texts/s)"] = [rate(len(texts), st)
                                                                             for _ in range(a.runs)]
    print(f"{len(texts)} texts ({a.embed}){f', {tokens / len(texts):.0f} tokens each on average' if tokens else ''}, "
          f"{a.runs} runs, {os.cpu_count()} cores")
    for k, v in out.items():
        print(f"{k}: median {statistics.median(v):.1f} (range {min(v):.1f}-{max(v):.1f})")
    keys = list(out)
    if len(keys) == 3:
        print(f"mnem / sentence-transformers: {statistics.median(out[keys[0]]) / statistics.median(out[keys[2]]):.2f}x")


if __name__ == "__main__":
    main()

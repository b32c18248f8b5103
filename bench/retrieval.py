"""Retrieval quality on long conversations in the LoCoMo format, every system on the same turns
and questions in one run.

    scripts/python-env --retrieval      # the dev venv plus the peers and the MiniLM weights
    . scripts/env && cargo build --release --lib
    /var/cache/mnem/venv/bin/python bench/retrieval.py DIR [--weights 0.1,0.2,0.3,0.5]

DIR holds LoCoMo conversation files (`*.json`: `session_N` lists of turns with `speaker`,
`dia_id`, `text` and sometimes `blip_caption`; `session_N_date_time`; `qa` with `evidence`
and `category`). The data is not part of mnem: pass its directory.

Every turn is one memory: an ADK event with the turn's `dia_id` as its id and its speaker as
author, text plus ` [shares CAPTION]` when the turn shares a photo. One ADK session per LoCoMo
session, one namespace (and one index of each peer) per conversation. Each question is a
search of its own conversation. A system's top k is scored by evidence recall: the share of
the question's evidence turns among the k, averaged over the questions with evidence. R@5
and R@10 overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial), and the p50 of one search.

The systems:
- `adk`: google-adk's `InMemoryMemoryService` (the reference `mnem_search` reproduces).
- `mnem_search`: ADK's ranking from mnem's index (at most 10 memories, as ADK).
- `mnem_keyword`: `mnem_keyword_search`, exact BM25 (k1 1.2, b 0.75).
- `fts5`: SQLite FTS5 `bm25()`, the question's words OR-ed (its `unicode61` tokenizer);
  `fts5 porter`: the same with the Porter stemmer.
- `tantivy`: tantivy's BM25, the question's words OR-ed (its default tokenizer).
- `rank_bm25`: `rank_bm25.BM25Okapi` over lowercased `\\w+` tokens.
- `bm25s`: `bm25s` (Lucene BM25) over the same tokens.
- `dense`: exact cosine over all-MiniLM-L6-v2 vectors (`bench/minilm.py`) of each turn's text,
  or of the turn with its speaker, date or neighbours (`--embed`).
- `hybrid@W`: `mnem_hybrid_search` with the MiniLM vectors of turns and question, semantic
  weight W (RRF, rank constant 60).
- `builtin@W` (with `--builtin`): a store opened with `{"embedder": "builtin"}`, its defaults
  untouched: the library embeds every event as it is written (with the two before it in its
  session, `author: text`) and each question from its text alone (`mnem_hybrid_search` with
  no vector, semantic weight W; `builtin dense` is weight 1). Its ingest rate is printed.
  `builtin recall@0.5` is `mnem_recall` on that store, what `MnemMemoryService(embedder=
  "builtin")` answers: ADK's own ranking (not BM25) fused with the vectors.

Prints a table per metric and, last, one JSON line with every figure.
"""
import argparse
import asyncio
import collections
import hashlib
import json
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from mnem_env import ROOT  # noqa: E402,F401 (first: the binding and MNEM_LIB)

import numpy as np  # noqa: E402

import mnem  # noqa: E402

APP = "locomo"
KS = (5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
WORD = re.compile(r"\w+")


# ---- the data ---------------------------------------------------------------------------------

def session_time(s):
    """`1:56 pm on 8 May, 2023` as seconds since the epoch (UTC), or None."""
    try:
        return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()
    except (AttributeError, ValueError):
        return None


def turn_text(t):
    text = t.get("text") or ""
    if t.get("blip_caption"):
        text += f" [shares {t['blip_caption']}]"
    return text


def load(path):
    """One conversation: its sessions ([(session id, [turn event...])]) and its questions."""
    d = json.loads(Path(path).read_text(encoding="utf-8"))
    c = d.get("conversation", d)
    sessions = []
    for n in sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k)):
        base = session_time(c.get(f"session_{n}_date_time")) or float(n * 86400)
        events = []
        for i, t in enumerate(c[f"session_{n}"]):
            events.append({"id": t["dia_id"], "author": t["speaker"], "timestamp": base + i,
                           "content": {"role": "user", "parts": [{"text": turn_text(t)}]}})
        sessions.append((f"session_{n}", events))
    questions = []
    for q in d["qa"]:
        evidence = {e.strip() for ev in q.get("evidence") or [] for e in re.split(r"[;,]", ev) if e.strip()}
        if evidence:
            questions.append({"question": q["question"], "evidence": evidence, "category": q.get("category")})
    return sessions, questions


def text_of(event):
    return event["content"]["parts"][0]["text"]


# ---- the systems: each answers `search(conv, question) -> [turn id, ...]` best first ----------

class Adk:
    name = "adk"

    def __init__(self, convs):
        from google.adk.events.event import Event
        from google.adk.memory import InMemoryMemoryService
        from google.adk.sessions.session import Session
        self.svc = InMemoryMemoryService()

        async def add():
            for conv, (sessions, _) in convs.items():
                for sid, events in sessions:
                    s = Session(id=sid, app_name=APP, user_id=conv, events=[Event.model_validate(e) for e in events])
                    await self.svc.add_session_to_memory(s)
        asyncio.run(add())

    def search(self, conv, q):
        r = asyncio.run(self.svc.search_memory(app_name=APP, user_id=conv, query=q))
        return [m.id for m in r.memories]


class MnemStore:
    """One store for mnem's systems: events written through the ADK path, each with the
    vector of its embedded text (`vectors`: one per event, in write order) handed over by the
    store's embedder callback, which is asked for each event's own text in that order."""

    def __init__(self, convs, vectors):
        self.dir = tempfile.TemporaryDirectory()
        self.store = mnem.Store(os.path.join(self.dir.name, "store"), create=True)
        if vectors is not None:
            pending = {}
            events = [e for s, _ in convs.values() for _, evs in s for e in evs]
            for e, v in zip(events, vectors):
                pending.setdefault(text_of(e), collections.deque()).append(v.tolist())
            self.store.set_embedder(lambda text: pending[text].popleft())
        for conv, (sessions, _) in convs.items():
            for sid, events in sessions:
                self.store.add_events(APP, conv, sid, "\n".join(json.dumps(e) for e in events))
        self.store.set_embedder(None)


class BuiltinStore:
    """A store with the built-in embedder: the library makes every vector, events' and
    questions'. Reports the ingest rate (events/s with embedding)."""

    def __init__(self, convs, model_dir):
        self.dir = tempfile.TemporaryDirectory()
        opts = {"embedder": "builtin"}
        if model_dir:
            opts["model_dir"] = model_dir
        self.store = mnem.Store(os.path.join(self.dir.name, "store"), create=True, options=opts)
        n, t = 0, time.perf_counter()
        for conv, (sessions, _) in convs.items():
            for sid, events in sessions:
                for i in range(0, len(events), 20):  # as an agent writes: calls of 20 at most
                    batch = events[i:i + 20]
                    self.store.add_events(APP, conv, sid, "\n".join(json.dumps(e) for e in batch))
                    n += len(batch)
        self.rate = n / (time.perf_counter() - t)
        print(f"built-in embedder: {n} events written and embedded at {self.rate:.0f} events/s", file=sys.stderr)


class BuiltinHybrid:
    def __init__(self, m, weight):
        self.store, self.weight = m.store, weight
        self.name = "builtin dense" if weight == 1 else f"builtin@{weight:g}"

    def search(self, conv, q):
        query = {"text": q, "semantic_weight": self.weight, "limit": max(KS)}
        return [h["record"]["event_id"] for h in self.store.hybrid_search(APP, conv, query)["results"]]


class BuiltinRecall:
    """`mnem_recall` on the built-in embedder's store in one mode: what `MnemMemoryService(
    embedder="builtin", search_mode=mode)` answers (10 memories). `hybrid` fuses BM25 with the
    vectors, `adk_vectors` ADK's ranking; `bm25` and `adk` use no vector."""

    def __init__(self, m, weight, mode):
        self.store, self.weight, self.mode = m.store, weight, mode
        self.name = f"builtin recall {mode}@{weight:g}" if mode in ("hybrid", "adk_vectors") else f"recall {mode}"

    def search(self, conv, q):
        query = {"text": q, "semantic_weight": self.weight, "mode": self.mode}
        return [e["id"] for e in self.store.recall(APP, conv, query)["memories"]]


class MnemSearch:
    name = "mnem_search"

    def __init__(self, m):
        self.store = m.store

    def search(self, conv, q):
        return [e["id"] for e in self.store.search(APP, conv, q)["memories"]]


class MnemKeyword:
    name = "mnem_keyword"

    def __init__(self, m):
        self.store = m.store

    def search(self, conv, q):
        r = self.store.keyword_search(APP, conv, {"text": q, "limit": max(KS)})
        return [h["record"]["event_id"] for h in r["results"]]


class MnemHybrid:
    def __init__(self, m, embed, weight, candidates):
        self.store, self.embed, self.weight, self.candidates = m.store, embed, weight, candidates
        self.name = f"hybrid@{weight:g}"

    def search(self, conv, q):
        query = {"text": q, "vector": self.embed(q).tolist(), "semantic_weight": self.weight, "limit": max(KS)}
        if self.candidates is not None:
            query["candidates"] = self.candidates
        return [h["record"]["event_id"] for h in self.store.hybrid_search(APP, conv, query)["results"]]


class Fts5:
    def __init__(self, convs, tokenizer):
        self.name = "fts5" if tokenizer == "unicode61" else f"fts5 {tokenizer.split()[0]}"
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            f"CREATE VIRTUAL TABLE turns USING fts5(conv UNINDEXED, id UNINDEXED, body, tokenize = '{tokenizer}')")
        for conv, (sessions, _) in convs.items():
            self.db.executemany("INSERT INTO turns VALUES (?, ?, ?)",
                                [(conv, e["id"], text_of(e)) for _, evs in sessions for e in evs])

    def search(self, conv, q):
        words = WORD.findall(q.lower())
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.db.execute("SELECT id FROM turns WHERE turns MATCH ? AND conv = ? ORDER BY bm25(turns) LIMIT ?",
                               (match, conv, max(KS))).fetchall()
        return [r[0] for r in rows]


class Tantivy:
    name = "tantivy"

    def __init__(self, convs):
        import tantivy
        self.tantivy = tantivy
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("body", stored=False)
        self.schema = sb.build()
        self.indexes = {}
        for conv, (sessions, _) in convs.items():
            ix = tantivy.Index(self.schema)
            w = ix.writer()
            for _, evs in sessions:
                for e in evs:
                    w.add_document(tantivy.Document(id=e["id"], body=text_of(e)))
            w.commit()
            ix.reload()
            self.indexes[conv] = ix

    def search(self, conv, q):
        words = WORD.findall(q.lower())
        if not words:
            return []
        ix = self.indexes[conv]
        query = ix.parse_query(" OR ".join(words), ["body"])
        s = ix.searcher()
        return [s.doc(addr)["id"][0] for _, addr in s.search(query, max(KS)).hits]


def tokens(text):
    return WORD.findall(text.lower())


def best(ids, scores):
    """The ids of the top scores above zero, best first (ties in turn order)."""
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:max(KS)] if scores[i] > 0]


class RankBm25:
    name = "rank_bm25"

    def __init__(self, convs):
        from rank_bm25 import BM25Okapi
        self.ix = {}
        for conv, (sessions, _) in convs.items():
            ids = [e["id"] for _, evs in sessions for e in evs]
            self.ix[conv] = (ids, BM25Okapi([tokens(text_of(e)) for _, evs in sessions for e in evs]))

    def search(self, conv, q):
        ids, bm = self.ix[conv]
        return best(ids, bm.get_scores(tokens(q)))


class Bm25s:
    name = "bm25s"

    def __init__(self, convs):
        import bm25s
        self.ix = {}
        for conv, (sessions, _) in convs.items():
            ids = [e["id"] for _, evs in sessions for e in evs]
            r = bm25s.BM25()
            r.index([tokens(text_of(e)) for _, evs in sessions for e in evs], show_progress=False)
            self.ix[conv] = (ids, r)

    def search(self, conv, q):
        ids, r = self.ix[conv]
        toks = tokens(q)
        return best(ids, r.get_scores(toks)) if toks else []


class Dense:
    name = "dense"

    def __init__(self, convs, vectors, embed):
        self.embed = embed
        self.ix = {}
        at = 0
        for conv, (sessions, _) in convs.items():
            evs = [e for _, es in sessions for e in es]
            self.ix[conv] = ([e["id"] for e in evs], vectors[at:at + len(evs)])
            at += len(evs)

    def search(self, conv, q):
        ids, m = self.ix[conv]
        sims = m @ self.embed(q)
        return [ids[i] for i in np.argsort(-sims, kind="stable")[:max(KS)]]


# ---- embeddings, cached by text ---------------------------------------------------------------

class Embeddings:
    """MiniLM vectors, computed once per distinct text and kept in `cache` (a .npz) between runs."""

    def __init__(self, cache):
        self.cache_path = cache
        self.vecs = {}
        if cache and os.path.exists(cache):
            with np.load(cache) as z:
                self.vecs = dict(zip(z["keys"].tolist(), z["vecs"]))
        self.model = None

    def key(self, text):
        return hashlib.sha256(text.encode()).hexdigest()

    def many(self, texts):
        missing = sorted({t for t in texts if self.key(t) not in self.vecs})
        if missing:
            if self.model is None:
                from minilm import MiniLM
                self.model = MiniLM()
            for t, v in zip(missing, self.model.embed(missing)):
                self.vecs[self.key(t)] = v.astype(np.float32)
        return np.stack([self.vecs[self.key(t)] for t in texts])

    def one(self, text):
        return self.many([text])[0]

    def save(self):
        if self.cache_path:
            keys = list(self.vecs)
            np.savez(self.cache_path, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))


# ---- the run ----------------------------------------------------------------------------------

EMBEDDED = {
    "turn": "the turn's text alone",
    "speaker": "`speaker: text`",
    "date": "`session date, speaker: text`",
    "neighbours": "the turn after the one before it and before the one after it, each `speaker: text`",
    "previous": "the turn after the one before it, each `speaker: text` (known when the turn is written)",
    "previous2": "the turn after the two before it, each `speaker: text`",
    "previous4": "the turn after the four before it, each `speaker: text`",
}


def embedded_texts(convs, how):
    """The text embedded for each turn, in write order."""
    out = []
    for sessions, _ in convs.values():
        for _, evs in sessions:
            said = [f"{e['author']}: {text_of(e)}" for e in evs]
            for i, e in enumerate(evs):
                if how == "turn":
                    out.append(text_of(e))
                elif how == "speaker":
                    out.append(said[i])
                elif how == "date":
                    day = datetime.fromtimestamp(e["timestamp"], timezone.utc).strftime("%d %B %Y")
                    out.append(f"{day}, {said[i]}")
                elif how == "neighbours":
                    out.append(" ".join(said[max(0, i - 1):i + 2]))
                elif how == "previous":
                    out.append(" ".join(said[max(0, i - 1):i + 1]))
                elif how in ("previous2", "previous4"):
                    out.append(" ".join(said[max(0, i - int(how[-1])):i + 1]))
                else:
                    raise SystemExit(f"retrieval: --embed {how!r}: one of {', '.join(EMBEDDED)}")
    return out


def recall(found, evidence, k):
    return len(set(found[:k]) & evidence) / len(evidence)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--weights", default="0.1,0.2,0.3,0.5", help="semantic weights of mnem_hybrid_search")
    ap.add_argument("--cache", default="/var/cache/mnem/locomo-minilm.npz", help="MiniLM vectors kept between runs")
    ap.add_argument("--no-dense", action="store_true", help="lexical systems only (no MiniLM)")
    ap.add_argument("--embed", default="turn", help="the text embedded per turn: " + ", ".join(EMBEDDED))
    ap.add_argument("--candidates", type=int, default=None, help="mnem_hybrid_search's candidates per channel")
    ap.add_argument("--builtin", default=None, metavar="WEIGHTS",
                    help="also the built-in embedder's store, these semantic weights (e.g. 0.5,1)")
    ap.add_argument("--model-dir", default=os.environ.get("MNEM_MODEL_DIR"),
                    help="the built-in embedder's model folder (default: $MNEM_MODEL_DIR, else where the library looks)")
    ap.add_argument("--only-builtin", action="store_true", help="skip every other system but BM25 and ADK")
    a = ap.parse_args()
    files = sorted(Path(a.dir).glob("*.json"))
    if not files:
        sys.exit(f"retrieval: no *.json in {a.dir}")
    convs = {f.stem: load(f) for f in files}
    n_turns = sum(len(evs) for s, _ in convs.values() for _, evs in s)
    n_q = sum(len(qs) for _, qs in convs.values())
    print(f"{len(convs)} conversations, {n_turns} turns, {n_q} questions with evidence", file=sys.stderr)

    emb = None if a.no_dense or a.only_builtin else Embeddings(a.cache)
    vectors = None
    if emb:
        t = time.perf_counter()
        vectors = emb.many(embedded_texts(convs, a.embed))
        emb.many([q["question"] for _, qs in convs.values() for q in qs])
        emb.save()
        print(f"MiniLM vectors ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    store = MnemStore(convs, vectors)
    systems = [Adk(convs), MnemSearch(store), MnemKeyword(store)]
    if not a.only_builtin:
        systems += [Fts5(convs, "unicode61"), Fts5(convs, "porter unicode61"), Tantivy(convs), RankBm25(convs),
                    Bm25s(convs)]
    builtin = None
    if a.builtin:
        builtin = BuiltinStore(convs, a.model_dir)
        systems += [BuiltinHybrid(builtin, float(w)) for w in a.builtin.split(",") if w]
        systems += [BuiltinRecall(builtin, 0.5, mode) for mode in ("adk_vectors", "hybrid", "bm25")]
    if emb:
        systems.append(Dense(convs, vectors, emb.one))
        systems += [MnemHybrid(store, emb.one, float(w), a.candidates) for w in a.weights.split(",") if w]

    results = {}
    for sys_ in systems:
        per_cat = {}
        lat = []
        for conv, (_, qs) in convs.items():
            for q in qs:
                t = time.perf_counter()
                found = sys_.search(conv, q["question"])
                lat.append(time.perf_counter() - t)
                for k in KS:
                    per_cat.setdefault(("all", k), []).append(recall(found, q["evidence"], k))
                    per_cat.setdefault((q["category"], k), []).append(recall(found, q["evidence"], k))
        results[sys_.name] = {
            "p50_ms": statistics.median(lat) * 1e3,
            **{f"R@{k}": statistics.mean(per_cat[("all", k)]) for k in KS},
            **{f"R@10 {CATEGORIES.get(c, c)}": statistics.mean(v) for (c, k), v in sorted(
                per_cat.items(), key=lambda x: str(x[0])) if c != "all" and k == 10},
        }
        print(f"{sys_.name}: R@5 {results[sys_.name]['R@5']:.3f} R@10 {results[sys_.name]['R@10']:.3f} "
              f"p50 {results[sys_.name]['p50_ms']:.2f} ms", file=sys.stderr)
    store.store.close()
    if builtin:
        builtin.store.close()

    cols = ["R@5", "R@10"] + [f"R@10 {CATEGORIES[c]}" for c in sorted(CATEGORIES)] + ["p50_ms"]
    print("| system | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, r in results.items():
        print(f"| {name} | " + " | ".join(f"{r[c]:.3f}" if c in r else "" for c in cols) + " |")
    print(json.dumps({"conversations": len(convs), "turns": n_turns, "questions": n_q, "embedded": a.embed,
                      "candidates": a.candidates, "builtin_ingest_events_per_s": builtin.rate if builtin else None,
                      "results": results}))


if __name__ == "__main__":
    main()

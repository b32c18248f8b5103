"""Opt-in semantic recall through MnemMemoryService: with an embedder (sync or async, batch
`embed(texts)`), the library stores each event's and memory's vector with it and search_memory
answers by mnem_recall, finding what keyword search misses. What the library does with the
vectors (which texts it embeds, deletes, re-added sessions, recall copies of older stores, long
questions) is the conformance corpus's (tests/conformance/cases/embed_*.json,
recall_legacy_copies.json)."""
import asyncio

import pytest
from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

import mnem
from mnem.adk import MemoryEmbedder, MnemMemoryService

APP, USER = "app", "user"
# A toy embedding: each concept is one axis; a word counts toward the concept it belongs to.
CONCEPTS = {
    "drink": {"tea", "oolong", "coffee", "espresso", "beverage", "drink", "latte"},
    "pet": {"cat", "dog", "kitten", "puppy", "pet", "animal"},
    "travel": {"flight", "train", "trip", "journey", "travel", "lisbon"},
}


class ToyEmbedder:
    """Deterministic: the vector counts a text's words per concept (plus a small constant so
    that no vector is zero)."""

    dimensions = len(CONCEPTS) + 1

    def __init__(self):
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        out = []
        for t in texts:
            words = {w.strip(".,?!").lower() for w in t.split()}
            out.append([float(len(words & vocab)) for vocab in CONCEPTS.values()] + [0.01])
        return out


class AsyncToyEmbedder(ToyEmbedder):
    async def embed(self, texts):
        await asyncio.sleep(0)
        return ToyEmbedder.embed(self, texts)


def ev(eid, text, ts=1000.0):
    return Event(id=eid, invocation_id="i", author="user", timestamp=ts,
                 content=types.Content(parts=[types.Part(text=text)]))


def search(svc, q, user=USER):
    return asyncio.run(svc.search_memory(app_name=APP, user_id=user, query=q)).memories


def ids(svc, q, **kw):
    return [m.id for m in search(svc, q, **kw)]


def add_events(svc, events, session_id="s1", **kw):
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id=session_id, events=events, **kw))


@pytest.mark.parametrize("embedder_cls", [ToyEmbedder, AsyncToyEmbedder])
def test_hybrid_recalls_what_keyword_search_misses(embedder_cls):
    emb = embedder_cls()
    assert isinstance(emb, MemoryEmbedder)
    events = [ev("tea", "I always order an oolong at breakfast"), ev("cat", "my kitten sleeps all day"),
              ev("trip", "booked a train to Lisbon")]
    with MnemMemoryService() as plain, MnemMemoryService(embedder=emb) as semantic:
        for svc in (plain, semantic):
            add_events(svc, events)
        # No stored word is in the query: ADK's keyword ranking finds nothing.
        assert ids(plain, "favourite beverage?") == []
        hits = search(semantic, "favourite beverage?")
        assert hits[0].id == "tea"
        assert hits[0].content.parts[0].text == "I always order an oolong at breakfast"
        assert hits[0].author == "user" and hits[0].timestamp == search(plain, "oolong")[0].timestamp
        assert ids(semantic, "any pet news")[0] == "cat"
        # Keywords still count: an exact word ranks its event first.
        assert ids(semantic, "Lisbon")[0] == "trip"


def test_embeddings_are_stored_and_weights_documented():
    emb = ToyEmbedder()
    with MnemMemoryService(embedder=emb, semantic_weight=1.0) as svc:
        add_events(svc, [ev("a", "oolong tea"), ev("b", "a puppy")])
        # Weight 1: the vector channel alone ranks, nearest first (and keywords do not matter).
        assert ids(svc, "beverage") == ["a", "b"]
        # The events themselves carry their vectors (visible to the low-level API): no copies.
        res = svc.store.hybrid_search(APP, USER, {"text": "zzz", "vector": emb.embed(["drink"])[0],
                                                  "semantic_weight": 1.0})
        assert [r["record"]["event_id"] for r in res["results"]] == ["a", "b"]
        assert {r["record"]["episode_type"] for r in res["results"]} == {"event"}
    with MnemMemoryService(embedder=emb, semantic_weight=0.0) as svc:
        add_events(svc, [ev("a", "oolong tea")])
        assert ids(svc, "beverage") == [], "weight 0: the vector channel takes no part"
        assert ids(svc, "oolong") == ["a"]
    with pytest.raises(ValueError, match="semantic_weight"):
        MnemMemoryService(embedder=emb, semantic_weight=1.5)


def test_add_memory_is_recalled_semantically():
    with MnemMemoryService(embedder=ToyEmbedder()) as svc:
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(id="fact-1", content=types.Content(parts=[types.Part(text="prefers oolong")]), author="user")]))
        hits = search(svc, "what beverage")
        assert [m.id for m in hits] == ["fact-1"] and hits[0].content.parts[0].text == "prefers oolong"


def test_embedder_errors_are_named():
    class Wrong:
        dimensions = 3

        def embed(self, texts):
            return [[1.0, 2.0] for _ in texts]

    with MnemMemoryService(embedder=Wrong()) as svc:
        with pytest.raises(mnem.EmbedderFailed, match="2 numbers; its dimensions are 3"):
            add_events(svc, [ev("a", "tea")])
        assert svc.store.search(APP, USER, "tea")["memories"] == [], "nothing was written"
    with pytest.raises(TypeError, match="dimensions"):
        MnemMemoryService(embedder=object())


def test_without_embedder_recall_copies_are_not_written():
    with MnemMemoryService() as svc:
        add_events(svc, [ev("a", "oolong tea")])
        res = svc.store.keyword_search(APP, USER, {"text": "oolong"})["results"]
        assert [r["record"]["episode_type"] for r in res] == ["event"]

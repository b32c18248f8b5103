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


def test_store_named_embedder_records_its_model_and_refuses_another():
    emb = ToyEmbedder()
    with mnem.Store(":memory:") as s:
        s.set_embedder(lambda text: emb.embed([text])[0], model="toy-v1")
        s.put_episodes(APP, USER, [{"primary": "oolong tea", "embed": True}])
        assert s.namespace_stats(APP, USER)["embedding_model"] == "toy-v1"
        s.set_embedder(lambda text: emb.embed([text])[0], model="toy-v2")
        with pytest.raises(mnem.InvalidArgument) as e:
            s.put_episodes(APP, USER, [{"primary": "a puppy", "embed": True}])
        assert e.value.status == mnem.InvalidArgument.status and e.value.status_name == "INVALID_ARGUMENT"
        assert "toy-v1" in e.value.message and "toy-v2" in e.value.message
        assert s.namespace_stats(APP, USER)["live"] == 1, "nothing was written"
        # The per-call embedder is named by vector_model.
        res = s.hybrid_search_text(APP, USER, "tea", lambda text: emb.embed([text])[0], vector_model="toy-v1")
        assert [r["record"]["primary"] for r in res["results"]] == ["oolong tea"]
        with pytest.raises(mnem.InvalidArgument, match="toy-v1"):
            s.hybrid_search_text(APP, USER, "tea", lambda text: emb.embed([text])[0], vector_model="toy-v2")
        with pytest.raises(mnem.InvalidArgument, match="model"):
            s.set_embedder(lambda text: emb.embed([text])[0], model="")
        s.set_embedder(None, model="ignored")  # removes it, the name ignored


def test_memory_service_names_its_embedders_model():
    with MnemMemoryService(embedder=ToyEmbedder(), embedding_model="m") as svc:
        assert svc.embedding_model == "m"
        add_events(svc, [ev("a", "oolong tea")])
        assert svc.store.namespace_stats(APP, USER)["embedding_model"] == "m"
        assert ids(svc, "beverage") == ["a"]
        # The same store with an unnamed embedder: its vectors would mix with "m"'s, refused.
        svc.store.set_embedder(lambda text: [1.0, 0.0, 0.0, 0.01])
        with pytest.raises(mnem.InvalidArgument, match='"m"'):
            add_events(svc, [ev("b", "a puppy")])
    with pytest.raises(ValueError, match="embedding_model.*embedder="):
        MnemMemoryService(embedding_model="m")
    with pytest.raises(ValueError, match="builtin"):
        MnemMemoryService(embedder="builtin", embedding_model="m")
    with pytest.raises(ValueError, match="embedding_model.*embedder="):
        MnemMemoryService(uri="mnem://:memory:?embedder=none", embedding_model="m")
    with pytest.raises(mnem.InvalidArgument, match="model"):
        MnemMemoryService(embedder=ToyEmbedder(), embedding_model="x" * 257)

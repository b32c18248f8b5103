"""Opt-in semantic recall: with an embedder, the library stores each event's and memory's
vector with it and search_memory answers by mnem_recall, finding what keyword search misses."""
import asyncio
import hashlib

import pytest
from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
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


def test_unchanged_events_are_not_embedded_again():
    emb = ToyEmbedder()
    with MnemMemoryService(embedder=emb) as svc:
        s = Session(app_name=APP, user_id=USER, id="s", last_update_time=1, events=[ev("a", "oolong tea")])
        asyncio.run(svc.add_session_to_memory(s))
        s.events.append(ev("b", "a puppy", 1001.0))
        asyncio.run(svc.add_session_to_memory(s))
        assert emb.calls == [["oolong tea"], ["a puppy"]]
        assert ids(svc, "pet animal") == ["b", "a"]


def test_delete_memory_removes_recall_and_blocks_the_id():
    with MnemMemoryService(embedder=ToyEmbedder()) as svc:
        add_events(svc, [ev("a", "oolong tea"), ev("b", "espresso")])
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="a"))
        assert ids(svc, "beverage") == ["b"]
        # ADK skips a deleted id for good; so does its recall copy, in any session.
        add_events(svc, [ev("a", "oolong tea")], session_id="s2")
        assert ids(svc, "beverage") == ["b"]


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


def test_long_questions_are_answered():
    """BM25 takes at most 64 distinct terms and 4096 bytes; a longer question still answers."""
    with MnemMemoryService(embedder=ToyEmbedder()) as svc:
        add_events(svc, [ev("a", "oolong tea"), ev("b", "a puppy")])
        many = "beverage " + " ".join(f"w{i}" for i in range(200)) + " oolong"
        assert ids(svc, many)[0] == "a"
        assert ids(svc, "pet " + "x" * 6000)[0] == "b"
        # No terms at all: the vector channel alone answers.
        assert sorted(ids(svc, "!!! ???")) == ["a", "b"]
        assert ids(svc, "   ") == []


def session(sid, *events):
    return Session(app_name=APP, user_id=USER, id=sid, last_update_time=1, events=list(events))


def recall_copies(svc, word):
    """The stored events (memory ids) holding `word` that carry a vector: what semantic
    recall can find (the vectors live on the events themselves)."""
    q = {"text": word, "limit": 100, "vector": [1.0, 1.0, 1.0, 1.0], "semantic_weight": 0.5}
    return sorted(r["record"]["event_id"] for r in svc.store.hybrid_search(APP, USER, q)["results"]
                  if r["semantic_score"] > 0 and r["keyword_score"] > 0)


def test_recall_copies_follow_what_the_store_keeps():
    """Every memory hybrid search returns is one the store holds, and delete_memory removes it."""
    with MnemMemoryService(embedder=ToyEmbedder()) as svc:
        # A session added again with fewer events (ADK's rewind): the dropped event goes.
        asyncio.run(svc.add_session_to_memory(session("s", ev("a", "oolong tea"), ev("b", "a puppy", 1001.0))))
        assert recall_copies(svc, "puppy") == ["b"]
        asyncio.run(svc.add_session_to_memory(session("s", ev("a", "oolong tea"))))
        assert svc.store.search(APP, USER, "puppy")["memories"] == []
        assert recall_copies(svc, "puppy") == []
        assert "b" not in ids(svc, "pet animal")
        # Appending an id the session already holds keeps the first event, in the store and
        # in recall.
        add_events(svc, [ev("c", "espresso")], session_id="t")
        add_events(svc, [ev("c", "a kitten")], session_id="t")
        assert [m["id"] for m in svc.store.search(APP, USER, "espresso")["memories"]] == ["c"]
        assert (recall_copies(svc, "espresso"), recall_copies(svc, "kitten")) == (["c"], [])
        # The same id in two sessions: deleting one session leaves the other's copy.
        add_events(svc, [ev("d", "lisbon trip")], session_id="u1")
        add_events(svc, [ev("d", "lisbon trip")], session_id="u2")
        assert recall_copies(svc, "lisbon") == ["d", "d"]
        assert asyncio.run(svc.delete_session(app_name=APP, user_id=USER, session_id="u2")) == 1
        assert [m["id"] for m in svc.store.search(APP, USER, "lisbon")["memories"]] == ["d"]
        assert recall_copies(svc, "lisbon") == ["d"]
        assert ids(svc, "travel journey")[0] == "d"
        # What search returns, delete_memory removes.
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="d"))
        assert recall_copies(svc, "lisbon") == []
        assert "d" not in ids(svc, "travel journey")


def test_a_store_written_with_recall_copies_keeps_working(tmp_path):
    """A store written by the service before recall moved into the library: events without
    vectors, and recall copies (episodes of type adk_recall) and burial marks written with
    put_episodes, as that service wrote them. The new service answers from it, and the
    library's deletes hide the copies without any cleanup."""
    emb = ToyEmbedder()
    path = tmp_path / "old"
    with MnemMemoryService(path) as plain:
        add_events(plain, [ev("tea", "I always order an oolong"), ev("cat", "my kitten sleeps")])
    with mnem.Store(str(path)) as st:
        copies = []
        for eid, text in [("tea", "I always order an oolong"), ("cat", "my kitten sleeps")]:
            copies.append({"episode_type": "adk_recall", "primary": text,
                           "secondary": "zmnemm" + hashlib.sha256(eid.encode()).hexdigest()[:32],
                           "content": {"parts": [{"text": text}]}, "event_id": eid, "session_id": "s1",
                           "timestamp": 1000.0, "author": "user", "embedding": emb.embed([text])[0]})
        st.put_episodes(APP, USER, copies)
        st.put_episodes(APP, USER, [{"episode_type": "adk_recall_deleted", "secondary": "zmnemmgone"}])
    with MnemMemoryService(path, embedder=emb) as svc:
        hits = search(svc, "favourite beverage?")
        assert [m.id for m in hits][:1] == ["tea"]
        assert hits[0].author == "user" and hits[0].content.parts[0].text == "I always order an oolong"
        assert ids(svc, "any pet news")[0] == "cat"
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="tea"))
        assert "tea" not in ids(svc, "favourite beverage?")
        # New events get their vectors on themselves, beside the old copies.
        add_events(svc, [ev("latte", "a latte please")], session_id="s2")
        assert ids(svc, "coffee drink")[0] == "latte"

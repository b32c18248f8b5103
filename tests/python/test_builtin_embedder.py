"""The built-in embedder from the installed wheel: the model ships inside it, so a store opened
with {"embedder": "builtin"} and MnemMemoryService(embedder="builtin") (or the URI option
embedder=builtin) get semantic search with no model download and no embedder of the caller's.
The vectors themselves are checked against the model's reference implementation by
tests/builtin_embedder.rs; this is what a Python user sees of them."""
import asyncio

import pytest
from google.adk.events import Event
from google.genai import types

import mnem
from mnem.adk import MnemMemoryService

APP, USER = "app", "user"


def ev(eid, author, text, ts):
    return Event(id=eid, invocation_id="i", author=author, timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part(text=text)]))


def test_store_with_the_builtin_embedder_searches_by_meaning():
    with mnem.Store(":memory:", options={"embedder": "builtin"}) as s:
        s.put_episodes(APP, USER, [{"primary": "Alice prefers green tea", "embed": True},
                                   {"primary": "the printer on floor two is broken", "embed": True}])
        # No word in common with either note: the vector channel alone decides.
        hits = s.hybrid_search(APP, USER, {"text": "a hot drink"})["results"]
        assert [h["record"]["primary"] for h in hits][0] == "Alice prefers green tea"
        assert hits[0]["keyword_score"] == 0 and hits[0]["semantic_score"] > 0


@pytest.mark.parametrize("how", ["keyword", "uri"])
def test_memory_service_recalls_with_the_builtin_embedder(how):
    svc = (MnemMemoryService(embedder="builtin") if how == "keyword"
           else MnemMemoryService(uri="mnem://:memory:?embedder=builtin"))
    try:
        events = [ev("q", "ana", "Where did you spend your holidays?", 1.0),
                  ev("a", "ben", "We rented a cabin in the mountains and skied every day.", 2.0),
                  ev("x", "ana", "The quarterly budget review moved to Thursday.", 3.0)]
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=events))
        found = asyncio.run(svc.search_memory(app_name=APP, user_id=USER, query="winter sports trip")).memories
        # ADK's own ranking finds nothing (no word in common); the model's vectors do.
        assert found and found[0].id == "a"
        assert svc.store.search(APP, USER, "winter sports trip")["memories"] == []
    finally:
        svc.close()


def test_builtin_option_errors_are_named():
    with pytest.raises(ValueError, match="embedder"):
        MnemMemoryService(embedder="bert")
    with pytest.raises(ValueError, match="expected builtin or none"):
        MnemMemoryService(uri="mnem://:memory:?embedder=bert")
    with pytest.raises(mnem.MnemError, match="model_dir"):
        mnem.Store(":memory:", options={"embedder": "builtin", "model_dir": "/nonexistent/model"})

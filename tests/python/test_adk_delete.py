"""Deletion beyond ADK's delete_memory: delete what one session added, and forget a user so
that their text is gone from the store's files."""
import asyncio
from pathlib import Path

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session
from google.genai import types

import mnem
from mnem.adk import MnemMemoryService

APP, USER, OTHER = "app", "user", "other"


def ev(eid, text, ts=1000.0):
    return Event(id=eid, invocation_id="i", author="user", timestamp=ts,
                 content=types.Content(parts=[types.Part(text=text)]))


def session(sid, *events):
    return Session(app_name=APP, user_id=USER, id=sid, last_update_time=1, events=list(events))


def store_files_hold(d, needle):
    return any(needle in p.read_bytes() for p in Path(d).iterdir() if p.is_file())


def ids(svc, q, user=USER):
    return [m.id for m in asyncio.run(svc.search_memory(app_name=APP, user_id=user, query=q)).memories]


def test_store_delete_session_and_forget_namespace(store_dir):
    with mnem.Store(store_dir) as st:
        st.add_session(APP, USER, "s1", [ev("a", "tea one").model_dump_json(), ev("b", "tea two").model_dump_json()])
        st.add_events(APP, USER, "", [ev("c", "tea three").model_dump_json()])
        assert st.delete_session(APP, USER, "s1") == 2
        assert st.delete_session(APP, USER, "nope") == 0
        assert [m["id"] for m in st.search(APP, USER, "tea")["memories"]] == ["c"]
        assert st.delete_session(APP, USER, "__unknown_session_id__") == 1
        st.add_events(APP, OTHER, "s", [ev("d", "tea four").model_dump_json()])
        st.forget_namespace(APP, OTHER)
        assert st.search(APP, OTHER, "tea")["memories"] == []
        st.forget_namespace(APP, "nobody")  # nothing stored: a no-op
        # A deleted session's text stays in older table files until a compaction.
        st.add_session(APP, USER, "s9", [ev("z", "zyxgone plum").model_dump_json()])
        st.add_session(APP, USER, "s10", [ev("k", "kept kiwi").model_dump_json()])
        st.flush()
        assert st.delete_session(APP, USER, "s9") == 1
        assert store_files_hold(store_dir, b"zyxgone plum")
        st.compact()
        assert not store_files_hold(store_dir, b"zyxgone plum")
        # One word, not the phrase: LZ4 may split a phrase into a literal and a back-reference.
        assert store_files_hold(store_dir, b"kiwi")
        assert [m["id"] for m in st.search(APP, USER, "kiwi")["memories"]] == ["k"]
    with mnem.Store(store_dir, read_only=True) as ro:
        with pytest.raises(mnem.ReadOnly):
            ro.compact()
        with pytest.raises(mnem.ReadOnly):
            ro.forget_namespace(APP, USER)
        with pytest.raises(mnem.ReadOnly):
            ro.delete_session(APP, USER, "s1")


def test_delete_session_ranks_as_if_never_added():
    """After delete_session, search answers like ADK's service that never saw the session."""
    s1 = session("s1", ev("a", "green tea"), ev("b", "black tea"))
    s2 = session("s2", ev("c", "white tea"))
    s3 = session("s3", ev("d", "tea ceremony"))
    ref = InMemoryMemoryService()
    with MnemMemoryService() as svc:
        for s in (s1, s2, s3):
            asyncio.run(svc.add_session_to_memory(s))
        for s in (s2, s3):
            asyncio.run(ref.add_session_to_memory(s))
        assert asyncio.run(svc.delete_session(app_name=APP, user_id=USER, session_id="s1")) == 2
        assert ids(svc, "tea") == ids(ref, "tea") == ["c", "d"]
        # The session may come back; it then ranks after every existing one.
        asyncio.run(svc.add_session_to_memory(s1))
        asyncio.run(ref.add_session_to_memory(s1))
        assert ids(svc, "tea") == ids(ref, "tea")


class Toy:
    dimensions = 2

    def embed(self, texts):
        return [[1.0, float(len(t))] for t in texts]


def test_delete_session_removes_what_recall_finds():
    with MnemMemoryService(embedder=Toy(), semantic_weight=1.0) as svc:
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[ev("a", "x")]))
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("b", "y")]))
        assert sorted(ids(svc, "anything")) == ["a", "b"]
        assert asyncio.run(svc.delete_session(app_name=APP, user_id=USER, session_id="s1")) == 1
        assert ids(svc, "anything") == ["b"]
        assert asyncio.run(svc.delete_session(app_name=APP, user_id=USER, session_id=None)) == 1
        assert ids(svc, "anything") == []
        # "" and ADK's "__unknown_session_id__" name the same bucket, as in add_events_to_memory.
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="", events=[ev("c", "z")]))
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="__unknown_session_id__",
                                             events=[ev("d", "w")]))
        assert sorted(ids(svc, "anything")) == ["c", "d"]
        assert asyncio.run(svc.delete_session(app_name=APP, user_id=USER, session_id="")) == 2
        assert ids(svc, "anything") == []
        # A deleted session may be added again, with its recall.
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[ev("a", "x")]))
        assert ids(svc, "anything") == ["a"]


def files_holding(directory: Path, needle: bytes) -> list[str]:
    return [str(p) for p in directory.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_forget_user_erases_their_text_from_the_files(tmp_path):
    secret = "zanzibarquokka my passport number is 7T3X9"
    kept = "kept memory of the other user: kumquat"
    path = tmp_path / "store"
    with MnemMemoryService(path, embedder=Toy()) as svc:
        for i in range(3):
            asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id=f"s{i}",
                                                 events=[ev(f"e{i}", f"{secret} {i}")]))
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=OTHER, events=[ev("k", kept)]))
        svc.store.flush()
        assert ids(svc, "zanzibarquokka") == ["e0", "e1", "e2"]
        assert files_holding(path, b"zanzibarquokka"), "the search below must be able to see the text"
        asyncio.run(svc.forget_user(app_name=APP, user_id=USER))
        assert ids(svc, "zanzibarquokka") == []
        assert ids(svc, "kumquat", user=OTHER) == ["k"]
        # The namespace may be used again, as a new one.
        asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("n", "fresh start")]))
    # Closed: every byte the store keeps is in its directory.
    assert files_holding(path, b"zanzibarquokka") == []
    assert files_holding(path, b"7T3X9") == []
    assert files_holding(path, b"kumquat"), "the other user's memory is still stored (the search is real)"

"""A delete_memory tombstone holds for every write path of MnemMemoryService: add_memory
(any id form), add_events_to_memory and add_session_to_memory, live and after reopen."""
import asyncio

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

import mnem
from mnem.adk import MnemMemoryService

APP, USER = "app", "user"


def run(coro):
    return asyncio.run(coro)


def entry(mid, text):
    return MemoryEntry(id=mid, content=types.Content(role="user", parts=[types.Part(text=text)]), author="user")


def event(eid, text, ts=1.0):
    return Event(id=eid, invocation_id="inv", author="user", timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part(text=text)]))


def ids(service, query):
    res = run(service.search_memory(app_name=APP, user_id=USER, query=query))
    return [m.id for m in res.memories]


@pytest.mark.parametrize("mid", ["pref-1", "0190a5f4-8d6e-7c3b-9a41-2f5e6d7c8b9a"])
def test_add_memory_after_delete_memory_is_refused(store_dir, mid):
    svc = MnemMemoryService(store_dir, create=True)
    run(svc.add_memory(app_name=APP, user_id=USER, memories=[entry(mid, "likes green tea")]))
    assert ids(svc, "tea") == [mid]
    run(svc.delete_memory(app_name=APP, user_id=USER, memory_id=mid))
    assert ids(svc, "tea") == []
    with pytest.raises(mnem.InvalidArgument) as e:
        run(svc.add_memory(app_name=APP, user_id=USER,
                           memories=[entry("fresh", "black tea"), entry(mid, "likes green tea again")]))
    assert mid in str(e.value)
    assert ids(svc, "tea") == [], "the whole call was refused, its valid entry included"
    svc.close_sync()
    svc = MnemMemoryService(store_dir, create=False)
    assert ids(svc, "tea") == []
    svc.close_sync()


def test_event_adds_after_delete_memory_match_adk():
    """ADK skips tombstoned ids silently on its own add paths; so does mnem."""
    services = [InMemoryMemoryService(), MnemMemoryService(":memory:")]
    for svc in services:
        run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1",
                                     events=[event("n0", "oolong tea"), event("n1", "jasmine tea")]))
        run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="n0"))
        run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="s2", events=[event("n0", "oolong tea")]))
        run(svc.add_session_to_memory(Session(app_name=APP, user_id=USER, id="s1", last_update_time=1,
                                              events=[event("n0", "oolong tea"), event("n1", "jasmine tea")])))
    assert ids(services[0], "tea") == ["n1"]
    assert ids(services[1], "tea") == ids(services[0], "tea")
    services[1].close_sync()

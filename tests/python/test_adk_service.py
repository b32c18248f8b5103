"""ADK's own InMemoryMemoryService unit tests (google-adk tests/unittests/memory/
test_in_memory_memory_service.py), ported to the search-visible API and run against
MnemMemoryService. Each test also runs against ADK's service, which proves the ported
expectations are ADK's; where ADK's test inspects the service's private dict, the port drives
both services through the same calls in one test and compares every answer. Then mnem-only
behaviour: add_memory, persistence.

ADK's tests 1, 2, 6, 8-13, 15 and 16 (matching, case, scoping by user, '/' in identifiers,
ranking by matching words, the top ten, first write wins) are the conformance corpus's cases
adk_search, adk_add_events, adk_top_ten, adk_unicode and namespaces_isolated, which
tests/python/test_conformance.py replays through mnem.Store; the tests here keep what goes
through MnemMemoryService's own code (Event and MemoryEntry conversion, async, threads).
"""
import asyncio
import threading
import time
import unicodedata

import pytest
from google.adk.events import Event
from google.adk.memory import BaseMemoryService, InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from mnem.adk import MnemMemoryService

APP = "test-app"
USER = "test-user"
OTHER = "another-user"


def mk_event(eid, text, ts, author="user"):
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=eid, invocation_id=f"inv-{eid}", author=author, timestamp=ts, content=content)


def session_1():
    return Session(app_name=APP, user_id=USER, id="session-1", last_update_time=1000, events=[
        mk_event("event-1a", "The ADK is a great toolkit.", 12345),
        mk_event("event-1b", None, 12346),
        mk_event("event-1c", "I agree. The Agent Development Kit (ADK) rocks!", 12347, author="model"),
    ])


def session_2():
    return Session(app_name=APP, user_id=USER, id="session-2", last_update_time=2000,
                   events=[mk_event("event-2a", "I like to code in Python.", 54321)])


def session_other_user():
    return Session(app_name=APP, user_id=OTHER, id="session-3", last_update_time=3000,
                   events=[mk_event("event-3a", "This is a secret.", 60000)])


def session_no_events():
    return Session(app_name=APP, user_id=USER, id="session-4", last_update_time=4000, events=[])


@pytest.fixture(params=["adk", "mnem"])
def service(request):
    if request.param == "adk":
        yield InMemoryMemoryService()
    else:
        svc = MnemMemoryService()
        yield svc
        svc.close_sync()


def search(svc, query, app=APP, user=USER):
    return asyncio.run(svc.search_memory(app_name=app, user_id=user, query=query)).memories


def ids(svc, query, **kw):
    return [m.id for m in search(svc, query, **kw)]


def texts(memories):
    return [m.content.parts[0].text for m in memories]


def add_session(svc, s):
    asyncio.run(svc.add_session_to_memory(s))


def add_events(svc, events, session_id=None, **kw):
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=events, session_id=session_id, **kw))


def answers(svc, query):
    """Everything a caller sees of a search: ids, authors, timestamps, contents, metadata."""
    return [m.model_dump() for m in search(svc, query)]


@pytest.fixture
def both():
    """ADK's service and mnem's, to drive through the same calls and compare."""
    svc = MnemMemoryService()
    yield InMemoryMemoryService(), svc
    svc.close_sync()


def same_answers(pair, *queries):
    adk, mnem = pair
    for q in queries:
        assert answers(mnem, q) == answers(adk, q), q


def test_is_a_base_memory_service():
    svc = MnemMemoryService()
    assert isinstance(svc, BaseMemoryService)
    svc.close_sync()


# 3: ADK asserts the user has exactly one bucket, holding event-1a. Its observable rules: the
# omitted id, "" and "__unknown_session_id__" name that one bucket (ids deduplicate across the
# spellings), it ranks by the position it got first, and a session of that name replaces it.
def test_add_events_to_memory_without_session_id_uses_default_bucket(both):
    for svc in both:
        add_events(svc, [session_1().events[0]])
        assert ids(svc, "toolkit") == ["event-1a"]
        add_session(svc, Session(app_name=APP, user_id=USER, id="other", last_update_time=1,
                                 events=[mk_event("o", "toolkit o", 1)]))
        add_events(svc, [mk_event("event-1a", "toolkit dup", 2), mk_event("c", "toolkit c", 3)], session_id="")
        add_events(svc, [mk_event("d", "toolkit d", 4)], session_id="__unknown_session_id__")
        assert ids(svc, "toolkit") == ["event-1a", "c", "d", "o"]
        assert search(svc, "dup") == []
    same_answers(both, "toolkit", "dup", "toolkit c")
    for svc in both:
        add_session(svc, Session(app_name=APP, user_id=USER, id="__unknown_session_id__", last_update_time=1,
                                 events=[mk_event("z", "toolkit z", 5)]))
        assert ids(svc, "toolkit") == ["z", "o"]
    same_answers(both, "toolkit", "dup")


# 5
def test_add_events_to_memory_appends_without_replacing(service):
    add_session(service, session_1())
    add_events(service, [mk_event("event-1d", "A new fact. The end", 12348)], session_id="session-1")
    assert ids(service, "the") == ["event-1a", "event-1c", "event-1d"]


# 7: ADK asserts the session's bucket exists and is empty. Observable: it holds its position
# (events added to it later rank before a later session's), and adding a session without
# events empties that session's bucket.
def test_add_session_with_no_events_to_memory(both):
    for svc in both:
        add_session(svc, session_no_events())
        add_session(svc, session_1())
        add_events(svc, [mk_event("event-4a", "The ADK, later", 5)], session_id="session-4")
        assert ids(svc, "ADK") == ["event-4a", "event-1a", "event-1c"]
    same_answers(both, "ADK", "later", "toolkit")
    for svc in both:
        add_session(svc, Session(app_name=APP, user_id=USER, id="session-1", last_update_time=2, events=[]))
        assert ids(svc, "ADK") == ["event-4a"]
    same_answers(both, "ADK", "toolkit")


def nfd(s):
    return unicodedata.normalize("NFD", s)


NON_LATIN_CASES = [
    ("私の名前は太郎です", "太郎", 1),
    ("私の名前は太郎です", "天気", 0),
    ("我喜欢机器学习", "机器学习", 1),
    ("我喜欢机器学习", "天气预报", 0),
    ("제 이름은 민수입니다", "민수입니다", 1),
    ("Меня зовут Алексей", "Алексей", 1),
    ("太郎 works at ABC Corp", "太郎", 1),
    ("太郎 works at ABC Corp", "ABC", 1),
    ("私はPythonでADKを使っています", "Python", 1),
    ("私はPythonでADKを使っています", "adk", 1),
    ("我用Python写代码", "python", 1),
    ("私はPythonでADKを使っています", "使って", 1),
    ("私はPythonでADKを使っています", "Java", 0),
    ("I like to code in Python.", "thon", 0),
    ("私はPythonでADKを使っています", "thon", 0),
    (nfd("私はCaféでADKを使っています"), "Café", 1),
    (nfd("私はCaféでADKを使っています"), "café", 1),
    (nfd("私はCaféでADKを使っています"), "Ruby", 0),
    (nfd("Meet at the Café"), "Café", 1),
    ("Meet at the Café", nfd("Café"), 1),
    (nfd("プログラミングを学ぶ"), "プログラミング", 1),
    (nfd("제 이름은 민수입니다"), "민수입니다", 1),
]


# 14
@pytest.mark.parametrize("event_text,query,expected", NON_LATIN_CASES)
def test_search_memory_non_latin(service, event_text, query, expected):
    add_session(service, Session(app_name=APP, user_id=USER, id="i18n", last_update_time=1,
                                 events=[mk_event("event-i18n", event_text, 1)]))
    result = search(service, query)
    assert len(result) == expected
    if expected:
        assert result[0].content.parts[0].text == event_text  # returned as ingested, not normalized


# 17
def test_search_memory_is_thread_safe_against_concurrent_writes(service):
    for i in range(50):
        add_session(service, Session(app_name=APP, user_id=USER, id=f"early-{i}", last_update_time=i,
                                     events=[mk_event(f"early-{i}", f"fact about early-{i}", i)]))
    errors = []

    def writer():
        async def go():
            for i in range(500):
                await service.add_session_to_memory(Session(
                    app_name=APP, user_id=USER, id=f"w-{i}", last_update_time=i,
                    events=[mk_event(f"w-{i}", f"fact about writer-{i}", i)]))
        try:
            asyncio.run(go())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def reader():
        async def go():
            for _ in range(500):
                await service.search_memory(app_name=APP, user_id=USER, query="fact")
        try:
            asyncio.run(go())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(search(service, "fact")) == 10


# 18
@pytest.mark.parametrize("ingest_session", [True, False])
def test_ingested_memories_do_not_follow_caller_event_mutations(service, ingest_session):
    event = mk_event("jasmine", "I prefer jasmine tea.", 1)
    s = Session(app_name=APP, user_id=USER, id="tea", last_update_time=1, events=[event])
    if ingest_session:
        add_session(service, s)
    else:
        add_events(service, [event], session_id="tea")
    event.author = "mutated"
    event.content.parts[0].text = "I prefer oolong tea."

    def unchanged():
        result = search(service, "jasmine")
        assert len(result) == 1
        assert result[0].author == "user"
        assert result[0].content.parts[0].text == "I prefer jasmine tea."

    unchanged()
    # The mutated event sent again: a delta to its session changes nothing (first write wins);
    # to another bucket it is a new memory; re-adding the session replaces the bucket.
    add_events(service, [event], session_id="tea")
    unchanged()
    assert search(service, "oolong") == []
    add_events(service, [event])
    unchanged()
    assert [(m.author, m.content.parts[0].text) for m in search(service, "oolong")] == [
        ("mutated", "I prefer oolong tea.")]
    add_session(service, s)
    assert search(service, "jasmine") == []
    assert len(search(service, "oolong")) == 2


# 19
@pytest.mark.parametrize("ingest_session", [True, False])
def test_retrieved_memories_do_not_mutate_storage_or_session_history(service, ingest_session):
    event = mk_event("jasmine", "I prefer jasmine tea.", 1)
    s = Session(app_name=APP, user_id=USER, id="tea", last_update_time=1, events=[event])
    if ingest_session:
        add_session(service, s)
    else:
        add_events(service, [event], session_id="tea")
    first = search(service, "jasmine")
    first[0].content.parts.clear()
    again = search(service, "jasmine")
    assert texts(again) == ["I prefer jasmine tea."]
    assert s.events[0].content.parts[0].text == "I prefer jasmine tea."
    # The changed memories sent back as events of the session: emptied (no parts) is not
    # ingested, edited has a known id (first write wins). Storage keeps the original.
    add_events(service, [Event(id=first[0].id, author="user", timestamp=1, content=first[0].content)],
               session_id="tea")
    again[0].content.parts[0].text = "I prefer oolong tea."
    add_events(service, [Event(id=again[0].id, author="model", timestamp=1, content=again[0].content)],
               session_id="tea")
    assert [(m.id, m.author, m.content.parts[0].text) for m in search(service, "jasmine")] == [
        ("jasmine", "user", "I prefer jasmine tea.")]
    assert search(service, "oolong") == []


# ---- 2.13.0 delete_memory (verified behaviour, no upstream unit test) --------------------------

def test_delete_memory_tombstones_the_id(service):
    add_session(service, session_1())
    add_events(service, [mk_event("event-1a", "The ADK copy", 5)], session_id="elsewhere")
    assert ids(service, "ADK") == ["event-1a", "event-1c", "event-1a"]
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id="event-1a"))
    assert ids(service, "ADK") == ["event-1c"]
    add_session(service, session_1())  # re-adding the session does not resurrect it
    add_events(service, [mk_event("event-1a", "ADK again", 6)], session_id="new-bucket")
    assert ids(service, "ADK") == ["event-1c"]
    # Unknown ids and empty ids: no-op, and no tombstone for an id never stored.
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id="later"))
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER, memory_id=""))
    asyncio.run(service.delete_memory(app_name=APP, user_id=USER))
    add_events(service, [mk_event("later", "ADK later", 7)])
    assert ids(service, "ADK") == ["event-1c", "later"]
    # Tombstones are per user.
    asyncio.run(service.add_session_to_memory(Session(app_name=APP, user_id=OTHER, id="x", last_update_time=1,
                                                      events=[mk_event("event-1a", "ADK other", 8)])))
    assert ids(service, "ADK", user=OTHER) == ["event-1a"]


def test_timestamps_are_local_time_iso(service):
    add_session(service, Session(app_name=APP, user_id=USER, id="t", last_update_time=1, events=[
        mk_event("t0", "clock zero", 0.0), mk_event("t1", "clock half", 1700000000.5),
        mk_event("t2", "clock carry", 1700000000.9999996)]))
    assert [m.timestamp for m in search(service, "clock")] == [
        "1970-01-01T05:30:00", "2023-11-15T03:43:20.500000", "2023-11-15T03:43:21"]


# ---- mnem-only -------------------------------------------------------------------------------

def test_add_memory_is_searchable_and_deletable():
    with MnemMemoryService() as svc:
        entry = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text="I prefer green tea")]),
                            author="user", timestamp="2024-01-01T10:00:00", custom_metadata={"source": "chat"})
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[entry]))
        (m,) = search(svc, "green")
        assert m.content == entry.content
        assert m.author == "user"
        assert m.timestamp == "2024-01-01T10:00:00"
        assert m.id
        # The lexical APIs see it as an episode of type "memory".
        hits = svc.store.keyword_search(APP, USER, {"text": "green tea", "episode_type": "memory"})["results"]
        assert len(hits) == 1 and hits[0]["record"]["metadata"] == {"source": "chat"}
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id=m.id))
        assert search(svc, "green") == []


def test_add_memory_ids():
    with MnemMemoryService() as svc:
        def mem(t, mid):
            return MemoryEntry(id=mid, content=types.Content(role="user", parts=[types.Part(text=t)]))
        uid = "0190a5c4-1b2c-7d3e-8f40-123456789abc"
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[
            mem("likes hiking", "pref-1"), mem("likes chess", uid)]))
        assert sorted(ids(svc, "likes")) == sorted(["pref-1", uid])
        # A UUID id names the episode: adding it again updates it.
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[mem("likes go", uid)]))
        assert sorted(texts(search(svc, "likes"))) == ["likes go", "likes hiking"]
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="pref-1"))
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id=uid))
        assert search(svc, "likes") == []


def test_add_memory_tags_and_ttl():
    with MnemMemoryService() as svc:
        def mem(t):
            return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=t)]))
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[mem("short lived fact")],
                                   custom_metadata={"ttl_ms": 1}))
        asyncio.run(svc.add_memory(app_name=APP, user_id=USER, memories=[mem("tagged fact")],
                                   custom_metadata={"tags": ["pref"], "ignored": object()}))
        time.sleep(0.01)
        assert texts(search(svc, "fact")) == ["tagged fact"]
        hits = svc.store.keyword_search(APP, USER, {"text": "fact", "tag": "pref"})["results"]
        assert [h["record"]["primary"] for h in hits] == ["tagged fact"]


def test_memories_persist_across_reopen(tmp_path):
    path = str(tmp_path / "mem")
    with MnemMemoryService(path) as svc:
        add_session(svc, session_1())
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="event-1c"))
    with MnemMemoryService(path, create=False) as svc:
        assert ids(svc, "ADK") == ["event-1a"]
        add_session(svc, session_1())  # the tombstone persisted too
        assert ids(svc, "ADK") == ["event-1a"]
    with MnemMemoryService(path, read_only=True, create=False) as svc:
        assert ids(svc, "ADK") == ["event-1a"]

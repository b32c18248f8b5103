"""MnemMemoryService's search controls beyond ADK: the mode, the limit, the minimum score and
the filters by session, author and time, as constructor (and URI) defaults and per call.
Each answer is checked against what the store's own searches say it must be: ADK's answer
filtered by hand, or BM25's ranking of the events (`mnem_keyword_search`)."""
import asyncio
import time
from datetime import datetime

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session
from google.genai import types

from mnem.adk import MnemMemoryService, parse_uri

APP, USER = "app", "user"
WORDS = ["tea", "train", "lisbon", "cat", "sofa", "red", "green", "apple", "bread", "noon"]


def sessions():
    """Three sessions of twelve events, two authors, times 1000 to 1035 (deterministic text)."""
    out = []
    k = 7
    for s in range(3):
        events = []
        for i in range(12):
            words = []
            for _ in range(2 + k % 4):
                k = (k * 1103515245 + 12345) % (1 << 31)
                words.append(WORDS[k % len(WORDS)])
            author = "user" if i % 2 == 0 else "model"
            events.append(Event(id=f"e{s}-{i}", invocation_id="inv", author=author, timestamp=1000 + s * 12 + i,
                                content=types.Content(parts=[types.Part(text=" ".join(words))])))
        out.append(Session(app_name=APP, user_id=USER, id=f"s{s}", last_update_time=0, events=events))
    return out


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def service():
    svc = MnemMemoryService(":memory:")
    for s in sessions():
        run(svc.add_session_to_memory(s))
    yield svc
    svc.close_sync()


def ids(resp):
    return [m.id for m in resp.memories]


def bm25_ids(svc, text, limit=10, **filters):
    q = {"text": text, "limit": limit, **filters}
    return [h["record"]["event_id"] for h in svc.store.keyword_search(APP, USER, q)["results"]]


QUERIES = ["tea", "red sofa", "train to lisbon", "apple bread noon"]


def test_no_option_answers_as_adk():
    adk = InMemoryMemoryService()
    svc = MnemMemoryService(":memory:")
    for s in sessions():
        run(adk.add_session_to_memory(s))
        run(svc.add_session_to_memory(s))
    for q in QUERIES:
        want = run(adk.search_memory(app_name=APP, user_id=USER, query=q))
        got = run(svc.search_memory(app_name=APP, user_id=USER, query=q))
        assert got == want
        assert got.memories
    svc.close_sync()


def test_adk_mode_with_filters_ranks_as_adk_over_the_accepted_events(service):
    """A filter in mode adk answers as google-adk's service holding only the events it accepts."""
    for keep, kwargs in [
        (lambda s, e: e.author == "model", {"author": "model"}),
        (lambda s, e: s.id == "s1", {"session_id": "s1"}),
        (lambda s, e: 1005 <= e.timestamp < 1030, {"since": 1005, "until": datetime.fromtimestamp(1030)}),
    ]:
        adk = InMemoryMemoryService()
        for s in sessions():
            s.events = [e for e in s.events if keep(s, e)]
            run(adk.add_session_to_memory(s))
        for q in QUERIES:
            want = run(adk.search_memory(app_name=APP, user_id=USER, query=q))
            got = run(service.search_memory(app_name=APP, user_id=USER, query=q, **kwargs))
            assert got == want, (q, kwargs)
    full = run(service.search_memory(app_name=APP, user_id=USER, query="tea"))
    got = run(service.search_memory(app_name=APP, user_id=USER, query="tea", limit=3))
    assert ids(got) == ids(full)[:3]


def test_bm25_mode_ranks_as_keyword_search(service):
    for q in QUERIES:
        got = run(service.search_memory(app_name=APP, user_id=USER, query=q, mode="bm25"))
        assert ids(got) == bm25_ids(service, q)
        assert got.memories and all(m.content.parts[0].text for m in got.memories)
        got = run(service.search_memory(app_name=APP, user_id=USER, query=q, mode="bm25", limit=25,
                                        session_id="s2", since=1026, until=datetime.fromtimestamp(1032)))
        assert ids(got) == bm25_ids(service, q, 25, session_id="s2", since=1026, until=1032)
        assert all(i.startswith("e2-") and 1026 <= 1024 + int(i.split("-")[1]) < 1032 for i in ids(got))
    # Without an embedder, hybrid is BM25 alone.
    assert ids(run(service.search_memory(app_name=APP, user_id=USER, query="tea", mode="hybrid"))) == \
        bm25_ids(service, "tea")


def test_min_score_cuts_the_ranking(service):
    scores = service.store.keyword_search(APP, USER, {"text": "red sofa"})["results"]
    cut = scores[len(scores) // 2]["score"]
    got = run(service.search_memory(app_name=APP, user_id=USER, query="red sofa", mode="bm25", min_score=cut))
    assert ids(got) == [h["record"]["event_id"] for h in scores if h["score"] >= cut]
    with pytest.raises(ValueError, match="min_score"):
        run(service.search_memory(app_name=APP, user_id=USER, query="tea", min_score=0.5))


def test_constructor_and_uri_defaults():
    path, opts = parse_uri("mnem://:memory:?mode=bm25&limit=5&min_score=0.1&author=user&max_age=60")
    assert path == ":memory:"
    assert opts == {"search_mode": "bm25", "search_limit": 5, "min_score": 0.1, "author": "user", "max_age": 60.0}
    svc = MnemMemoryService(uri="mnem://:memory:?mode=bm25&limit=4&author=user")
    for s in sessions():
        run(svc.add_session_to_memory(s))
    got = run(svc.search_memory(app_name=APP, user_id=USER, query="tea red"))
    assert ids(got) == bm25_ids(svc, "tea red", 4, author="user")
    # A call overrides the default.
    got = run(svc.search_memory(app_name=APP, user_id=USER, query="tea red", author="model", limit=2))
    assert ids(got) == bm25_ids(svc, "tea red", 2, author="model")
    svc.close_sync()
    # max_age: events older than that are left out (these are from 1970).
    svc = MnemMemoryService(":memory:", max_age=3600)
    for s in sessions():
        run(svc.add_session_to_memory(s))
    assert run(svc.search_memory(app_name=APP, user_id=USER, query="tea")).memories == []
    recent = Event(id="now", invocation_id="inv", author="user", timestamp=time.time(),
                   content=types.Content(parts=[types.Part(text="tea now")]))
    run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=[recent], session_id="s9"))
    assert ids(run(svc.search_memory(app_name=APP, user_id=USER, query="tea"))) == ["now"]
    svc.close_sync()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"search_mode": "fast"}, ValueError, "search mode"),
    ({"search_limit": 0}, ValueError, "search limit"),
    ({"search_limit": 101}, ValueError, "search limit"),
    ({"min_score": 0.1}, ValueError, "min_score needs a scored search mode"),
    ({"search_mode": "bm25", "min_score": float("nan")}, ValueError, "min_score"),
    ({"max_age": 0}, ValueError, "max_age"),
    ({"author": 3}, TypeError, "author"),
])
def test_bad_options_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        MnemMemoryService(":memory:", **kwargs)


def test_bad_uri_options_are_refused():
    with pytest.raises(ValueError, match="mode='fast'"):
        parse_uri("mnem://:memory:?mode=fast")
    with pytest.raises(ValueError, match="limit"):
        parse_uri("mnem://:memory:?limit=many")


def test_bad_call_arguments_are_refused(service):
    with pytest.raises(TypeError, match="a time"):
        run(service.search_memory(app_name=APP, user_id=USER, query="tea", since="yesterday"))
    with pytest.raises(ValueError, match="search limit"):
        run(service.search_memory(app_name=APP, user_id=USER, query="tea", limit=0))

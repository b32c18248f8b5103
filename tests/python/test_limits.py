"""The one meaning of a limit (docs/WIRE.md): absent or None is the query's default (10
results, 100 namespaces); 0 returns no results where the query accepts it."""
import pytest

import mnem

APP, USER = "app", "limits"
DEFAULT = 10


@pytest.fixture
def store():
    with mnem.Store(":memory:") as s:
        s.put_episodes(APP, USER, [{"primary": f"apple {i}", "embedding": [1.0, float(i)]}
                                   for i in range(DEFAULT + 5)])
        yield s


def never(text):
    raise AssertionError("a search that needs no vector asked for one")


def test_absent_limit_is_the_default(store):
    assert len(store.keyword_search(APP, USER, {"text": "apple"})["results"]) == DEFAULT
    assert len(store.keyword_search(APP, USER, {"text": "apple", "limit": None})["results"]) == DEFAULT
    assert len(store.substring_search(APP, USER, {"text": "apple"})["results"]) == DEFAULT
    assert len(store.lexical_page(APP, USER, {"text": "apple"})["hits"]) == DEFAULT
    assert len(store.hybrid_search(APP, USER, {"text": "apple"})["results"]) == DEFAULT
    assert len(store.hybrid_search(APP, USER, {"text": "apple", "vector": [1, 0]})["results"]) == DEFAULT
    assert len(store.hybrid_search_text(APP, USER, "apple", lambda t: [1.0, 0.0])["results"]) == DEFAULT


def test_zero_limit_returns_nothing(store):
    assert store.keyword_search(APP, USER, {"text": "apple", "limit": 0}) == {"results": []}
    assert store.substring_search(APP, USER, {"text": "apple", "limit": 0}) == {"results": []}
    assert store.hybrid_search(APP, USER, {"text": "apple", "limit": 0}) == {"results": []}
    assert store.hybrid_search_text(APP, USER, "apple", never, limit=0) == {"results": []}


def test_pages_reject_a_zero_limit(store):
    # A page must make progress: its range starts at 1.
    with pytest.raises(mnem.InvalidArgument, match="limit"):
        store.lexical_page(APP, USER, {"text": "apple", "limit": 0})
    with pytest.raises(mnem.InvalidArgument, match="limit"):
        store.list_namespaces(limit=0)


def test_namespace_page_default(store):
    for i in range(100):
        store.put_episodes("ns", f"u{i:03d}", [{"primary": "x"}])
    page = store.list_namespaces()
    assert len(page["namespaces"]) == 100 and page["next_after"] is not None

"""Store management through the binding, what is Python's own: iter_namespaces, PathLike paths,
export's arguments and export_pages. Answers and refusals: the conformance corpus."""
import json

import pytest

import mnem

APP, USER = "app", "user"


def event(eid, text):
    return json.dumps({"id": eid, "author": "user", "timestamp": 1000.0, "invocation_id": "i",
                       "content": {"parts": [{"text": text}], "role": "user"}})


@pytest.fixture
def store(store_dir):
    with mnem.Store(store_dir) as st:
        yield st


def test_list_and_iterate_namespaces(store):
    for i in range(5):
        store.put_episodes(f"app{i}", "u", [{"primary": "x"}] * (i + 1))
    page = store.list_namespaces(limit=2)
    assert len(page["namespaces"]) == 2 and page["next_after"] is not None
    every = list(store.iter_namespaces(page=2))
    assert [(n["app_name"], n["episodes"]) for n in every] == [(f"app{i}", i + 1) for i in range(5)]


def test_paths_pages_and_arguments(store, tmp_path):
    """Backups, exports and imports answer as the store: the corpus (check_backup_compact,
    export_import, export_page). Here: a PathLike destination, export's arguments, and
    export_pages, which follows the cursors itself."""
    store.add_session(APP, USER, "s1", [event("e1", "green tea"), event("e2", "black tea")])
    store.put_episodes(APP, "other", [{"primary": "vector note", "embedding": [1.0, 0.5]}])
    store.backup(tmp_path / "copy")
    with mnem.Store(tmp_path / "copy", create=False) as copy:
        assert copy.search(APP, USER, "tea") == store.search(APP, USER, "tea")
    with pytest.raises(ValueError, match="both"):
        store.export(APP)
    dump = store.export(APP, USER)
    pages = list(store.export_pages(APP, USER, max_bytes=200))
    assert len(pages) > 2 and b"".join(pages) == dump
    assert b"".join(store.export_pages()) == store.export() != dump

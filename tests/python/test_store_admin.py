"""Store management through the binding: get, list, stats, backup, check, export/import,
delete_session and forget_namespace (the C functions' own tests are in tests/c)."""
import json
import uuid

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


def test_get_episodes_in_request_order_with_none_for_missing(store):
    a, b = store.put_episodes(APP, USER, [{"primary": "alpha"}, {"primary": "beta"}])
    store.delete_episodes(APP, USER, [b])
    got = store.get_episodes(APP, USER, [b, a, uuid.UUID(int=7)])
    assert got[0] is None and got[2] is None
    assert got[1]["id"] == str(a) and got[1]["primary"] == "alpha"
    with pytest.raises(mnem.InvalidArgument, match="line 1"):
        store.get_episodes(APP, USER, ["not-a-uuid"])


def test_list_and_iterate_namespaces(store):
    for i in range(5):
        store.put_episodes(f"app{i}", "u", [{"primary": "x"}] * (i + 1))
    page = store.list_namespaces(limit=2)
    assert len(page["namespaces"]) == 2 and page["next_after"] is not None
    every = list(store.iter_namespaces(page=2))
    assert [(n["app_name"], n["episodes"]) for n in every] == [(f"app{i}", i + 1) for i in range(5)]
    with pytest.raises(mnem.InvalidArgument):
        store.list_namespaces(limit=0)


def test_backup_export_import_answer_the_same(store, tmp_path):
    store.add_session(APP, USER, "s1", [event("e1", "green tea"), event("e2", "black tea")])
    store.delete_memory(APP, USER, "e2")
    store.put_episodes(APP, USER, [{"primary": "vector note", "embedding": [1.0, 0.5]}])
    want = store.search(APP, USER, "tea")
    store.backup(tmp_path / "copy")
    with pytest.raises(mnem.InvalidArgument):
        store.backup(tmp_path / "copy")  # exists
    with mnem.Store(tmp_path / "copy", create=False) as copy:
        assert copy.search(APP, USER, "tea") == want
    dump = store.export(APP, USER)
    assert dump == store.export(APP, USER) and dump.count(b"\n") >= 3
    with pytest.raises(ValueError, match="both"):
        store.export(APP)
    with mnem.Store(tmp_path / "imported") as other:
        assert other.import_export(dump) == 3
        assert other.search(APP, USER, "tea") == want
        # The deleted id stays deleted in the imported store.
        other.add_events(APP, USER, "s2", [event("e2", "black tea")])
        assert other.search(APP, USER, "tea") == want
        with pytest.raises(mnem.InvalidArgument):
            other.import_export(dump)  # the namespace now holds data
    assert b'"app"' in store.export()  # every namespace
    pages = list(store.export_pages(APP, USER, max_bytes=200))
    assert len(pages) > 2 and b"".join(pages) == dump
    assert b"".join(store.export_pages()) == store.export()



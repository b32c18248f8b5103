"""Unit tests of the ctypes binding through the real library."""
import ctypes
import json
import threading
import uuid
from pathlib import Path

import pytest

import mnem
from mnem import _lib as L

APP, USER = "app", "user"


def ev(eid, text, ts=1700000000.0, author="user"):
    return {"id": eid, "author": author, "timestamp": ts,
            "content": {"role": "user", "parts": [{"text": text}]}}


def jl(*events):
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events)


def ids(result):
    return [m["id"] for m in result["memories"]]


def test_library_path_candidates_are_ordered(monkeypatch):
    # Pure-Python: runs even when the library is not built, so pytest always collects a test.
    monkeypatch.delenv("MNEM_LIB", raising=False)
    monkeypatch.setenv("CARGO_TARGET_DIR", "/nonexistent/t")
    c = L.candidate_paths()
    assert c == [L.bundled_path(), Path("/nonexistent/t/release/libmnem.so")]
    assert L.bundled_path().parent == Path(mnem.__file__).resolve().parent
    monkeypatch.delenv("CARGO_TARGET_DIR")
    assert L.candidate_paths() == [L.bundled_path()]
    monkeypatch.setenv("MNEM_LIB", "/x/libmnem.so")
    assert L.candidate_paths()[0] == Path("/x/libmnem.so")
    assert str(L.find_library()) == "/x/libmnem.so"


def test_library_exports_every_planned_function():
    lib = L.lib()
    assert lib.missing == [], f"{lib.path} lacks {lib.missing}"
    assert mnem.abi_version() == 1
    assert mnem.version()  # status names and messages: the corpus (static_names)
    lib.mnem_free(None)  # no-op


def test_open_close_memory_store():
    s = mnem.Store(":memory:")
    assert s.add_session(APP, USER, "s1", jl(ev("e1", "hello world"))) == 1
    assert ids(s.search(APP, USER, "hello")) == ["e1"]
    s.close()
    s.close()  # idempotent
    assert s.closed
    with pytest.raises(ValueError):
        s.search(APP, USER, "hello")


def test_invalid_utf8_is_rejected():
    with mnem.Store(":memory:") as s:
        bad = b'{"id":"e1","author":"u","timestamp":1.0,"content":{"parts":[{"text":"caf\xe9"}]}}'
        with pytest.raises(mnem.InvalidArgument):
            s.add_session(APP, USER, "s1", bad)
        with pytest.raises(mnem.InvalidArgument):
            s.add_session(b"ap\xffp", USER, "s1", jl(ev("e1", "x")))
        with pytest.raises(mnem.InvalidArgument):
            s.search(APP, USER, b"\xc3")
        with pytest.raises(mnem.InvalidArgument):
            s.delete_memory(APP, b"\xed\xa0\x80", "e1")  # encoded surrogate
        assert ids(s.search(APP, USER, "x")) == []


def test_buffer_grows_for_large_results():
    big = "needle " + "x" * 100_000
    with mnem.Store(":memory:") as s:
        s.add_session(APP, USER, "s1", jl(*[ev(f"e{i}", big + str(i)) for i in range(10)]))
        res = s.search(APP, USER, "needle")
        assert ids(res) == [f"e{i}" for i in range(10)]
        assert all(m["content"]["parts"][0]["text"] == big + str(i) for i, m in enumerate(res["memories"]))


def test_add_events_custom_metadata_ttl_and_unknown_keys():
    with mnem.Store(":memory:") as s:
        s.add_events(APP, USER, "s1", jl(ev("a", "ephemeral")), {"ttl_ms": 1, "whatever": object()})
        s.add_events(APP, USER, "s1", jl(ev("b", "ephemeral")), {"tags": ["t"], "other": {"x": 1}})
        import time
        time.sleep(0.01)
        assert ids(s.search(APP, USER, "ephemeral")) == ["b"]


def test_episodes_take_dicts_and_return_uuids():
    # Fields, ranking and revisions are the conformance corpus's; here the Python types: dicts
    # in, uuid.UUID out (v7, in line order), UUID objects accepted where ids go in.
    with mnem.Store(":memory:") as s:
        got = s.put_episodes(APP, USER, [{"primary": "the quick brown fox", "metadata": {"k": 1}},
                                         {"primary": "lazy dog", "context": "Straße"}])
        assert len(got) == 2 and all(isinstance(u, uuid.UUID) and u.version == 7 for u in got)
        assert got == sorted(got)
        (same,) = s.put_episodes(APP, USER, [{"id": str(got[0]), "primary": "renamed fox"}])
        assert same == got[0]
        assert [e["revision"] for e in s.get_episodes(APP, USER, [got[0], uuid.UUID(int=7)]) if e] == [2]
        assert s.delete_episodes(APP, USER, [got[0], uuid.uuid4()]) == 1
        assert s.keyword_search(APP, USER, {"text": "fox"})["results"] == []


@pytest.mark.parametrize("guess", [None, 0, 16, 256])
def test_put_episodes_ids_skip_blank_and_whitespace_lines(monkeypatch, guess):
    # The ids line up with the lines that are not blank (empty, spaces and tabs, CR), whatever
    # the first size of the ids buffer: a guess too small costs one retry and writes once.
    if guess is not None:
        monkeypatch.setattr(mnem._store, "_ids_guess", lambda data: guess)
    a, b = uuid.UUID("0190f0a0-0000-7000-8000-00000000000a"), uuid.UUID("0190f0a0-0000-7000-8000-00000000000b")
    data = ("\n" + json.dumps({"id": str(a), "primary": "apple"}) + "\r\n \t \n"
            + json.dumps({"primary": "generated"}) + "\n\r\n" + json.dumps({"id": str(b), "primary": "banana"})
            + "\n   \n")
    with mnem.Store(":memory:") as s:
        for given in (data, data.encode()):
            got = s.put_episodes(APP, USER, given)
            assert len(got) == 3 and got[0] == a and got[2] == b and got[1] not in (a, b)
            eps = s.get_episodes(APP, USER, got)
            assert [e["primary"] for e in eps] == ["apple", "generated", "banana"]
        # Twice: a, b at revision 2, and two generated episodes, each written once.
        assert s.namespace_stats(APP, USER)["live"] == 4
        assert [e["revision"] for e in s.get_episodes(APP, USER, [a, b])] == [2, 2]
        # Only blank lines, and a bad line after blank lines: the corpus (episodes_put_v2, episodes_invalid).


def test_concurrent_readers_and_writer():
    errors = []
    with mnem.Store(":memory:") as s:
        def writer():
            try:
                for i in range(200):
                    s.add_events(APP, USER, f"s{i % 7}", jl(ev(f"w{i}", f"fact number {i}")))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        def reader():
            try:
                for _ in range(200):
                    assert len(s.search(APP, USER, "fact")["memories"]) <= 10
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert errors == []


def test_second_open_from_another_process_is_busy(store_dir):
    import subprocess
    import sys
    code = ("import sys, mnem\n"
            "try:\n    mnem.Store(sys.argv[1])\nexcept mnem.Busy:\n    sys.exit(42)\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(L.Path(mnem.__file__).parents[1]))
    with mnem.Store(store_dir):
        r = subprocess.run([sys.executable, "-c", code, store_dir], env=env, capture_output=True, text=True)
        assert r.returncode == 42, r.stderr
    r = subprocess.run([sys.executable, "-c", code, store_dir], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_long_error_message_is_truncated_on_a_character_boundary():
    with mnem.Store(":memory:") as s:
        err = L.ErrorBuf()
        line = json.dumps({"primary": "x", "é" * 700: 1}, ensure_ascii=False)
        st = L.lib().mnem_put_episodes(s._handle, L.mstr(APP), L.mstr(USER), L.mstr(line), (ctypes.c_uint8 * 16)(),
                                       16, ctypes.byref(err))
        assert st == mnem.INVALID_ARGUMENT and err.code == st
        msg = err.message  # up to the NUL
        assert 0 < len(msg) <= 511
        msg.decode("utf-8")  # strict: no split character


def test_expired_events_do_not_take_top_ten_slots():
    with mnem.Store(":memory:") as s:
        s.add_events(APP, USER, "s", jl(*[ev(f"x{i}", "common word") for i in range(12)]), {"ttl_ms": 1})
        s.add_events(APP, USER, "s", jl(*[ev(f"k{i}", "common word") for i in range(3)]))
        import time
        time.sleep(0.01)
        assert ids(s.search(APP, USER, "common")) == ["k0", "k1", "k2"]

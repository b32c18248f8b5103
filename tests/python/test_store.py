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
    assert mnem.version()
    assert mnem.status_name(0) == "OK"
    assert mnem.status_name(1) == "INVALID_ARGUMENT"
    assert mnem.status_name(2) == "BUFFER_TOO_SMALL"
    assert mnem.status_name(4) == "BUSY"
    assert mnem.status_name(100) == "INTERNAL"
    assert mnem.status_name(12345) == "UNKNOWN"
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


def test_cache_bytes_option_and_stats(store_dir):
    with pytest.raises(mnem.InvalidArgument, match="cache_bytes"):
        mnem.Store(":memory:", options={"cache_bytes": 1000})
    with mnem.Store(store_dir, options={"cache_bytes": 8 << 20}) as s:
        s.add_session(APP, USER, "s1", jl(ev("e1", "hello world")))
        st = s.stats()
    assert st["cache_bytes"] == 8 << 20
    assert st["block_cache"]["budget_bytes"] == 2 << 20
    assert st["graph_cache"]["budget_bytes"] == 6 << 20
    assert st["format"] == st["opened_format"] == 3
    assert st["journal_replayed"] == 0
    with mnem.Store(store_dir) as s:
        assert ids(s.search(APP, USER, "hello")) == ["e1"]
        st = s.stats()
    assert st["cache_bytes"] == 256 << 20  # the default
    assert st["block_cache"]["misses"] > 0  # the search read blocks from the reopened files


def test_memory_stores_are_independent():
    with mnem.Store(":memory:") as a, mnem.Store(":memory:") as b:
        a.add_session(APP, USER, "s1", jl(ev("e1", "hello")))
        assert ids(b.search(APP, USER, "hello")) == []


@pytest.mark.parametrize("memory", [True, False], ids=[":memory:", "dir"])
def test_flush(store_dir, memory):
    # Same behaviour for both kinds of store (include/mnem.h, mnem_flush): flush succeeds; the
    # data stays readable.
    with mnem.Store(":memory:" if memory else store_dir) as s:
        s.add_session(APP, USER, "s1", jl(ev("e1", "flushed")))
        s.flush()
        assert ids(s.search(APP, USER, "flushed")) == ["e1"]


def test_persistence_across_reopen(store_dir):
    with mnem.Store(store_dir, sync_writes=True) as s:
        s.add_session(APP, USER, "s1", jl(ev("e1", "persisted words")))
    with mnem.Store(store_dir, create=False) as s:
        assert ids(s.search(APP, USER, "persisted")) == ["e1"]


def test_second_open_of_same_dir_is_busy(store_dir):
    with mnem.Store(store_dir):
        with pytest.raises(mnem.Busy) as ei:
            mnem.Store(store_dir)
        assert ei.value.status == mnem.BUSY and ei.value.status_name == "BUSY"
    mnem.Store(store_dir).close()  # released on close


def test_missing_dir_without_create_is_not_found(tmp_path):
    with pytest.raises(mnem.NotFound) as ei:
        mnem.Store(str(tmp_path / "nope"), create=False)
    assert ei.value.status == mnem.NOT_FOUND


def test_write_on_read_only_handle(store_dir):
    with mnem.Store(store_dir) as s:
        s.add_session(APP, USER, "s1", jl(ev("e1", "alpha")))
    with mnem.Store(store_dir, read_only=True) as s:  # create defaults to False here
        assert ids(s.search(APP, USER, "alpha")) == ["e1"]
        for write in (
            lambda: s.add_session(APP, USER, "s2", jl(ev("e2", "beta"))),
            lambda: s.add_events(APP, USER, "s2", jl(ev("e2", "beta"))),
            lambda: s.delete_memory(APP, USER, "e1"),
            lambda: s.put_episodes(APP, USER, [{"primary": "x"}]),
        ):
            with pytest.raises(mnem.ReadOnly) as ei:
                write()
            assert ei.value.status == mnem.READ_ONLY
        assert ids(s.search(APP, USER, "alpha")) == ["e1"]


def test_create_and_read_only_together_is_invalid(store_dir):
    with pytest.raises(mnem.InvalidArgument):
        mnem.Store(store_dir, create=True, read_only=True)


def test_unknown_option_key_is_invalid(store_dir):
    with pytest.raises(mnem.InvalidArgument) as ei:
        mnem.Store(store_dir, options={"sync_writez": True})
    assert "sync_writez" in ei.value.message


def test_malformed_json_line_names_the_line_and_writes_nothing():
    with mnem.Store(":memory:") as s:
        buf = jl(ev("e1", "first good"), ev("e2", "second good")) + "\n{not json\n" + jl(ev("e4", "fourth"))
        for call in (lambda: s.add_session(APP, USER, "s1", buf),
                     lambda: s.add_events(APP, USER, "s1", buf)):
            with pytest.raises(mnem.InvalidArgument) as ei:
                call()
            assert ei.value.status == mnem.INVALID_ARGUMENT
            assert "3" in ei.value.message, ei.value.message
        assert ids(s.search(APP, USER, "good")) == []


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


def test_null_pointer_with_length_is_invalid_and_err_may_be_null():
    lib = L.lib()
    with mnem.Store(":memory:") as s:
        h = s._handle
        err = L.ErrorBuf()
        n = ctypes.c_uint64(0)
        st = lib.mnem_add_session(h, L.mstr(APP), L.mstr(USER), L.MnemStr(None, 5), L.mstr(""), ctypes.byref(n),
                                  ctypes.byref(err))
        assert st == mnem.INVALID_ARGUMENT and err.code == st and err.message
        st = lib.mnem_add_session(h, L.mstr(APP), L.mstr(USER), L.mstr("s"), L.mstr(jl(ev("e1", "y"))), None, None)
        assert st == mnem.OK
        # Success clears the message.
        err = L.ErrorBuf()
        err.code, err.message = 7, b"stale"
        n = ctypes.c_uint64(99)
        st = lib.mnem_delete_memory(h, L.mstr(APP), L.mstr(USER), L.mstr(""), ctypes.byref(n), ctypes.byref(err))
        assert st == mnem.OK and err.code == 0 and err.message == b"" and n.value == 0


def test_empty_batch_and_empty_events_are_fine():
    with mnem.Store(":memory:") as s:
        assert s.add_session(APP, USER, "s1", "") == 0
        assert s.add_events(APP, USER, "s1", "") == 0
        assert s.delete_memory(APP, USER, "") == 0
        assert s.search(APP, USER, "") == {"memories": []}
        assert s.search(APP, "nobody", "anything") == {"memories": []}


def test_search_output_shape():
    with mnem.Store(":memory:") as s:
        s.add_session(APP, USER, "s1", jl(ev("e1", "shape test", ts=0.5, author="model")))
        (m,) = s.search(APP, USER, "shape")["memories"]
        assert m == {"id": "e1", "author": "model", "timestamp": "1970-01-01T05:30:00.500000",
                     "custom_metadata": {}, "content": {"role": "user", "parts": [{"text": "shape test"}]}}


def test_buffer_grows_for_large_results():
    big = "needle " + "x" * 100_000
    with mnem.Store(":memory:") as s:
        s.add_session(APP, USER, "s1", jl(*[ev(f"e{i}", big + str(i)) for i in range(10)]))
        res = s.search(APP, USER, "needle")
        assert ids(res) == [f"e{i}" for i in range(10)]
        assert all(m["content"]["parts"][0]["text"] == big + str(i) for i, m in enumerate(res["memories"]))

        # The raw protocol: size query with a NULL buffer, exact-size retry, and a short buffer untouched.
        lib, h = L.lib(), s._handle
        need = ctypes.c_size_t(0)
        err = L.ErrorBuf()
        st = lib.mnem_search(h, L.mstr(APP), L.mstr(USER), L.mstr("needle"), None, 0, ctypes.byref(need),
                             ctypes.byref(err))
        assert st == mnem.BUFFER_TOO_SMALL and need.value > 1_000_000
        short = (ctypes.c_uint8 * 100)(*([0xAB] * 100))
        n = ctypes.c_size_t(0)
        st = lib.mnem_search(h, L.mstr(APP), L.mstr(USER), L.mstr("needle"), short, 100, ctypes.byref(n), None)
        assert st == mnem.BUFFER_TOO_SMALL and n.value == need.value and bytes(short) == b"\xab" * 100
        buf = (ctypes.c_uint8 * need.value)()
        st = lib.mnem_search(h, L.mstr(APP), L.mstr(USER), L.mstr("needle"), buf, need.value, ctypes.byref(n),
                             None)
        assert st == mnem.OK and n.value == need.value
        assert json.loads(bytes(buf)) == res


def test_namespaces_do_not_collide():
    with mnem.Store(":memory:") as s:
        s.add_session("app/other-user", "user", "s", jl(ev("e1", "secret")))
        s.add_session("a\x00b", "", "s", jl(ev("e2", "secret")))
        assert ids(s.search("app", "other-user/user", "secret")) == []
        assert ids(s.search("a", "\x00b", "secret")) == []
        assert ids(s.search("a\x00b", "", "secret")) == ["e2"]
        assert ids(s.search("app/other-user", "user", "secret")) == ["e1"]


def test_add_events_dedup_and_delete_counts():
    with mnem.Store(":memory:") as s:
        assert s.add_events(APP, USER, "s1", jl(ev("a", "one"), ev("a", "two"), ev("b", "three"))) == 2
        assert s.add_events(APP, USER, "s1", jl(ev("b", "four"), ev("c", "five"))) == 1
        assert s.add_events(APP, USER, None, jl(ev("a", "six"))) == 1  # unknown-session bucket
        assert s.delete_memory(APP, USER, "a") == 2
        assert s.delete_memory(APP, USER, "a") == 0
        assert s.add_events(APP, USER, "s2", jl(ev("a", "seven"))) == 0  # tombstoned
        assert ids(s.search(APP, USER, "one two six seven three five")) == ["b", "c"]


def test_add_events_custom_metadata_ttl_and_unknown_keys():
    with mnem.Store(":memory:") as s:
        s.add_events(APP, USER, "s1", jl(ev("a", "ephemeral")), {"ttl_ms": 1, "whatever": object()})
        s.add_events(APP, USER, "s1", jl(ev("b", "ephemeral")), {"tags": ["t"], "other": {"x": 1}})
        import time
        time.sleep(0.01)
        assert ids(s.search(APP, USER, "ephemeral")) == ["b"]


def test_episodes_roundtrip_and_lexical_apis():
    with mnem.Store(":memory:") as s:
        got = s.put_episodes(APP, USER, [
            {"primary": "the quick brown fox", "tags": ["animal"], "metadata": {"k": 1}},
            {"primary": "lazy dog", "secondary": "brown", "episode_type": "note"},
            {"primary": "unrelated text", "context": "Straße"},
        ])
        assert len(got) == 3 and all(isinstance(u, uuid.UUID) and u.version == 7 for u in got)
        assert got == sorted(got)

        res = s.keyword_search(APP, USER, {"text": "brown"})["results"]
        assert {r["record"]["id"] for r in res} == {str(got[0]), str(got[1])}
        assert all(r["score"] > 0 for r in res)
        rec = next(r["record"] for r in res if r["record"]["id"] == str(got[0]))
        assert rec["revision"] == 1 and rec["tags"] == ["animal"] and rec["metadata"] == {"k": 1}
        assert rec["episode_type"] == "episode"
        assert [r["record"]["id"] for r in s.keyword_search(APP, USER, {"text": "brown", "tag": "animal"})["results"]] \
            == [str(got[0])]
        assert [r["record"]["id"] for r in s.keyword_search(APP, USER, {"text": "brown", "episode_type": "note"})[
            "results"]] == [str(got[1])]
        assert [r["record"]["id"] for r in s.keyword_search(APP, USER, {"text": "STRASSE straße"})["results"]] \
            == [str(got[2])]

        page = s.lexical_page(APP, USER, {"text": "brown fox", "limit": 1})
        assert page["exhaustive"] is True and page["next_after"] is None
        assert page["matched_records"] == 2 and page["corpus_records"] == 3 and page["scanned_records"] == 3
        assert [h["record"]["id"] for h in page["hits"]] == [str(got[0])]
        page = s.lexical_page(APP, USER, {"text": "brown", "scan_limit": 1})
        assert page["next_after"] == str(got[0]) and page["exhaustive"] is False
        page = s.lexical_page(APP, USER, {"text": "brown", "after": page["next_after"]})
        assert page["exhaustive"] is False and page["scanned_records"] == 2
        with pytest.raises(mnem.InvalidArgument):
            s.lexical_page(APP, USER, {"text": "..."})

        assert [r["record"]["id"] for r in s.substring_search(APP, USER, {"text": "ROWN"})["results"]] \
            == [str(got[0]), str(got[1])]

        # Update keeps the id and bumps the revision.
        (same,) = s.put_episodes(APP, USER, [{"id": str(got[0]), "primary": "renamed fox"}])
        assert same == got[0]
        rec = s.keyword_search(APP, USER, {"text": "renamed"})["results"][0]["record"]
        assert rec["revision"] == 2

        assert s.delete_episodes(APP, USER, [got[0], uuid.uuid4()]) == 1
        assert s.delete_episodes(APP, USER, [got[0]]) == 0
        assert s.keyword_search(APP, USER, {"text": "fox"})["results"] == []


def test_episode_input_errors():
    with mnem.Store(":memory:") as s:
        with pytest.raises(mnem.InvalidArgument) as ei:
            s.put_episodes(APP, USER, [{"primary": "ok"}, {"primary": "x", "primray": "typo"}])
        assert "primray" in ei.value.message and "2" in ei.value.message
        assert s.keyword_search(APP, USER, {"text": "ok"})["results"] == []
        with pytest.raises(mnem.InvalidArgument):
            s.keyword_search(APP, USER, {"text": "ok", "limt": 3})
        # out_ids_cap smaller than 16 x lines: rejected before anything is written.
        st = L.lib().mnem_put_episodes(s._handle, L.mstr(APP), L.mstr(USER), L.mstr(jl({"primary": "a"}, {"primary": "b"})),
                                       (ctypes.c_uint8 * 16)(), 16, None)
        assert st == mnem.INVALID_ARGUMENT
        assert s.keyword_search(APP, USER, {"text": "a b"})["results"] == []
        # NULL/0 ids buffer: allowed.
        st = L.lib().mnem_put_episodes(s._handle, L.mstr(APP), L.mstr(USER), L.mstr(jl({"primary": "zzz"})), None, 0,
                                       None)
        assert st == mnem.OK
        assert len(s.keyword_search(APP, USER, {"text": "zzz"})["results"]) == 1


class CountingEmbedder:
    def __init__(self):
        self.calls = []

    def __call__(self, text):
        self.calls.append(text)
        v = [0.0] * 8
        for w in text.lower().split():
            v[hash(w) % 8] += 1.0
        return v


def test_hybrid_search_and_embedder_bypass():
    emb = CountingEmbedder()
    assert isinstance(emb, mnem.Embedder)
    with mnem.Store(":memory:") as s:
        texts = ["red apple pie", "green apple", "blue sky"]
        s.put_episodes(APP, USER, [{"primary": t, "embedding": emb(t)} for t in texts])
        emb.calls.clear()
        assert s.hybrid_search_text(APP, USER, "apple", emb, limit=0) == {"results": []}
        assert s.hybrid_search_text(APP, USER, "  \t\n", emb) == {"results": []}
        assert emb.calls == []
        res = s.hybrid_search_text(APP, USER, "apple", emb, limit=5)["results"]
        assert emb.calls == ["apple"]
        assert {r["record"]["primary"] for r in res} >= {"red apple pie", "green apple"}
        for r in res:
            assert set(r) >= {"record", "score", "keyword_score", "semantic_score"}
        lexical = s.hybrid_search_text(APP, USER, "apple", emb, semantic_weight=0.0)["results"]
        assert emb.calls == ["apple"]  # zero semantic weight: no embedding
        assert {r["record"]["primary"] for r in lexical} == {"red apple pie", "green apple"}
        assert all(r["score"] == r["keyword_score"] for r in lexical)
        assert all(r["semantic_score"] == 0 for r in lexical)
        with pytest.raises(mnem.InvalidArgument):
            s.hybrid_search(APP, USER, {"text": "apple", "semantic_weight": 1.5})
        with pytest.raises(mnem.InvalidArgument):
            s.put_episodes(APP, USER, [{"primary": "bad dim", "embedding": [1.0, 2.0]}])


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


def test_json_escapes_are_decoded_for_search_and_kept_in_content():
    with mnem.Store(":memory:") as s:
        line = json.dumps(ev("esc", "fire \U0001F525 東京 café\u2028x"))  # ensure_ascii: \ud83d\udd25, \u6771...
        assert "\\u6771" in line
        s.add_session(APP, USER, "s", line)
        (m,) = s.search(APP, USER, "東京")["memories"]
        assert m["content"]["parts"][0]["text"] == "fire \U0001F525 東京 café\u2028x"
        assert ids(s.search(APP, USER, "CAFÉ")) == ["esc"]
        # Content comes back byte for byte, escapes included (json.dumps rebuilds the input's bytes).
        assert json.dumps(json.loads(line)["content"]).encode() in s.search_raw(APP, USER, "fire")


def test_event_json_variants():
    with mnem.Store(":memory:") as s:
        lines = [
            '{"id":"it","author":"u","timestamp":12345,"content":{"parts":[{"text":"variant int"}]}}',
            '{"id":"ex","author":"u","timestamp":1.7e9,"content":{"parts":[{"text":"variant exp"}]}}',
            '{"id":"cc","author":"u","timestamp":1.0,"invocationId":"i","longRunningToolIds":null,'
            '"content":{"role":"model","parts":[{"text":"variant camel","thought":true,"thoughtSignature":null}]}}',
            '{"id":"na","author":null,"timestamp":2.0,"content":{"parts":[{"text":"variant nullauthor"}]}}',
        ]
        assert s.add_session(APP, USER, "s", "\n".join(lines) + "\n") == 4
        got = {m["id"]: m for m in s.search(APP, USER, "variant")["memories"]}
        assert got["it"]["timestamp"] == "1970-01-01T08:55:45"
        assert got["ex"]["timestamp"] == "2023-11-15T03:43:20"
        assert got["cc"]["content"] == {"role": "model", "parts": [{"text": "variant camel", "thought": True,
                                                                    "thoughtSignature": None}]}
        assert got["na"]["author"] is None
        for bad in ('{"id":"t","author":"u","timestamp":1.0,"content":{"parts":[{"text":5}]}}',
                    '{"id":"t","author":"u","timestamp":1.0,"content":{"parts":[{"text":"x \\ud800"}]}}',
                    '{"id":"t","author":"u","timestamp":1.0,"content":"text"}',
                    '[1, 2]',
                    '{"id":"t"} trailing'):
            with pytest.raises(mnem.InvalidArgument):
                s.add_events(APP, USER, "s2", bad)


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

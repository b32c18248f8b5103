"""The Store handle: one mnem_store* with Python-friendly calls."""
from __future__ import annotations

import ctypes
import json
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Iterable, Iterator, Optional, Protocol, Union, runtime_checkable

from . import _lib as L
from ._errors import check

_INITIAL_OUT = 64 * 1024


def _ids_guess(data: bytes) -> int:
    """The first size of put_episodes' ids buffer: 16 bytes per line, blank or not, never less
    than the library needs (it skips blank lines). A function so that tests can force the retry."""
    return 16 * (data.count(b"\n") + 1)


def _jsonl(lines) -> bytes:
    """A JSON Lines buffer from str/bytes (taken as is) or an iterable of lines/dicts."""
    if lines is None:
        return b""
    if isinstance(lines, (str, bytes, bytearray, memoryview)):
        return L.to_bytes(lines)
    out = []
    for line in lines:
        if isinstance(line, Mapping):
            line = json.dumps(line, ensure_ascii=False, allow_nan=False)
        out.append(L.to_bytes(line))
    return b"\n".join(out)


def _query(q) -> bytes:
    if isinstance(q, (str, bytes, bytearray, memoryview)):
        return L.to_bytes(q)
    return json.dumps(q, ensure_ascii=False, allow_nan=False).encode("utf-8")


# A string argument: str (sent as UTF-8) or bytes (sent as is; mnem rejects invalid UTF-8).
Text = Union[str, bytes]
# JSON Lines input: one buffer, or an iterable of lines (str/bytes) or of dicts (JSON-encoded).
Lines = Union[str, bytes, Iterable[Union[str, bytes, Mapping[str, Any]]]]
# A query object (dict, JSON-encoded) or its JSON text.
Query = Union[str, bytes, Mapping[str, Any]]


@runtime_checkable
class Embedder(Protocol):
    """Turns a text into its embedding vector (the caller's model lives here)."""

    def __call__(self, text: str) -> Sequence[float]: ...


def _message(e: BaseException) -> bytes:
    """`e` as an embedder failure message: UTF-8, cut at a character boundary to fit."""
    raw = (str(e) or type(e).__name__).encode("utf-8", "replace")[:L.ERROR_MESSAGE_CAP - 1]
    while raw:
        try:
            raw.decode("utf-8")
            return raw
        except UnicodeDecodeError:
            raw = raw[:-1]
    return raw


def embed_callback(embedder: Embedder) -> Any:
    """`embedder` as a mnem_embed_fn. mnem calls it from the thread of the call that needs a
    vector (ctypes takes the GIL); an exception becomes MNEM_STATUS_EMBEDDER_FAILED with its
    message, never a crash. The last vector is kept for the retry a too-small buffer asks for."""
    last: list = [None, None]

    def cb(_user_data, text, out, out_cap, out_len, err):
        try:
            t = ctypes.string_at(text.ptr, text.len).decode("utf-8") if text.len else ""
            if last[0] == t and last[1] is not None:
                v = last[1]
            else:
                v = [float(x) for x in embedder(t)]
            out_len[0] = len(v)
            if len(v) > out_cap:
                last[0], last[1] = t, v
                return L.BUFFER_TOO_SMALL
            last[0] = last[1] = None
            if v:
                ctypes.memmove(out, (ctypes.c_float * len(v))(*v), 4 * len(v))
            return L.OK
        except BaseException as e:  # noqa: BLE001 - nothing may unwind into C
            try:
                err[0].message = _message(e)
            except BaseException:  # noqa: BLE001
                pass
            return L.EMBEDDER_FAILED

    return L.EMBED_FN(cb)


class Store:
    """An open mnem store. Thread-safe; close() waits for calls in flight."""

    def __init__(self, path: str | bytes | os.PathLike = ":memory:", create: Optional[bool] = None,
                 read_only: bool = False, sync_writes: bool = False, options: Optional[Mapping[str, Any]] = None,
                 view: bool = False):
        """Opens (by default creates) the store at `path`, a directory or ":memory:".

        `create` defaults to `not read_only`; options are mnem_open's JSON options. `view`
        opens a read-only view beside a writer (MNEM_OPEN_VIEW): it answers from the state at
        open and takes no lock, so another process may hold the store for writing.
        """
        self._lib = L.lib()
        path = os.fspath(path)
        if create is None:
            create = not (read_only or view)
        if view:
            flags = L.OPEN_VIEW | (L.OPEN_CREATE if create else 0)  # the library refuses CREATE here
            read_only = True
        else:
            flags = (L.OPEN_CREATE if create else 0) | (L.OPEN_READ_ONLY if read_only else 0)
        opts = dict(options or {})
        if sync_writes:
            opts["sync_writes"] = True
        opts_b = json.dumps(opts).encode() if opts else b""
        handle = ctypes.c_void_p()
        err = L.ErrorBuf()
        st = self._lib.mnem_open(L.mstr(path), flags, L.mstr(opts_b), ctypes.byref(handle), ctypes.byref(err))
        check(st, err)
        self._handle = handle.value
        self.path = path
        self.read_only = read_only
        # In-flight call counting so close() never frees a handle another thread is using.
        self._cv = threading.Condition()
        self._active = 0
        self._closing = False
        # Every callback registered: a call in flight may still use one replaced since, so
        # they live as long as the store.
        self._callbacks: list[Any] = []

    # -- lifecycle -------------------------------------------------------------------------------

    def _enter(self) -> int:
        with self._cv:
            if self._handle is None or self._closing:
                raise ValueError("mnem store is closed")
            self._active += 1
            return self._handle

    def _leave(self) -> None:
        with self._cv:
            self._active -= 1
            if self._active == 0:
                self._cv.notify_all()

    def _call(self, fn: Any, *args: Any) -> None:
        h = self._enter()
        try:
            err = L.ErrorBuf()
            st = fn(h, *args, ctypes.byref(err))
            check(st, err)
        finally:
            self._leave()

    def _read(self, fn: Any, *args: Any) -> bytes:
        """Calls an out-buffer function, growing the buffer on BUFFER_TOO_SMALL."""
        h = self._enter()
        try:
            cap = _INITIAL_OUT
            while True:
                buf = (ctypes.c_uint8 * cap)()
                n = ctypes.c_size_t(0)
                err = L.ErrorBuf()
                st = fn(h, *args, buf, cap, ctypes.byref(n), ctypes.byref(err))
                if st == L.BUFFER_TOO_SMALL and n.value > cap:
                    cap = n.value
                    continue
                check(st, err)
                return ctypes.string_at(buf, n.value)
        finally:
            self._leave()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        with self._cv:
            if self._handle is None or self._closing:
                return
            self._closing = True
            while self._active:
                self._cv.wait()
            h, self._handle = self._handle, None
        self._lib.mnem_free(h)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if getattr(self, "_handle", None) is not None:
                self.close()
        except Exception:
            pass

    def flush(self) -> None:
        self._call(self._lib.mnem_flush)

    # -- ADK seam --------------------------------------------------------------------------------

    def add_session(self, app: Text, user: Text, session_id: Text, events_jsonl: Lines) -> int:
        """Replaces the session's bucket (ADK add_session_to_memory). Returns events stored."""
        n = ctypes.c_uint64(0)
        self._call(self._lib.mnem_add_session, L.mstr(app), L.mstr(user), L.mstr(session_id),
                   L.mstr(_jsonl(events_jsonl)), ctypes.byref(n))
        return n.value

    def add_events(self, app: Text, user: Text, session_id: Optional[Text], events_jsonl: Lines,
                   custom_metadata: Union[Text, Mapping[str, Any], None] = None) -> int:
        """Appends unseen events (ADK add_events_to_memory). Returns events added."""
        n = ctypes.c_uint64(0)
        if custom_metadata is None:
            meta = b""
        elif isinstance(custom_metadata, (str, bytes)):
            meta = L.to_bytes(custom_metadata)
        else:
            # Values mnem does not use may be arbitrary objects: stringify rather than fail.
            meta = json.dumps(dict(custom_metadata), ensure_ascii=False, default=str).encode()
        self._call(self._lib.mnem_add_events, L.mstr(app), L.mstr(user), L.mstr(session_id or ""),
                   L.mstr(_jsonl(events_jsonl)), L.mstr(meta), ctypes.byref(n))
        return n.value

    def delete_memory(self, app: Text, user: Text, memory_id: Optional[Text]) -> int:
        n = ctypes.c_uint64(0)
        self._call(self._lib.mnem_delete_memory, L.mstr(app), L.mstr(user), L.mstr(memory_id or ""),
                   ctypes.byref(n))
        return n.value

    def delete_session(self, app: Text, user: Text, session_id: Text) -> int:
        """Deletes what one ADK session added (`mnem_delete_session`): the events of its
        bucket become tombstones and the bucket goes. Returns the number of events deleted."""
        n = ctypes.c_uint64(0)
        self._call(self._lib.mnem_delete_session, L.mstr(app), L.mstr(user), L.mstr(session_id),
                   ctypes.byref(n))
        return n.value

    def forget_namespace(self, app: Text, user: Text) -> None:
        """Erases the namespace (`mnem_forget_namespace`): every record, tombstone and index
        entry goes, and its bytes are compacted out of the store's files."""
        self._call(self._lib.mnem_forget_namespace, L.mstr(app), L.mstr(user))

    def compact(self) -> None:
        """Compacts the whole store (`mnem_compact`): the bytes of deleted episodes and
        sessions and of overwritten revisions leave the files. Raises the cause (e.g.
        `mnem.Corruption` for a damaged table file) if the compaction fails."""
        self._call(self._lib.mnem_compact)

    # -- store management ------------------------------------------------------------------------

    def get_episodes(self, app: Text, user: Text,
                     ids: Iterable[Union[str, uuid.UUID]]) -> list[Optional[dict[str, Any]]]:
        """The visible episodes with these ids, in order; None where none is visible."""
        data = "\n".join(json.dumps(str(i)) for i in ids).encode()
        raw = self._read(self._lib.mnem_get_episodes, L.mstr(app), L.mstr(user), L.mstr(data))
        return json.loads(raw)["episodes"]

    def list_namespaces(self, limit: Optional[int] = None,
                        after: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
        """One page of namespaces: {"namespaces": [{"app_name", "user_id", "episodes"}...],
        "next_after"}; pass next_after as `after` for the next page (see iter_namespaces)."""
        q: dict[str, Any] = {}
        if limit is not None:
            q["limit"] = limit
        if after is not None:
            q["after"] = dict(after)
        return json.loads(self._read(self._lib.mnem_list_namespaces, L.mstr(_query(q) if q else b"")))

    def iter_namespaces(self, page: int = 100) -> Iterator[dict[str, Any]]:
        """Every namespace, page by page."""
        after = None
        while True:
            res = self.list_namespaces(limit=page, after=after)
            yield from res["namespaces"]
            after = res["next_after"]
            if after is None:
                return

    def namespace_stats(self, app: Text, user: Text) -> dict[str, Any]:
        """One namespace's key, record and index counts (`mnem_namespace_stats`; a scan)."""
        return json.loads(self._read(self._lib.mnem_namespace_stats, L.mstr(app), L.mstr(user)))

    def backup(self, dest: Union[str, os.PathLike]) -> None:
        """Copies the open store into the new directory `dest` (a consistent checkpoint)."""
        self._call(self._lib.mnem_backup, L.mstr(os.fspath(dest)))

    def check(self) -> dict[str, Any]:
        """Reads every key with checksums verified; {"ok": bool, ..., "problem"}."""
        return json.loads(self._read(self._lib.mnem_check))

    def export(self, app: Optional[Text] = None, user: Optional[Text] = None) -> bytes:
        """JSON Lines export (docs/EXPORT.md) of one namespace, or of all when app and user are None."""
        every = app is None and user is None
        if not every and (app is None or user is None):
            raise ValueError("export: give both app and user, or neither (every namespace)")
        return self._read(self._lib.mnem_export, L.mstr(app or ""), L.mstr(user or ""), 1 if every else 0)

    def export_pages(self, app: Optional[Text] = None, user: Optional[Text] = None, *,
                     max_bytes: int = 8 << 20) -> Iterator[bytes]:
        """The export in pages of about `max_bytes` (`mnem_export_page`); joined, they are
        `export()` when nothing writes to the store meanwhile. For stores too large for one buffer."""
        every = app is None and user is None
        if not every and (app is None or user is None):
            raise ValueError("export_pages: give both app and user, or neither (every namespace)")
        cursor = ""
        while True:
            page = json.loads(self._read(self._lib.mnem_export_page, L.mstr(app or ""), L.mstr(user or ""),
                                         1 if every else 0, L.mstr(cursor), max_bytes))
            yield page["lines"].encode("utf-8")
            if page["next_cursor"] is None:
                return
            cursor = page["next_cursor"]

    def import_export(self, export_jsonl: Text) -> int:
        """Imports an export into namespaces that hold nothing here; returns the records imported."""
        n = ctypes.c_uint64(0)
        self._call(self._lib.mnem_import, L.mstr(export_jsonl), ctypes.byref(n))
        return n.value

    def search_raw(self, app: Text, user: Text, query: Text) -> bytes:
        return self._read(self._lib.mnem_search, L.mstr(app), L.mstr(user), L.mstr(query))

    def search(self, app: Text, user: Text, query: Text) -> dict[str, Any]:
        """ADK search_memory: {"memories": [MemoryEntry JSON...]}."""
        return json.loads(self.search_raw(app, user, query))

    # -- episodes --------------------------------------------------------------------------------

    def put_episodes(self, app: Text, user: Text, episodes: Lines) -> list[uuid.UUID]:
        """Inserts or updates episodes (dicts, JSON lines, or a JSONL buffer); returns their ids in line order."""
        data = _jsonl(episodes)
        h = self._enter()
        try:
            cap = _ids_guess(data)
            for _attempt in range(2):
                # Never a NULL buffer, even for 0 bytes: NULL would mean the ids are not wanted.
                buf = (ctypes.c_uint8 * max(cap, 1))()
                n = ctypes.c_size_t(0)
                err = L.ErrorBuf()
                st = self._lib.mnem_put_episodes_v2(h, L.mstr(app), L.mstr(user), L.mstr(data), buf, cap,
                                                    ctypes.byref(n), ctypes.byref(err))
                if st != L.BUFFER_TOO_SMALL or n.value <= cap:
                    break
                # Nothing was written, and the size depends on the batch alone: one retry fits.
                cap = n.value
            check(st, err)
            raw = ctypes.string_at(buf, n.value)
            return [uuid.UUID(bytes=raw[i:i + 16]) for i in range(0, len(raw), 16)]
        finally:
            self._leave()

    def delete_episodes(self, app: Text, user: Text, ids: Union[Text, Iterable[Union[str, uuid.UUID]]]) -> int:
        if isinstance(ids, (str, bytes)):
            data = L.to_bytes(ids)
        else:
            data = "\n".join(json.dumps(str(i)) for i in ids).encode()
        n = ctypes.c_uint64(0)
        self._call(self._lib.mnem_delete_episodes, L.mstr(app), L.mstr(user), L.mstr(data), ctypes.byref(n))
        return n.value

    def stats(self) -> dict[str, Any]:
        """The store's statistics (`mnem_stats`): format, cache budget, use, hits and misses."""
        return json.loads(self._read(self._lib.mnem_stats))

    def keyword_search(self, app: Text, user: Text, query: Query) -> dict[str, Any]:
        return json.loads(self._read(self._lib.mnem_keyword_search, L.mstr(app), L.mstr(user), L.mstr(_query(query))))

    def lexical_page(self, app: Text, user: Text, query: Query) -> dict[str, Any]:
        return json.loads(self._read(self._lib.mnem_lexical_page, L.mstr(app), L.mstr(user), L.mstr(_query(query))))

    def substring_search(self, app: Text, user: Text, query: Query) -> dict[str, Any]:
        return json.loads(self._read(self._lib.mnem_substring_search, L.mstr(app), L.mstr(user), L.mstr(_query(query))))

    def hybrid_search(self, app: Text, user: Text, query: Query) -> dict[str, Any]:
        return json.loads(self._read(self._lib.mnem_hybrid_search, L.mstr(app), L.mstr(user), L.mstr(_query(query))))

    def set_embedder(self, embedder: Optional[Embedder], *, model: Optional[str] = None) -> None:
        """Registers `embedder` (text -> vector) on the store (`mnem_set_embedder`; None
        removes it). Then episodes with `"embed": True` are written with the vector of their
        text, ADK writes store each event's vector, and `hybrid_search` / `recall` embed a
        query without `vector`. It is called from the threads that call the store, and its
        exceptions become `mnem.EmbedderFailed` with their message (nothing is written).

        `model` names the embedder's model (1 to 256 bytes of UTF-8;
        `mnem_set_named_embedder`): the name is recorded with the vectors it makes in each
        namespace (namespace stats' `embedding_model`), as the built-in embedder's is, so that
        two models' vectors never mix: a write or query embedded by another model, or by an
        unnamed embedder, into a namespace whose vectors name one raises
        `mnem.InvalidArgument` naming both, and writes nothing. None (the default) registers
        it unnamed. With `embedder` None, `model` is ignored."""
        cb = embed_callback(embedder) if embedder is not None else ctypes.cast(None, L.EMBED_FN)
        with self._cv:
            self._callbacks.append(cb)
        if model is None:
            self._call(self._lib.mnem_set_embedder, cb, None)
        else:
            self._call(self._lib.mnem_set_named_embedder, L.mstr(model), cb, None)

    def recall(self, app: Text, user: Text, query: Query) -> dict[str, Any]:
        """ADK search_memory with semantic recall (`mnem_recall`): {"memories": [...]}; a
        str query is the text."""
        if isinstance(query, str):
            query = {"text": query}
        return json.loads(self._read(self._lib.mnem_recall, L.mstr(app), L.mstr(user), L.mstr(_query(query))))

    def hybrid_search_text(self, app: Text, user: Text, text: str, embedder: Optional[Embedder], *,
                           limit: Optional[int] = None, semantic_weight: float = 0.5,
                           candidates: Optional[int] = None, episode_type: Optional[str] = None,
                           tag: Optional[str] = None, vector_model: Optional[str] = None) -> dict:
        """Hybrid search with `embedder` for this call (`mnem_hybrid_search_with`): the library
        asks it for the vector of `text` only when the search can use one (not for blank text,
        limit 0 or weight 0; docs/WIRE.md). `limit` None is the library's default (10). Without
        `embedder`, the store's (if any). `vector_model` names `embedder`'s model (the query's
        `vector_model`; None: unnamed), with the rule of `set_embedder(model=...)`: a namespace
        whose vectors name another model (or name one, for an unnamed embedder) refuses the
        search with `mnem.InvalidArgument`."""
        q: dict[str, Any] = {"text": text, "semantic_weight": semantic_weight}
        if limit is not None:
            q["limit"] = limit
        if candidates is not None:
            q["candidates"] = candidates
        if episode_type is not None:
            q["episode_type"] = episode_type
        if tag is not None:
            q["tag"] = tag
        if vector_model is not None:
            q["vector_model"] = vector_model
        if embedder is None:
            return self.hybrid_search(app, user, q)
        cb = embed_callback(embedder)
        return json.loads(self._read(self._lib.mnem_hybrid_search_with, L.mstr(app), L.mstr(user),
                                     L.mstr(_query(q)), cb, None))

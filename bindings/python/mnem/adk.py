"""google-adk memory service backed by mnem.

    from mnem.adk import MnemMemoryService
    runner = Runner(..., memory_service=MnemMemoryService("/var/lib/agent/memory"))

or, for ADK's command line (`adk web`, `adk api_server`, `adk run`), a `services.py` in the
agents directory:

    import mnem.adk
    mnem.adk.register()          # then: --memory_service_uri mnem:///var/lib/agent/memory

Search ranks exactly like ADK's InMemoryMemoryService (google-adk 2.13.0); unlike it, memories
persist in the store directory. Every store call runs in a worker thread
(`asyncio.to_thread`; the library releases the GIL), so the event loop never waits on disk.

With an `embedder` (see `MemoryEmbedder`), events and memories are also stored with their
embedding and `search_memory` answers by hybrid search (BM25 fused with vector similarity).
"""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import math
import os
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Union, runtime_checkable
from urllib.parse import parse_qsl, unquote, urlsplit

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ._store import Store

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["MnemMemoryService", "MemoryEmbedder", "register", "parse_uri", "RECALL_TYPE",
           "DEFAULT_SEMANTIC_WEIGHT"]

# Episode type of the embedded copy of an event or memory that semantic recall searches.
RECALL_TYPE = "adk_recall"
# Weight of the vector channel in hybrid search (the BM25 channel gets 1 - this).
DEFAULT_SEMANTIC_WEIGHT = 0.5
SEARCH_LIMIT = 10
# ADK's bucket for events added without a session id (mnem_add_events uses it for "").
UNKNOWN_SESSION_ID = "__unknown_session_id__"
# Marks a memory id removed by delete_memory, so that no later write gives it a recall copy
# (ADK's writes of that id are skipped for good).
BURIED_TYPE = "adk_recall_deleted"
# Recall copies and burial marks are found by BM25 on hash tokens in their secondary text:
# one for the memory id, one for the session. Users' queries never hold them.
_TOKEN_BATCH = 64  # the most terms a keyword query takes
# The BM25 side of a hybrid query takes at most 64 distinct terms and 4096 bytes: a longer
# question keeps its first terms there (the embedding still reads all of it).
_QUERY_TERMS = 48
_QUERY_BYTES = 4096
_TERM = re.compile(r"[^\W_]+")
_FIND_LIMIT = 1000  # the most results a keyword query returns
# How many (namespace, memory id) -> content hashes the service remembers having embedded.
_EMBEDDED_CACHE = 65536


@runtime_checkable
class MemoryEmbedder(Protocol):
    """What semantic recall needs from an embedding model.

    `dimensions` is the length of every vector. `embed(texts)` returns one vector per text,
    in order. It may be a plain method (the service calls it in a worker thread, so a
    blocking model call never stalls the event loop) or an `async def` (awaited on the loop).
    """

    dimensions: int

    def embed(self, texts: list[str]) -> Union[list[list[float]], Awaitable[list[list[float]]]]: ...


# ---- URIs ------------------------------------------------------------------------------------

_BOOL = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _bool_option(name: str, value: str) -> bool:
    try:
        return _BOOL[value.lower()]
    except KeyError:
        raise ValueError(f"mnem URI option {name}={value!r}: expected true or false") from None


def _int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"mnem URI option {name}={value!r}: expected an integer") from None


def _float_option(name: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"mnem URI option {name}={value!r}: expected a number") from None


# URI query option -> (keyword argument of MnemMemoryService, parser)
_URI_OPTIONS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "sync_writes": ("sync_writes", _bool_option),
    "read_only": ("read_only", _bool_option),
    "create": ("create", _bool_option),
    "cache_bytes": ("cache_bytes", _int_option),
    "semantic_weight": ("semantic_weight", _float_option),
}


def parse_uri(uri: str, agents_dir: Optional[str] = None) -> tuple[str, dict[str, Any]]:
    """Splits a memory service URI into the store path and keyword options.

    Forms (the scheme is whatever the service was registered under, "mnem" by default):
    `mnem:///abs/dir` (absolute), `mnem://rel/dir` (relative to `agents_dir`, the agents
    directory ADK passes, else to the working directory), `mnem://:memory:` (a store inside
    the process). Query options: sync_writes, read_only, create (true/false), cache_bytes
    (integer), semantic_weight (0 to 1). Anything else is a ValueError naming it.
    """
    if not isinstance(uri, str) or "://" not in uri:
        raise ValueError(f"not a mnem URI (expected mnem:///path, mnem://relative/path or mnem://:memory:): {uri!r}")
    parts = urlsplit(uri)
    if parts.fragment:
        raise ValueError(f"mnem URI {uri!r}: a fragment (#...) means nothing here")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _URI_OPTIONS:
            raise ValueError(f"mnem URI {uri!r}: unknown option {key!r}; known: {', '.join(sorted(_URI_OPTIONS))}")
        name, parse = _URI_OPTIONS[key]
        if name in options:
            raise ValueError(f"mnem URI {uri!r}: option {key!r} is given twice")
        options[name] = parse(key, value)
    netloc, path = unquote(parts.netloc), unquote(parts.path)
    if netloc == ":memory:" and not path or not netloc and path == "/:memory:":
        return ":memory:", options
    if netloc:
        rel = netloc + path
        base = Path(agents_dir) if agents_dir else Path.cwd()
        return str(base / rel), options
    if path and path != "/":
        return path, options
    raise ValueError(f"mnem URI {uri!r} names no store: use mnem:///abs/dir, mnem://rel/dir or mnem://:memory:")


def register(scheme: str = "mnem", **service_kwargs: Any) -> None:
    """Registers MnemMemoryService for `scheme://` memory URIs with ADK's service registry.

    Put it in the agents directory's services.py; then
    `adk web --memory_service_uri mnem:///var/lib/agent/memory agents/` uses mnem.
    `service_kwargs` (for example `embedder=...`) go to every service the factory builds.
    """
    from google.adk.cli.service_registry import get_service_registry

    def factory(uri: str, **kwargs: Any) -> MnemMemoryService:
        return MnemMemoryService(uri=uri, **{**service_kwargs, **kwargs})

    get_service_registry().register_memory_service(scheme, factory)


# ---- conversions -----------------------------------------------------------------------------


def _events_jsonl(events: Sequence["Event"]) -> bytes:
    return "\n".join(e.model_dump_json() for e in events).encode("utf-8")


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _is_canonical_uuid(s: str) -> bool:
    try:
        return str(uuid.UUID(s)) == s
    except ValueError:
        return False


def _content_text(content: Optional[types.Content]) -> str:
    """The text ADK searches in an event or memory: its text parts joined by spaces."""
    if content is None or not content.parts:
        return ""
    return " ".join(p.text for p in content.parts if p.text)


def _memory_episode(entry: MemoryEntry, tags, ttl_ms) -> dict:
    content = json.loads(entry.content.model_dump_json())
    ep: dict[str, Any] = {
        "episode_type": "memory",
        "content": content,
        # The lexical APIs search primary; ADK search reads content like an event's.
        "primary": _content_text(entry.content),
    }
    if entry.id:
        # A canonical UUID names the episode itself (a re-add updates it); any other id is
        # kept as event_id, which search reports as the memory's id.
        if _is_canonical_uuid(entry.id):
            ep["id"] = entry.id
        else:
            ep["event_id"] = entry.id
    if entry.author is not None:
        ep["author"] = entry.author
    if entry.timestamp:
        try:
            # ADK writes naive local time (format_timestamp); .timestamp() reads it back the same way.
            ep["timestamp"] = datetime.fromisoformat(entry.timestamp).timestamp()
        except ValueError:
            pass
    if entry.custom_metadata:
        ep["metadata"] = _json_safe(entry.custom_metadata)
    if tags is not None:
        ep["tags"] = tags
    if ttl_ms is not None:
        ep["ttl_ms"] = ttl_ms
    return ep


def _lexical_text(query: str) -> str:
    """`query` as the BM25 side of a hybrid search accepts it (see _QUERY_TERMS)."""
    if len(query.encode("utf-8")) <= _QUERY_BYTES and len(set(_TERM.findall(query))) <= _QUERY_TERMS:
        return query
    seen: set[str] = set()
    out: list[str] = []
    size = 0
    for term in _TERM.findall(query):
        if term not in seen and len(seen) == _QUERY_TERMS:
            continue
        size += len(term.encode("utf-8")) + 1
        if size > _QUERY_BYTES:
            break
        seen.add(term)
        out.append(term)
    return " ".join(out)


def _tags(value: Any) -> Optional[list[str]]:
    """custom_metadata["tags"]: one string or a list of them."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(t) for t in value]


def _token(kind: str, value: str) -> str:
    return kind + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _memory_token(memory_id: str) -> str:
    return _token("zmnemm", memory_id)


def _session_token(session_id: str) -> str:
    return _token("zmnems", session_id)


def _entry_from_record(rec: Mapping[str, Any]) -> MemoryEntry:
    ts = rec.get("timestamp")
    return MemoryEntry(
        id=rec.get("event_id") or rec.get("id"),
        content=types.Content.model_validate(rec["content"]),
        author=rec.get("author"),
        timestamp=datetime.fromtimestamp(ts).isoformat() if ts is not None else None,
        custom_metadata={},
    )


def _entry_from_search(m: Mapping[str, Any]) -> MemoryEntry:
    return MemoryEntry(
        id=m.get("id"),
        content=types.Content.model_validate(m["content"]),
        author=m.get("author"),
        timestamp=m.get("timestamp"),
        custom_metadata=m.get("custom_metadata") or {},
    )


def _cache_key(app_name: str, user_id: str, r: "_Recall") -> tuple:
    """Where the fingerprint of a written recall copy is remembered."""
    return (app_name, user_id, r.episode.get("session_id"), r.memory_id)


class _Recall:
    """One event or memory to embed: its memory id and the recall episode without a vector."""

    __slots__ = ("memory_id", "text", "episode")

    def __init__(self, memory_id: str, text: str, episode: dict):
        self.memory_id = memory_id
        self.text = text
        self.episode = episode


def _event_recalls(events: Sequence["Event"], session_id: str, tags, ttl_ms) -> list[_Recall]:
    out = []
    seen = set()
    for e in events:
        text = _content_text(e.content)
        if not text or e.content is None or e.id in seen:
            continue
        seen.add(e.id)
        ep: dict[str, Any] = {
            "episode_type": RECALL_TYPE, "primary": text,
            "secondary": f"{_memory_token(e.id)} {_session_token(session_id)}",
            "content": json.loads(e.content.model_dump_json()), "event_id": e.id, "session_id": session_id,
            "timestamp": e.timestamp,
        }
        if e.author is not None:
            ep["author"] = e.author
        if tags:
            ep["tags"] = tags
        if ttl_ms is not None:
            ep["ttl_ms"] = ttl_ms
        out.append(_Recall(e.id, text, ep))
    return out


# ---- the service -----------------------------------------------------------------------------


class _Done:
    """An awaitable that is already complete (what `close()` returns after closing at once)."""

    def __await__(self):
        return iter(())


class MnemMemoryService(BaseMemoryService):
    """A BaseMemoryService over a mnem store (":memory:" for an in-process one).

    `path` is the store directory; alternatively `uri` (a mnem:// URI, see `parse_uri`) with
    `agents_dir` for relative ones, as ADK's service registry and services.yaml pass them.
    `embedder` turns on semantic recall (see `MemoryEmbedder`); `semantic_weight` is then
    the vector channel's weight in hybrid search (default 0.5; BM25 gets the rest).
    Close with `await service.close()` or `async with` in async code, `close()` or `with`
    elsewhere.
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]] = None, *, uri: Optional[str] = None,
                 agents_dir: Optional[str] = None, create: Optional[bool] = None, read_only: bool = False,
                 sync_writes: bool = False, cache_bytes: Optional[int] = None, store: Optional[Store] = None,
                 embedder: Optional[MemoryEmbedder] = None,
                 semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT):
        if uri is not None:
            if path is not None or store is not None:
                raise ValueError("give one of path, uri and store")
            path, opts = parse_uri(uri, agents_dir)
            create = opts.get("create", create)
            read_only = opts.get("read_only", read_only)
            sync_writes = opts.get("sync_writes", sync_writes)
            cache_bytes = opts.get("cache_bytes", cache_bytes)
            semantic_weight = opts.get("semantic_weight", semantic_weight)
        if not (isinstance(semantic_weight, (int, float)) and math.isfinite(semantic_weight)
                and 0 <= semantic_weight <= 1):
            raise ValueError(f"semantic_weight must be a number from 0 to 1, got {semantic_weight!r}")
        if embedder is not None:
            dims = getattr(embedder, "dimensions", None)
            if not callable(getattr(embedder, "embed", None)) or not isinstance(dims, int) or dims <= 0:
                raise TypeError("embedder must have an int `dimensions` > 0 and an `embed(texts)` method")
        self._owns_store = store is None
        if store is None:
            if path is None:
                path = ":memory:"
            path = os.fspath(path)
            if path != ":memory:" and not read_only and create is not False:
                # mnem creates the store directory, not its parents.
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            options = {"cache_bytes": cache_bytes} if cache_bytes is not None else None
            store = Store(path, create=create, read_only=read_only, sync_writes=sync_writes, options=options)
        self.store = store
        self.embedder = embedder
        self.semantic_weight = float(semantic_weight)
        # (app, user, memory id) -> fingerprint of the recall copy last written; worker threads
        # share it, under its lock.
        self._embedded: OrderedDict[tuple, int] = OrderedDict()
        self._embedded_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> Awaitable[None]:
        """Closes the store; works both awaited and called plainly.

        In async code, `await service.close()` as with ADK's SqliteMemoryService: the close
        runs in a worker thread (it waits for calls in flight and flushes), and has started
        even if the result is never awaited. Called where no event loop runs, it closes before
        returning, and the returned awaitable is already done. Closing twice is harmless.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.close_sync()
            return _Done()
        return loop.create_task(asyncio.to_thread(self.close_sync))

    def close_sync(self) -> None:
        """The synchronous close (what `close()` does where no event loop runs)."""
        if self._owns_store:
            self.store.close()

    async def __aenter__(self) -> "MnemMemoryService":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __enter__(self) -> "MnemMemoryService":
        return self

    def __exit__(self, *exc) -> None:
        self.close_sync()

    # -- writes ------------------------------------------------------------------------------

    async def add_session_to_memory(self, session: "Session") -> None:
        def write():
            self.store.add_session(session.app_name, session.user_id, session.id, _events_jsonl(session.events))
        await asyncio.to_thread(write)
        if self.embedder is not None:
            recalls = await asyncio.to_thread(_event_recalls, session.events, session.id, None, None)
            await self._write_recalls(session.app_name, session.user_id, recalls, replace=True)
            # The store keeps only the session's current events: so do its recall copies.
            keep = {r.memory_id for r in recalls}
            await asyncio.to_thread(self._drop_session_recalls, session.app_name, session.user_id,
                                    session.id, keep)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence["Event"],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        """Appends events (ADK's delta ingest). custom_metadata keys mnem reads: "ttl_ms"
        (int > 0, the events expire), "tags" (list of str), "episode_type" (str)."""
        def write():
            self.store.add_events(app_name, user_id, session_id or "", _events_jsonl(events), custom_metadata)
        await asyncio.to_thread(write)
        if self.embedder is not None:
            meta = dict(custom_metadata or {})
            recalls = await asyncio.to_thread(_event_recalls, events, session_id or UNKNOWN_SESSION_ID,
                                              _tags(meta.get("tags")), meta.get("ttl_ms"))
            await self._write_recalls(app_name, user_id, recalls, replace=False)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        """Stores each MemoryEntry as an episode of type "memory" (searchable by search_memory).

        custom_metadata keys: "tags" (list of str) and "ttl_ms" (int > 0) apply to every entry.
        An entry whose id was removed by delete_memory is refused: the call raises
        mnem.InvalidArgument naming it and stores none of the entries (a deleted memory
        never returns, whichever call writes it).
        """
        meta = dict(custom_metadata or {})
        tags = _tags(meta.get("tags"))
        ttl_ms = meta.get("ttl_ms")
        episodes = [_memory_episode(m, tags, ttl_ms) for m in memories]
        if not episodes:
            return
        ids = await asyncio.to_thread(self.store.put_episodes, app_name, user_id, episodes)
        if self.embedder is None:
            return
        recalls = []
        for ep, uid in zip(episodes, ids):
            text = ep["primary"]
            if not text:
                continue
            memory_id = ep.get("event_id") or str(uid)
            rec = {k: v for k, v in ep.items() if k not in ("id", "metadata")}
            rec.update(episode_type=RECALL_TYPE, event_id=memory_id, secondary=_memory_token(memory_id))
            recalls.append(_Recall(memory_id, text, rec))
        await self._write_recalls(app_name, user_id, recalls, replace=True)

    # -- deletes -----------------------------------------------------------------------------

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Removes every memory reported with `memory_id` (ADK's delete hook); the id is never stored again."""
        if not memory_id:
            return

        def delete():
            self.store.delete_memory(app_name, user_id, memory_id)
            # Even when the store had nothing left under the id: the id is blocked for good
            # either way, and no recall copy may answer for it.
            self._bury(app_name, user_id, memory_id)
        await asyncio.to_thread(delete)

    def _bury(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes the recall copies of `memory_id` and marks it buried, so that no later
        write gives it one (ADK's writes of a deleted id are skipped for good)."""
        token = _memory_token(memory_id)
        copies = self._find(app_name, user_id, [token], RECALL_TYPE)
        if copies:
            self.store.delete_episodes(app_name, user_id, [r["id"] for r in copies])
        if not self._find(app_name, user_id, [token], BURIED_TYPE):
            self.store.put_episodes(app_name, user_id, [{"episode_type": BURIED_TYPE, "secondary": token}])
        with self._embedded_lock:
            for k in [k for k in self._embedded if k[:2] == (app_name, user_id) and k[3] == memory_id]:
                del self._embedded[k]

    def _drop_session_recalls(self, app_name: str, user_id: str, session_id: str, keep: set[str]) -> None:
        """Deletes the session's recall copies whose memory id is not in `keep`."""
        copies = [r for r in self._find(app_name, user_id, [_session_token(session_id)], RECALL_TYPE)
                  if r.get("session_id") == session_id and r.get("event_id") not in keep]
        if copies:
            self.store.delete_episodes(app_name, user_id, [r["id"] for r in copies])
            with self._embedded_lock:
                for r in copies:
                    self._embedded.pop((app_name, user_id, session_id, r.get("event_id")), None)

    def _find(self, app_name: str, user_id: str, tokens: Sequence[str], episode_type: str) -> list[dict]:
        """Every visible episode of `episode_type` holding one of `tokens`."""
        out: dict[str, dict] = {}
        for i in range(0, len(tokens), _TOKEN_BATCH):
            q = {"text": " ".join(tokens[i:i + _TOKEN_BATCH]), "limit": _FIND_LIMIT, "episode_type": episode_type}
            for r in self.store.keyword_search(app_name, user_id, q)["results"]:
                out[r["record"]["id"]] = r["record"]
        return list(out.values())

    def _forget_cached(self, app_name: str, user_id: str) -> None:
        with self._embedded_lock:
            for k in [k for k in self._embedded if k[0] == app_name and k[1] == user_id]:
                del self._embedded[k]

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str | None) -> int:
        """Deletes what one session added to memory (its add_session_to_memory and
        add_events_to_memory events, and their recall copies): search then ranks as if the
        session had never been added. Returns the number of events deleted. Not part of
        BaseMemoryService. Like every delete, the text leaves the records at once and the
        store's files at their next compaction; `forget_user` erases at once."""
        bucket = session_id or UNKNOWN_SESSION_ID

        def delete() -> int:
            n = self.store.delete_session(app_name, user_id, bucket)
            token = _session_token(bucket)
            while True:
                copies = self._find(app_name, user_id, [token], RECALL_TYPE)
                if not copies:
                    break
                self.store.delete_episodes(app_name, user_id, [r["id"] for r in copies])
            self._forget_cached(app_name, user_id)
            return n
        return await asyncio.to_thread(delete)

    async def forget_user(self, *, app_name: str, user_id: str) -> None:
        """Erases everything stored for `(app_name, user_id)`: memories, deletion marks,
        indexes, embeddings; the bytes are compacted out of the store's files before this
        returns. Not part of BaseMemoryService."""
        def forget() -> None:
            self.store.forget_namespace(app_name, user_id)
            self._forget_cached(app_name, user_id)
        await asyncio.to_thread(forget)

    # -- search ------------------------------------------------------------------------------

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """ADK's ranking (InMemoryMemoryService) without an embedder; with one, hybrid search
        (see `hybrid_query`)."""
        if self.embedder is None:
            result = await asyncio.to_thread(self.store.search, app_name, user_id, query)
            return SearchMemoryResponse(memories=[_entry_from_search(m) for m in result.get("memories", [])])
        if not query.strip():
            return SearchMemoryResponse(memories=[])
        q = await self.hybrid_query(query)
        result = await asyncio.to_thread(self.store.hybrid_search, app_name, user_id, q)
        return SearchMemoryResponse(memories=[_entry_from_record(r["record"]) for r in result.get("results", [])])

    async def hybrid_query(self, query: str, limit: int = SEARCH_LIMIT) -> dict:
        """The mnem_hybrid_search query search_memory sends: the text, its embedding, the
        weight, restricted to the recall copies."""
        q: dict[str, Any] = {"text": _lexical_text(query), "limit": limit, "semantic_weight": self.semantic_weight,
                             "episode_type": RECALL_TYPE}
        if self.semantic_weight > 0:
            q["vector"] = (await self._embed([query]))[0]
        return q

    # -- embeddings --------------------------------------------------------------------------

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        embedder = self.embedder
        assert embedder is not None
        if inspect.iscoroutinefunction(embedder.embed):
            vectors = await embedder.embed(texts)
        else:
            vectors = await asyncio.to_thread(embedder.embed, texts)
            if inspect.isawaitable(vectors):
                vectors = await vectors
        vectors = [[float(x) for x in v] for v in vectors]
        if len(vectors) != len(texts):
            raise ValueError(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
        for v in vectors:
            if len(v) != embedder.dimensions:
                raise ValueError(f"embedder returned a vector of {len(v)} numbers; its dimensions are "
                                 f"{embedder.dimensions}")
        return vectors

    async def _write_recalls(self, app_name: str, user_id: str, recalls: list[_Recall], *, replace: bool) -> None:
        """Embeds and stores the recall copies not already stored with the same content.
        A copy belongs to one (session, memory id), as the event it copies does: `replace`
        (a whole session, or memories) updates an existing copy, as the store replaces the
        event; otherwise (appended events) an existing copy stays, as the store keeps the
        first event with an id."""
        todo = await asyncio.to_thread(self._recalls_to_write, app_name, user_id, recalls, replace)
        if not todo:
            return
        vectors = await self._embed([r.text for r, _ in todo])
        for (r, _), v in zip(todo, vectors):
            r.episode["embedding"] = v
        await asyncio.to_thread(self._store_recalls, app_name, user_id, todo)

    def _recalls_to_write(self, app_name: str, user_id: str, recalls: list[_Recall],
                          replace: bool) -> list[tuple[_Recall, int]]:
        """The recalls to embed, each with its fingerprint: not written before with the same
        content by this service, and not of a buried memory id. A memory that has a recall
        copy keeps its id (the write is a new revision of it)."""
        with self._embedded_lock:
            fresh = []
            for r in recalls:
                fp = hash(json.dumps(r.episode, sort_keys=True, ensure_ascii=False, default=str))
                if self._embedded.get(_cache_key(app_name, user_id, r)) != fp:
                    fresh.append((r, fp))
        if not fresh:
            return []
        by_token: dict[str, list[_Recall]] = {}
        for r, _ in fresh:
            by_token.setdefault(_memory_token(r.memory_id), []).append(r)
        tokens = list(by_token)
        buried = {t for rec in self._find(app_name, user_id, tokens, BURIED_TYPE)
                  for t in (rec.get("secondary") or "").split() if t in by_token}
        stored = set()
        for rec in self._find(app_name, user_id, tokens, RECALL_TYPE):
            for t in (rec.get("secondary") or "").split():
                for r in by_token.get(t, []):
                    if rec.get("session_id") == r.episode.get("session_id"):
                        r.episode["id"] = rec["id"]
                        stored.add(id(r))
        return [(r, fp) for r, fp in fresh
                if _memory_token(r.memory_id) not in buried and (replace or id(r) not in stored)]

    def _store_recalls(self, app_name: str, user_id: str, todo: list[tuple[_Recall, int]]) -> None:
        self.store.put_episodes(app_name, user_id, [r.episode for r, _ in todo])
        with self._embedded_lock:
            for r, fp in todo:
                key = _cache_key(app_name, user_id, r)
                self._embedded[key] = fp
                self._embedded.move_to_end(key)
            while len(self._embedded) > _EMBEDDED_CACHE:
                self._embedded.popitem(last=False)

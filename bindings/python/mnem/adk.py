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

With an `embedder` (see `MemoryEmbedder`), the service registers it on the store: the library
stores each event and memory with the vector of its text, in the same write, and
`search_memory` answers by `mnem_recall` (ADK's ranking fused with vector similarity).
`embedder="builtin"` (URI option `embedder=builtin`) uses the model the library carries
(all-MiniLM-L6-v2, shipped inside this wheel): semantic recall with nothing to set up.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import math
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Union, runtime_checkable
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ._store import Store

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["MnemMemoryService", "MemoryEmbedder", "register", "parse_uri", "DEFAULT_SEMANTIC_WEIGHT", "SEARCH_MODES"]

# Weight of the vector channel in hybrid search (the BM25 channel gets 1 - this).
DEFAULT_SEMANTIC_WEIGHT = 0.5
SEARCH_LIMIT = 10
# search_memory's modes (mnem_recall's `mode`): ADK's ranking (exact, the default without an
# embedder); BM25 over the memories; BM25 fused with vector similarity (the default with an
# embedder); ADK's ranking fused with vector similarity.
SEARCH_MODES = ("adk", "bm25", "hybrid", "adk_vectors")
MAX_SEARCH_LIMIT = 100
# ADK's bucket for events added without a session id (mnem_add_events uses it for "").
UNKNOWN_SESSION_ID = "__unknown_session_id__"


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


def _mode_option(name: str, value: str) -> str:
    if value in SEARCH_MODES:
        return value
    raise ValueError(f"mnem URI option {name}={value!r}: expected one of {', '.join(SEARCH_MODES)}")


def _embedder_option(name: str, value: str) -> Optional[str]:
    if value in ("builtin", "none"):
        return None if value == "none" else value
    raise ValueError(f"mnem URI option {name}={value!r}: expected builtin or none")


# URI query option -> (keyword argument of MnemMemoryService, parser)
_URI_OPTIONS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "sync_writes": ("sync_writes", _bool_option),
    "read_only": ("read_only", _bool_option),
    "create": ("create", _bool_option),
    "cache_bytes": ("cache_bytes", _int_option),
    "write_yield_ms": ("write_yield_ms", _int_option),
    "semantic_weight": ("semantic_weight", _float_option),
    "embedder": ("embedder", _embedder_option),
    "mode": ("search_mode", _mode_option),
    "limit": ("search_limit", _int_option),
    "min_score": ("min_score", _float_option),
    "author": ("author", lambda _name, value: value),
    "max_age": ("max_age", _float_option),
}


def parse_uri(uri: str, agents_dir: Optional[str] = None) -> tuple[str, dict[str, Any]]:
    """Splits a memory service URI into the store path and keyword options.

    Forms (the scheme is whatever the service was registered under, "mnem" by default):
    `mnem:///abs/dir` (absolute), `mnem://rel/dir` (relative to `agents_dir`, the agents
    directory ADK passes, else to the working directory), `mnem://:memory:` (a store inside
    the process). Query options: sync_writes, read_only, create (true/false), cache_bytes
    and write_yield_ms (integers, mnem_open's options), semantic_weight (0 to 1), embedder (builtin or none), and search_memory's
    defaults: mode (adk, bm25, hybrid, adk_vectors), limit (1 to 100), min_score (a number),
    author (a string), max_age (seconds). Anything else is a ValueError naming it.
    """
    if isinstance(uri, str) and "+postgres" in uri.split("://", 1)[0]:
        return _parse_postgres_uri(uri)
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


def _parse_postgres_uri(uri: str) -> tuple[str, dict[str, Any]]:
    """`mnem+postgresql://user@host/db?schema=s&create=true`: the store in PostgreSQL. The
    service's own options (those of `parse_uri`) leave the query; the rest, with the URI,
    goes to the library as it is (libpq's parameters and mnem's `schema`, `pool_size`,
    `pool_timeout`, `statement_timeout`: the README)."""
    scheme, rest = uri.split("://", 1)
    pg_scheme = scheme.split("+", 1)[1]
    if pg_scheme not in ("postgresql", "postgres"):
        raise ValueError(f"mnem URI {uri!r}: expected mnem+postgresql://...")
    head, _, query = rest.partition("?")
    options: dict[str, Any] = {}
    kept = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _URI_OPTIONS:
            name, parse = _URI_OPTIONS[key]
            options[name] = parse(key, value)
        else:
            kept.append(f"{quote(key, safe='')}={quote(value, safe='')}")
    path = f"{pg_scheme}://{head}" + (f"?{'&'.join(kept)}" if kept else "")
    return path, options


def register(scheme: str = "mnem", **service_kwargs: Any) -> None:
    """Registers MnemMemoryService for `scheme://` memory URIs with ADK's service registry.

    Put it in the agents directory's services.py; then
    `adk web --memory_service_uri mnem:///var/lib/agent/memory agents/` uses mnem.
    `service_kwargs` (for example `embedder=...`) go to every service the factory builds.
    """
    from google.adk.cli.service_registry import get_service_registry

    def factory(uri: str, **kwargs: Any) -> MnemMemoryService:
        return MnemMemoryService(uri=uri, **{**service_kwargs, **kwargs})

    registry = get_service_registry()
    for name in (scheme, f"{scheme}+postgresql", f"{scheme}+postgres"):
        registry.register_memory_service(name, factory)


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


def _tags(value: Any) -> Optional[list[str]]:
    """custom_metadata["tags"]: one string or a list of them."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(t) for t in value]


def _entry_from_search(m: Mapping[str, Any]) -> MemoryEntry:
    return MemoryEntry(
        id=m.get("id"),
        content=types.Content.model_validate(m["content"]),
        author=m.get("author"),
        timestamp=m.get("timestamp"),
        custom_metadata=m.get("custom_metadata") or {},
    )


# ---- the service -----------------------------------------------------------------------------


class _Done:
    """An awaitable that is already complete (what `close()` returns after closing at once)."""

    def __await__(self):
        return iter(())


class MnemMemoryService(BaseMemoryService):
    """A BaseMemoryService over a mnem store (":memory:" for an in-process one).

    `path` is the store directory; alternatively `uri` (a mnem:// URI, see `parse_uri`) with
    `agents_dir` for relative ones, as ADK's service registry and services.yaml pass them.
    `embedder` turns on semantic recall (a `MemoryEmbedder`, or "builtin" for the model the
    library carries); `semantic_weight` is then the vector channel's weight in hybrid search
    (default 0.5; BM25 gets the rest). `embedding_model` names the model of a `MemoryEmbedder`
    (`Store.set_embedder(model=...)`): the name is recorded with the vectors it makes, and a
    namespace whose vectors name another model (or name one, for an unnamed embedder) refuses
    its writes and searches with `mnem.InvalidArgument` instead of comparing vectors of two
    models. It needs a `MemoryEmbedder`; "builtin" names its own model.
    Close with `await service.close()` or `async with` in async code, `close()` or `with`
    elsewhere.
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]] = None, *, uri: Optional[str] = None,
                 agents_dir: Optional[str] = None, create: Optional[bool] = None, read_only: bool = False,
                 sync_writes: bool = False, cache_bytes: Optional[int] = None, write_yield_ms: Optional[int] = None,
                 store: Optional[Store] = None,
                 embedder: Optional[Union[MemoryEmbedder, str]] = None,
                 embedding_model: Optional[str] = None,
                 semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT, search_mode: Optional[str] = None,
                 search_limit: Optional[int] = None, min_score: Optional[float] = None,
                 author: Optional[str] = None, max_age: Optional[float] = None):
        if uri is not None:
            if path is not None or store is not None:
                raise ValueError("give one of path, uri and store")
            path, opts = parse_uri(uri, agents_dir)
            create = opts.get("create", create)
            read_only = opts.get("read_only", read_only)
            sync_writes = opts.get("sync_writes", sync_writes)
            cache_bytes = opts.get("cache_bytes", cache_bytes)
            write_yield_ms = opts.get("write_yield_ms", write_yield_ms)
            semantic_weight = opts.get("semantic_weight", semantic_weight)
            embedder = opts.get("embedder", embedder)
            search_mode = opts.get("search_mode", search_mode)
            search_limit = opts.get("search_limit", search_limit)
            min_score = opts.get("min_score", min_score)
            author = opts.get("author", author)
            max_age = opts.get("max_age", max_age)
        if not (isinstance(semantic_weight, (int, float)) and math.isfinite(semantic_weight)
                and 0 <= semantic_weight <= 1):
            raise ValueError(f"semantic_weight must be a number from 0 to 1, got {semantic_weight!r}")
        if search_mode is None:
            search_mode = "adk" if embedder is None else "hybrid"
        _check_search_options(search_mode, search_limit, min_score, author, max_age)
        builtin = embedder == "builtin"
        if isinstance(embedder, str) and not builtin:
            raise ValueError(f"embedder must be \"builtin\" or a MemoryEmbedder, got {embedder!r}")
        if builtin and store is not None:
            raise ValueError("embedder=\"builtin\" is an option of the store's open: open the Store with "
                             "options={\"embedder\": \"builtin\"} instead")
        if embedding_model is not None:
            if embedder is None:
                raise ValueError("embedding_model names the model of an embedder: give embedder= too")
            if builtin:
                raise ValueError("embedding_model cannot be combined with embedder=\"builtin\", which names "
                                 "its own model")
            if not isinstance(embedding_model, str):
                raise TypeError(f"embedding_model must be a str, got {embedding_model!r}")
        if embedder is not None and not builtin:
            dims = getattr(embedder, "dimensions", None)
            if not callable(getattr(embedder, "embed", None)) or not isinstance(dims, int) or dims <= 0:
                raise TypeError("embedder must have an int `dimensions` > 0 and an `embed(texts)` method")
        self._owns_store = store is None
        if store is None:
            if path is None:
                path = ":memory:"
            path = os.fspath(path)
            remote = path.startswith(("postgresql://", "postgres://"))
            if path != ":memory:" and not remote and not read_only and create is not False:
                # mnem creates the store directory, not its parents.
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            options: dict[str, Any] = {"cache_bytes": cache_bytes} if cache_bytes is not None else {}
            if write_yield_ms is not None:
                options["write_yield_ms"] = write_yield_ms
            if builtin:
                options["embedder"] = "builtin"
            store = Store(path, create=create, read_only=read_only, sync_writes=sync_writes, options=options)
        self.store = store
        self.embedder = embedder
        self.embedding_model = embedding_model
        self.semantic_weight = float(semantic_weight)
        self.search_mode = search_mode
        self.search_limit = search_limit
        self.min_score = min_score
        self.author = author
        self.max_age = max_age
        # The loop an async embedder runs on: the one of the service call in progress (the
        # library calls the embedder from that call's worker thread).
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._loop_lock = threading.Lock()
        if embedder is not None and not builtin:
            try:
                store.set_embedder(self._embed_one, model=embedding_model)
            except BaseException:
                # A model name the library refuses (empty, over 256 bytes): the store this
                # service opened is not left open.
                if self._owns_store:
                    store.close()
                raise

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
        await self._run(write)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence["Event"],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        """Appends events (ADK's delta ingest). custom_metadata keys mnem reads: "ttl_ms"
        (int > 0, the events expire), "tags" (list of str), "episode_type" (str)."""
        def write():
            self.store.add_events(app_name, user_id, session_id or "", _events_jsonl(events), custom_metadata)
        await self._run(write)

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
        if self.embedder is not None:
            # The library embeds the text (none for a blank one) in the same write.
            for ep in episodes:
                ep["embed"] = True
        await self._run(self.store.put_episodes, app_name, user_id, episodes)

    # -- deletes -----------------------------------------------------------------------------

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Removes every memory reported with `memory_id` (ADK's delete hook); the id is never stored again."""
        if not memory_id:
            return

        # The library's tombstone hides the memory from every search, vectors included.
        await asyncio.to_thread(self.store.delete_memory, app_name, user_id, memory_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str | None) -> int:
        """Deletes what one session added to memory (its add_session_to_memory and
        add_events_to_memory events, with their vectors): search then ranks as if the
        session had never been added. Returns the number of events deleted. Not part of
        BaseMemoryService. Like every delete, the text leaves the records at once and the
        store's files at their next compaction; `forget_user` erases at once."""
        bucket = session_id or UNKNOWN_SESSION_ID

        return await asyncio.to_thread(self.store.delete_session, app_name, user_id, bucket)

    async def forget_user(self, *, app_name: str, user_id: str) -> None:
        """Erases everything stored for `(app_name, user_id)`: memories, deletion marks,
        indexes, embeddings; the bytes are compacted out of the store's files before this
        returns. Not part of BaseMemoryService."""
        await asyncio.to_thread(self.store.forget_namespace, app_name, user_id)

    # -- search ------------------------------------------------------------------------------

    async def search_memory(self, *, app_name: str, user_id: str, query: str, mode: Optional[str] = None,
                            limit: Optional[int] = None, min_score: Optional[float] = None,
                            session_id: Optional[str] = None, author: Optional[str] = None,
                            since: Optional[Union[float, datetime]] = None,
                            until: Optional[Union[float, datetime]] = None) -> SearchMemoryResponse:
        """Searches the user's memories.

        With no option set here or on the service, and no embedder, the answer is exactly
        google-adk's InMemoryMemoryService's (`mnem_search`). The keyword arguments (beyond
        ADK's) override the service's defaults for this call:

        - `mode`: "adk" (ADK's ranking, at most 10 memories), "bm25" (BM25 over the memories),
          "hybrid" (BM25 fused with vector similarity; the default with an embedder), or
          "adk_vectors" (ADK's ranking fused with vector similarity). Without an embedder,
          "hybrid" ranks by BM25 and "adk_vectors" by ADK's ranking.
        - `limit`: at most this many memories (1 to 100; default 10).
        - `min_score`: only memories scoring at least this (BM25 in "bm25", the fused score
          in the fused modes; "adk" has no score and refuses it).
        - `session_id`, `author`: only events of that session, or by that author.
        - `since` (inclusive) and `until` (exclusive): the event's time, seconds since the
          epoch or a datetime. The service's `max_age` sets `since` to now minus it.
        """
        mode = mode if mode is not None else self.search_mode
        limit = limit if limit is not None else self.search_limit
        min_score = min_score if min_score is not None else self.min_score
        author = author if author is not None else self.author
        since = _seconds(since)
        until = _seconds(until)
        if since is None and self.max_age is not None:
            since = time.time() - self.max_age
        _check_search_options(mode, limit, min_score, author, None)
        options = {key: value for key, value in (("limit", limit), ("min_score", min_score),
                                                  ("session_id", session_id), ("author", author),
                                                  ("since", since), ("until", until)) if value is not None}
        q: dict[str, Any] = {"text": query, "mode": mode, **options}
        if mode == "adk" and not options:
            # Nothing beyond ADK's own search: mnem_search, google-adk's answer.
            result = await asyncio.to_thread(self.store.search, app_name, user_id, query)
        else:
            if mode in ("hybrid", "adk_vectors"):
                q["semantic_weight"] = self.semantic_weight
            result = await self._run(self.store.recall, app_name, user_id, q)
        return SearchMemoryResponse(memories=[_entry_from_search(m) for m in result.get("memories", [])])

    # -- embeddings --------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in a worker thread, with this loop as the one an async embedder runs on."""
        with self._loop_lock:
            self._loop = asyncio.get_running_loop()
        return await asyncio.to_thread(fn, *args)

    def _embed_one(self, text: str) -> list[float]:
        """The callback the store calls (from a worker thread) for one text's vector."""
        embedder = self.embedder
        assert embedder is not None
        vectors = embedder.embed([text])
        if inspect.isawaitable(vectors):
            loop = self._loop
            if loop is None or not loop.is_running():
                vectors = asyncio.run(_awaited(vectors))
            else:
                vectors = asyncio.run_coroutine_threadsafe(_awaited(vectors), loop).result()
        vectors = [[float(x) for x in v] for v in vectors]
        if len(vectors) != 1:
            raise ValueError(f"embedder returned {len(vectors)} vectors for 1 text")
        if len(vectors[0]) != embedder.dimensions:
            raise ValueError(f"embedder returned a vector of {len(vectors[0])} numbers; its dimensions are "
                             f"{embedder.dimensions}")
        return vectors[0]


def _seconds(t: Optional[Union[float, datetime]]) -> Optional[float]:
    if t is None:
        return None
    if isinstance(t, datetime):
        return t.timestamp()
    if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
        return float(t)
    raise TypeError(f"a time is seconds since the epoch or a datetime, got {t!r}")


def _check_search_options(mode: Any, limit: Any, min_score: Any, author: Any, max_age: Any) -> None:
    if mode not in SEARCH_MODES:
        raise ValueError(f"search mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                              or not 1 <= limit <= MAX_SEARCH_LIMIT):
        raise ValueError(f"search limit must be an integer from 1 to {MAX_SEARCH_LIMIT}, got {limit!r}")
    if min_score is not None:
        if not isinstance(min_score, (int, float)) or isinstance(min_score, bool) or not math.isfinite(min_score):
            raise ValueError(f"min_score must be a finite number, got {min_score!r}")
        if mode == "adk":
            raise ValueError("min_score needs a scored search mode (bm25, hybrid or adk_vectors); adk has no scores")
    if author is not None and not isinstance(author, str):
        raise TypeError(f"author must be a string, got {author!r}")
    if max_age is not None and (not isinstance(max_age, (int, float)) or isinstance(max_age, bool)
                                or not math.isfinite(max_age) or max_age <= 0):
        raise ValueError(f"max_age must be a positive number of seconds, got {max_age!r}")


async def _awaited(x: Awaitable[Any]) -> Any:
    return await x

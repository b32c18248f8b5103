"""google-adk memory service backed by mnem.

    from mnem.adk import MnemMemoryService
    runner = Runner(..., memory_service=MnemMemoryService("/var/lib/agent/memory"))

Search ranks exactly like ADK's InMemoryMemoryService (google-adk 2.13.0); unlike it, memories
persist in the store directory. Calls run inline: each is one short library call.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ._store import Store

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session


def _events_jsonl(events: Sequence["Event"]) -> bytes:
    return "\n".join(e.model_dump_json() for e in events).encode("utf-8")


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _is_canonical_uuid(s: str) -> bool:
    try:
        return str(uuid.UUID(s)) == s
    except ValueError:
        return False


def _memory_episode(entry: MemoryEntry, tags, ttl_ms) -> dict:
    content = json.loads(entry.content.model_dump_json())
    ep: dict[str, Any] = {
        "episode_type": "memory",
        "content": content,
        # The lexical APIs search primary; ADK search reads content like an event's.
        "primary": " ".join(p.text for p in (entry.content.parts or []) if p.text),
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


class MnemMemoryService(BaseMemoryService):
    """A BaseMemoryService over a mnem store (":memory:" for an in-process one)."""

    def __init__(self, path: str = ":memory:", *, create: Optional[bool] = None, read_only: bool = False,
                 sync_writes: bool = False, store: Optional[Store] = None):
        self._owns_store = store is None
        self.store = store if store is not None else Store(path, create=create, read_only=read_only,
                                                           sync_writes=sync_writes)

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    async def add_session_to_memory(self, session: "Session") -> None:
        self.store.add_session(session.app_name, session.user_id, session.id, _events_jsonl(session.events))

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence["Event"],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        self.store.add_events(app_name, user_id, session_id or "", _events_jsonl(events), custom_metadata)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        """Stores each MemoryEntry as an episode of type "memory" (searchable by search_memory).

        custom_metadata keys: "tags" (list of str) and "ttl_ms" (int > 0) apply to every entry.
        An entry whose id was removed by delete_memory is refused: the call raises
        mnem.InvalidArgument naming it and stores none of the entries (a deleted memory
        never returns, whichever call writes it).
        """
        meta = dict(custom_metadata or {})
        tags = meta.get("tags")
        if tags is not None:
            tags = [tags] if isinstance(tags, str) else [str(t) for t in tags]
        ttl_ms = meta.get("ttl_ms")
        episodes = [_memory_episode(m, tags, ttl_ms) for m in memories]
        if episodes:
            self.store.put_episodes(app_name, user_id, episodes)

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        if not memory_id:
            return
        self.store.delete_memory(app_name, user_id, memory_id)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        result = self.store.search(app_name, user_id, query)
        return SearchMemoryResponse(memories=[
            MemoryEntry(
                id=m.get("id"),
                content=types.Content.model_validate(m["content"]),
                author=m.get("author"),
                timestamp=m.get("timestamp"),
                custom_metadata=m.get("custom_metadata") or {},
            )
            for m in result.get("memories", [])
        ])

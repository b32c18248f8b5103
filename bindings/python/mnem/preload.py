"""google-adk's preload-memory tool with a budget, a cap on the count, and de-duplication.

    from mnem.preload import PreloadMemoryTool
    agent = Agent(..., tools=[PreloadMemoryTool(max_tokens=1000, max_memories=5, dedupe=True)])

ADK's `PreloadMemoryTool` (google-adk 2.13.0) searches memory with the user's message before
every model call and puts every memory found into the request. This one does the same (the
same query, the same `tool_context.search_memory`, the same text in the same place of the
request) and can bound what it puts there. With no option set it inserts exactly what ADK's
inserts. It works with any memory service, not only `mnem.adk.MnemMemoryService`.

This module imports google-adk; `import mnem` does not import it.
"""
from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Optional

from google.adk.tools import _memory_entry_utils
from google.adk.tools.preload_memory_tool import PreloadMemoryTool as AdkPreloadMemoryTool
from google.adk.tools.tool_context import ToolContext
from google.adk.utils import content_utils
from google.genai import types

if TYPE_CHECKING:
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.models.llm_request import LlmRequest

__all__ = ["PreloadMemoryTool", "estimate_tokens", "FRAMING_HEADER", "FRAMING_FOOTER"]

logger = logging.getLogger(__name__)

# The text ADK's PreloadMemoryTool (google-adk 2.13.0) puts around the memory lines, verbatim:
# the inserted text is FRAMING_HEADER + "\n".join(lines) + FRAMING_FOOTER (176 UTF-8 bytes of
# framing).
FRAMING_HEADER = (
    "The following content is from your previous conversations with the user.\n"
    "They may be useful for answering the user's current query.\n"
    "<PAST_CONVERSATIONS>\n"
)
FRAMING_FOOTER = "\n</PAST_CONVERSATIONS>\n"


def estimate_tokens(text: str) -> int:
    """The default token count: ceil(UTF-8 bytes / 4).

    An estimate, not any model's tokenizer: about right for English prose with common
    tokenizers, often low for other scripts, code and numbers. Pass `count_tokens` (your model's
    tokenizer) to `PreloadMemoryTool` for a budget in real tokens.
    """
    return -(-len(text.encode("utf-8")) // 4)


def _budget(name: str, value: object) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int or None, not bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int or None, not {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return n


def _normalise(text: str) -> str:
    # strip, and every run of whitespace (str.split's: Unicode whitespace) becomes one space.
    return " ".join(text.split())


class PreloadMemoryTool(AdkPreloadMemoryTool):
    """ADK's preload-memory tool, with limits on what it inserts.

    Before each model call: the user content's text parts (thoughts left out), joined by a
    space, are the query for `tool_context.search_memory`; each memory found gives the lines
    `Time: <timestamp>` (if it has one) and `<author>: <text>` (or `<text>` without an author;
    none if it has no text); the lines, inside ADK's framing (`FRAMING_HEADER` +
    "\\n".join(lines) + `FRAMING_FOOTER`), go into the request as one user content before the
    current user turn. If the search fails (logged) or nothing is left, nothing is inserted.
    All of that is ADK's PreloadMemoryTool's behaviour, and with no option set (the defaults)
    the inserted text is identical to ADK's.

    Options:

    - `max_bytes`: the inserted text, framing included, is at most this many UTF-8 bytes.
    - `max_tokens`: `count_tokens(inserted text)`, framing included, is at most this.
    - `count_tokens`: `Callable[[str], int]`, called on the whole text that would be inserted
      (so a tokenizer that does not add up piece by piece is still respected exactly). Default:
      `estimate_tokens`, ceil(UTF-8 bytes / 4), an estimate, not a real token count.
    - `max_memories`: at most this many memories are inserted.
    - `dedupe`: leave out a memory with no text (after stripping whitespace; its `Time:` line
      too) and a memory whose text, stripped and with each run of whitespace made one space
      (whitespace as `str.split()` finds it, Unicode's), equals that of a memory before it in
      the search's order; the first one is kept as it was. A memory's text is its text parts
      joined by a space, as ADK's tool joins them. Author and timestamp do not matter; case
      does. Off by default, since ADK's tool keeps such memories.

    Memories are taken in the search's order (its ranking); the first memory that would
    exceed `max_bytes`, `max_tokens` or `max_memories` stops the list: it and everything after
    it are left out, even a smaller one that would fit (so a less relevant memory never takes
    the place of a more relevant one), and no memory is ever cut. Memories left out by
    `dedupe`, and memories with nothing to insert (no text and no timestamp), are passed over
    and do not count. The framing alone is 176 bytes (44 estimated tokens): a budget smaller
    than the framing plus the first memory inserts nothing. 0 is a valid limit (insert nothing);
    None (the default) is no limit.
    """

    def __init__(
        self,
        *,
        max_tokens: Optional[int] = None,
        max_bytes: Optional[int] = None,
        max_memories: Optional[int] = None,
        count_tokens: Optional[Callable[[str], int]] = None,
        dedupe: bool = False,
    ) -> None:
        super().__init__()
        self.max_tokens = _budget("max_tokens", max_tokens)
        self.max_bytes = _budget("max_bytes", max_bytes)
        self.max_memories = _budget("max_memories", max_memories)
        if count_tokens is None:
            count_tokens = estimate_tokens
        elif not callable(count_tokens):
            raise TypeError(f"count_tokens must be a callable (str -> int), not {type(count_tokens).__name__}")
        self.count_tokens = count_tokens
        if not isinstance(dedupe, bool):
            raise TypeError(f"dedupe must be a bool, not {type(dedupe).__name__}")
        self.dedupe = dedupe

    def __repr__(self) -> str:
        return (f"PreloadMemoryTool(max_tokens={self.max_tokens!r}, max_bytes={self.max_bytes!r}, "
                f"max_memories={self.max_memories!r}, dedupe={self.dedupe!r})")

    def _tokens(self, text: str) -> int:
        n = self.count_tokens(text)
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"count_tokens must return an int, returned {type(n).__name__}")
        if n < 0:
            raise ValueError(f"count_tokens returned a negative count: {n}")
        return n

    def memory_context(self, memories: Sequence[MemoryEntry]) -> Optional[str]:
        """The text this tool inserts for these search results (in the search's order), or None
        when it inserts nothing."""
        budgeted = self.max_bytes is not None or self.max_tokens is not None
        seen: set[str] = set()
        lines: list[str] = []
        size = len(FRAMING_HEADER.encode("utf-8")) + len(FRAMING_FOOTER.encode("utf-8"))
        taken = 0
        for memory in memories:
            text = _memory_entry_utils.extract_text(memory)
            if self.dedupe:
                key = _normalise(text)
                if not key or key in seen:
                    continue
            mine = []
            if memory.timestamp:
                mine.append(f"Time: {memory.timestamp}")
            if text:
                mine.append(f"{memory.author}: {text}" if memory.author else text)
            if not mine:
                continue
            if self.max_memories is not None and taken >= self.max_memories:
                break
            if budgeted:
                added = sum(len(line.encode("utf-8")) for line in mine) + len(mine) - (0 if lines else 1)
                if self.max_bytes is not None and size + added > self.max_bytes:
                    break
                if self.max_tokens is not None and self._tokens(self._wrap(lines + mine)) > self.max_tokens:
                    break
                size += added
            if self.dedupe:
                seen.add(key)
            lines += mine
            taken += 1
        if not lines:
            return None
        if taken < len(memories):
            logger.debug("preload_memory: inserting %d of %d memories (%d bytes)", taken, len(memories),
                         len(self._wrap(lines).encode("utf-8")))
        return self._wrap(lines)

    @staticmethod
    def _wrap(lines: list[str]) -> str:
        return FRAMING_HEADER + "\n".join(lines) + FRAMING_FOOTER

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: LlmRequest) -> None:
        user_query = content_utils.extract_text_from_content(tool_context.user_content, splitter=" ")
        if not user_query:
            return
        try:
            response = await tool_context.search_memory(user_query)
        except Exception:
            logger.warning("Failed to preload memory (query length: %d)", len(user_query), exc_info=True)
            return
        if not response.memories:
            return
        memory_context = self.memory_context(response.memories)
        if memory_context is None:
            return
        llm_request._insert_transient_user_content([  # the same call ADK's tool makes
            types.Content(role="user", parts=[types.Part.from_text(text=memory_context)])
        ])

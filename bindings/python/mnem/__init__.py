"""Python binding of mnem, a persistent memory store for AI agents (ctypes over libmnem's C ABI).

    import mnem
    with mnem.Store("/path/to/dir") as store:
        store.add_session("app", "user", "s1", events_jsonl)
        store.search("app", "user", "query")

`mnem.adk.MnemMemoryService` plugs the store into google-adk as a BaseMemoryService.
`mnem.preload.PreloadMemoryTool` is google-adk's preload-memory tool with budgets and de-duplication.
Both modules import google-adk; `import mnem` does not.
"""
from __future__ import annotations

from pathlib import Path

from . import _lib
from ._errors import (
    Busy, BufferTooSmall, Corruption, EmbedderFailed, Incompatible, Internal, InvalidArgument, IOFailure, MnemError, NotFound,
    ReadOnly, status_name,
)
from ._lib import (
    BUFFER_TOO_SMALL, BUSY, CORRUPTION, EMBEDDER_FAILED, INCOMPATIBLE, INTERNAL, INVALID_ARGUMENT, IO, NOT_FOUND, OK, READ_ONLY,
)
from ._store import Embedder, Store

__all__ = [
    "Store", "Embedder", "MnemError", "InvalidArgument", "BufferTooSmall", "NotFound", "Busy", "ReadOnly",
    "IOFailure", "Corruption", "Incompatible", "EmbedderFailed", "Internal", "status_name", "abi_version", "version", "library_path",
    "OK", "INVALID_ARGUMENT", "BUFFER_TOO_SMALL", "NOT_FOUND", "BUSY", "READ_ONLY", "IO", "CORRUPTION",
    "INCOMPATIBLE", "EMBEDDER_FAILED", "INTERNAL",
]

ABI_VERSION = _lib.ABI_VERSION


def abi_version() -> int:
    return _lib.lib().mnem_abi_version()


def version() -> str:
    return _lib.lib().mnem_version().decode()


def library_path() -> Path:
    """The libmnem.so in use: MNEM_LIB when set, else the one bundled in the package."""
    return _lib.lib().path

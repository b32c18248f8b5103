"""MnemError and one subclass per mnem_status."""
from __future__ import annotations

from typing import Optional

from . import _lib as L


class MnemError(Exception):
    """A call returned a non-OK mnem_status."""

    status: int = -1
    # Set only when the library's err.code differed from the returned status (a library bug).
    error_code: Optional[int] = None

    def __init__(self, status: int, status_name: str, message: str):
        super().__init__(f"{status_name} ({status}): {message}" if message else f"{status_name} ({status})")
        self.status = status
        self.status_name = status_name
        self.message = message


class InvalidArgument(MnemError, ValueError):
    status = L.INVALID_ARGUMENT


class BufferTooSmall(MnemError):
    status = L.BUFFER_TOO_SMALL


class NotFound(MnemError, LookupError):
    status = L.NOT_FOUND


class Busy(MnemError):
    status = L.BUSY


class ReadOnly(MnemError):
    status = L.READ_ONLY


class IOFailure(MnemError, OSError):
    status = L.IO


class Corruption(MnemError):
    status = L.CORRUPTION


class Incompatible(MnemError):
    status = L.INCOMPATIBLE


class EmbedderFailed(MnemError):
    """The embedder (the caller's model) failed or returned no valid vector; nothing was written."""
    status = L.EMBEDDER_FAILED


class Internal(MnemError):
    status = L.INTERNAL


_BY_STATUS = {c.status: c for c in (InvalidArgument, BufferTooSmall, NotFound, Busy, ReadOnly, IOFailure,
                                    Corruption, Incompatible, EmbedderFailed, Internal)}


def status_name(status: int) -> str:
    raw = L.lib().mnem_status_name(status)
    return raw.decode("utf-8", "replace") if raw else "UNKNOWN"


def check(status: int, err: "L.ErrorBuf") -> None:
    if status == L.OK:
        return
    message = err.message.decode("utf-8", "replace")
    cls = _BY_STATUS.get(status, MnemError)
    exc = cls(status, status_name(status), message)
    if err.code != status:
        # include/mnem.h promises err.code == returned status; keep a mismatch visible.
        exc.error_code = err.code
    raise exc

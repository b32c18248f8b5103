"""ctypes declarations of the mnem C ABI (include/mnem.h)."""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, c_char, c_char_p, c_int32, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union, overload

ABI_VERSION = 1
ERROR_MESSAGE_CAP = 512
OPEN_CREATE = 1
OPEN_READ_ONLY = 2
OPEN_VIEW = 4

OK = 0
INVALID_ARGUMENT = 1
BUFFER_TOO_SMALL = 2
NOT_FOUND = 3
BUSY = 4
READ_ONLY = 5
IO = 6
CORRUPTION = 7
INCOMPATIBLE = 8
EMBEDDER_FAILED = 9
INTERNAL = 100


class MnemStr(ctypes.Structure):
    # c_char_p keeps a reference to the bytes object in the struct, so the
    # pointer stays valid for the duration of the call; len carries the size
    # (embedded NULs are fine, no terminator is read).
    _fields_ = [("ptr", c_char_p), ("len", c_size_t)]


class ErrorBuf(ctypes.Structure):
    _fields_ = [("code", c_int32), ("detail", c_uint32), ("message", c_char * ERROR_MESSAGE_CAP)]


class MnemStrIn(ctypes.Structure):
    # A mnem_str that mnem passes to a callback: c_void_p, since its bytes have no NUL.
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


# mnem_embed_fn: (user_data, text, out, out_cap, out_len, err) -> status.
EMBED_FN = ctypes.CFUNCTYPE(c_int32, c_void_p, MnemStrIn, POINTER(ctypes.c_float), c_size_t, POINTER(c_size_t),
                            POINTER(ErrorBuf))

_u8p = POINTER(c_uint8)
_store = c_void_p
_err = POINTER(ErrorBuf)

# name -> (restype, argtypes)
SIGNATURES = {
    "mnem_abi_version": (c_uint32, []),
    "mnem_version": (c_char_p, []),
    "mnem_status_name": (c_char_p, [c_int32]),
    "mnem_open": (c_int32, [MnemStr, c_uint32, MnemStr, POINTER(c_void_p), _err]),
    "mnem_flush": (c_int32, [_store, _err]),
    "mnem_free": (None, [_store]),
    "mnem_add_session": (c_int32, [_store, MnemStr, MnemStr, MnemStr, MnemStr, POINTER(c_uint64), _err]),
    "mnem_add_events": (c_int32, [_store, MnemStr, MnemStr, MnemStr, MnemStr, MnemStr, POINTER(c_uint64), _err]),
    "mnem_delete_memory": (c_int32, [_store, MnemStr, MnemStr, MnemStr, POINTER(c_uint64), _err]),
    "mnem_search": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_put_episodes": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, _err]),
    "mnem_put_episodes_v2": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_delete_episodes": (c_int32, [_store, MnemStr, MnemStr, MnemStr, POINTER(c_uint64), _err]),
    "mnem_keyword_search": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_lexical_page": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_substring_search": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_hybrid_search": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_stats": (c_int32, [_store, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_set_embedder": (c_int32, [_store, EMBED_FN, c_void_p, _err]),
    "mnem_set_named_embedder": (c_int32, [_store, MnemStr, EMBED_FN, c_void_p, _err]),
    "mnem_hybrid_search_with": (c_int32, [_store, MnemStr, MnemStr, MnemStr, EMBED_FN, c_void_p, _u8p, c_size_t,
                                          POINTER(c_size_t), _err]),
    "mnem_recall": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_delete_session": (c_int32, [_store, MnemStr, MnemStr, MnemStr, POINTER(c_uint64), _err]),
    "mnem_forget_namespace": (c_int32, [_store, MnemStr, MnemStr, _err]),
    "mnem_compact": (c_int32, [_store, _err]),
    "mnem_get_episodes": (c_int32, [_store, MnemStr, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_list_namespaces": (c_int32, [_store, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_namespace_stats": (c_int32, [_store, MnemStr, MnemStr, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_backup": (c_int32, [_store, MnemStr, _err]),
    "mnem_check": (c_int32, [_store, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_export": (c_int32, [_store, MnemStr, MnemStr, c_int32, _u8p, c_size_t, POINTER(c_size_t), _err]),
    "mnem_import": (c_int32, [_store, MnemStr, POINTER(c_uint64), _err]),
    "mnem_export_page": (c_int32, [_store, MnemStr, MnemStr, c_int32, MnemStr, c_uint64, _u8p, c_size_t,
                                   POINTER(c_size_t), _err]),
}


def bundled_path() -> Path:
    """Where a wheel puts the library: inside the package, next to this file."""
    return Path(__file__).resolve().parent / "libmnem.so"


def candidate_paths() -> list[Path]:
    """Where the library is looked for, in order: `MNEM_LIB` (an explicit choice), the copy
    bundled in the package, then a development build under `$CARGO_TARGET_DIR/release`."""
    out = []
    if os.environ.get("MNEM_LIB"):
        out.append(Path(os.environ["MNEM_LIB"]))
    out.append(bundled_path())
    if os.environ.get("CARGO_TARGET_DIR"):
        out.append(Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "libmnem.so")
    return out


def find_library() -> Path:
    cands = candidate_paths()
    if os.environ.get("MNEM_LIB"):
        # An explicit choice is never silently replaced by another build.
        return cands[0]
    for p in cands:
        if p.is_file():
            return p
    raise OSError("libmnem.so not found; tried: " + ", ".join(map(str, cands))
                  + " (install the mnem-memory wheel, or set MNEM_LIB to a built libmnem.so)")


class _Missing:
    """Stands in for a symbol the loaded library does not export."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args):
        raise NotImplementedError(f"{self.name} is not exported by the loaded libmnem")


class Lib:
    """The loaded library: one attribute per SIGNATURES entry (set in __init__)."""

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, path: Path):
        self.path = path
        self.dll = ctypes.CDLL(str(path))
        self.missing = []
        for name, (res, args) in SIGNATURES.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                self.missing.append(name)
                setattr(self, name, _Missing(name))
                continue
            fn.restype = res
            fn.argtypes = args
            setattr(self, name, fn)
        if "mnem_abi_version" not in self.missing and self.mnem_abi_version() != ABI_VERSION:
            raise OSError(f"{path}: ABI version {self.mnem_abi_version()}, this binding speaks {ABI_VERSION}")


_lock = threading.Lock()
_lib: Lib | None = None


def lib() -> Lib:
    """The process-wide library, loaded on first use."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = Lib(find_library())
    return _lib


@overload
def to_bytes(value: None) -> None: ...
@overload
def to_bytes(value: Union[str, bytes, bytearray, memoryview]) -> bytes: ...


def to_bytes(value: Any) -> Optional[bytes]:
    """str -> strict UTF-8; bytes pass through untouched (so tests can send invalid UTF-8)."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"expected str or bytes, got {type(value).__name__}")


def mstr(value) -> MnemStr:
    b = to_bytes(value)
    if b is None:
        return MnemStr(None, 0)
    return MnemStr(b, len(b))

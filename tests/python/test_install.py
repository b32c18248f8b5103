"""The installed wheel, as a user gets it (scripts/test-python installs it into a new
virtualenv and runs these tests outside the repository with no MNEM_* variable but the test
PostgreSQL server's, MNEM_TEST_PG_*, which the library never reads). Run against
the source tree (no installed mnem), they are skipped."""
import importlib.metadata
import os
import struct
from pathlib import Path

import pytest

import mnem
from mnem import _lib as L

REPO = Path(__file__).resolve().parents[2]
INSTALLED = REPO not in Path(mnem.__file__).resolve().parents

pytestmark = pytest.mark.skipif(not INSTALLED, reason="mnem is imported from the source tree, not installed")


def test_imported_from_the_installed_package():
    assert not [k for k in os.environ if k.startswith("MNEM_") and not k.startswith("MNEM_TEST_PG_")]
    assert Path(os.getcwd()).resolve() != REPO and REPO not in Path(os.getcwd()).resolve().parents
    assert "site-packages" in Path(mnem.__file__).parts


def test_the_bundled_library_is_loaded():
    assert mnem.library_path() == L.bundled_path()
    assert L.bundled_path().parent == Path(mnem.__file__).resolve().parent
    assert mnem.abi_version() == L.ABI_VERSION
    # Stripped of debug info (with it, the library is hundreds of MB).
    sections = elf_section_names(L.bundled_path())
    assert ".text" in sections and ".dynsym" in sections
    assert not [s for s in sections if s.startswith(".debug")], sections


def elf_section_names(path: Path) -> list[str]:
    """The section names of a little-endian ELF64 file."""
    data = path.read_bytes()
    assert data[:5] == b"\x7fELF\x02"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    names = []
    for i in range(shnum):
        name, = struct.unpack_from("<I", data, shoff + i * shentsize)
        start = strtab + name
        names.append(data[start:data.index(b"\0", start)].decode())
    return names


def test_distribution_metadata():
    assert importlib.metadata.version("mnem-memory") == mnem.version()
    files = {str(f) for f in importlib.metadata.files("mnem-memory")}
    assert {"mnem/py.typed", "mnem/libmnem.so", "mnem/adk.py", "mnem/preload.py"} <= files


def test_store_and_service_work(tmp_path):
    import asyncio

    from google.adk.events import Event
    from google.genai import types

    from mnem.adk import MnemMemoryService

    async def main():
        async with MnemMemoryService(uri=f"mnem://{tmp_path}/m?sync_writes=true") as svc:
            ev = Event(id="e", invocation_id="i", author="user", timestamp=1.0,
                       content=types.Content(parts=[types.Part(text="installed and working")]))
            await svc.add_events_to_memory(app_name="a", user_id="u", events=[ev])
            return [m.id for m in (await svc.search_memory(app_name="a", user_id="u", query="working")).memories]

    assert asyncio.run(main()) == ["e"]

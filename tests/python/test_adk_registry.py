"""ADK's command line builds MnemMemoryService from a mnem:// URI: through services.py
(`mnem.adk.register()`), through services.yaml (`class: mnem.adk.MnemMemoryService`), both
driven by ADK's own loader and factory, and in a real `adk api_server` process."""
import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from google.adk.cli.service_registry import load_services_module
from google.adk.cli.utils.service_factory import create_memory_service_from_options
from google.adk.events import Event
from google.genai import types

import mnem
from mnem.adk import MnemMemoryService, parse_uri

SERVICES_PY = "import mnem.adk\n\nmnem.adk.register()\n"


@pytest.fixture
def agents_dir(tmp_path):
    """An agents directory; ADK imports its services.py as the module `services`."""
    d = tmp_path / "agents"
    d.mkdir()
    yield d
    sys.modules.pop("services", None)
    while str(d) in sys.path:
        sys.path.remove(str(d))


def remember(svc, text, eid="e1"):
    ev = Event(id=eid, invocation_id="i", author="user", timestamp=1000.0,
               content=types.Content(parts=[types.Part(text=text)]))
    asyncio.run(svc.add_events_to_memory(app_name="app", user_id="u", session_id="s", events=[ev]))


def recall(svc, query):
    return [m.id for m in asyncio.run(svc.search_memory(app_name="app", user_id="u", query=query)).memories]


def build(agents_dir, uri):
    return create_memory_service_from_options(base_dir=agents_dir, memory_service_uri=uri)


def test_parse_uri_forms(tmp_path):
    assert parse_uri("mnem:///var/lib/agent/memory") == ("/var/lib/agent/memory", {})
    assert parse_uri("mnem://rel/dir", str(tmp_path)) == (str(tmp_path / "rel" / "dir"), {})
    assert parse_uri("mnem://rel", None) == (str(Path.cwd() / "rel"), {})
    assert parse_uri("mnem://:memory:") == (":memory:", {})
    assert parse_uri("mnem:///:memory:") == (":memory:", {})
    assert parse_uri("mnem:///a%20b/c") == ("/a b/c", {})
    assert parse_uri("mnem:///d?sync_writes=true&cache_bytes=2097152&read_only=false") == (
        "/d", {"sync_writes": True, "cache_bytes": 2097152, "read_only": False})
    assert parse_uri("mnem:///d?write_yield_ms=0") == ("/d", {"write_yield_ms": 0})


def test_write_yield_ms_reaches_the_open(tmp_path):
    # The library checks it: an out-of-range value from the URI fails the open, naming it.
    with pytest.raises(mnem.InvalidArgument) as e:
        MnemMemoryService(uri=f"mnem://{tmp_path}/s?write_yield_ms=1001")
    assert "write_yield_ms" in str(e.value)
    MnemMemoryService(uri=f"mnem://{tmp_path}/s?write_yield_ms=0").close()


@pytest.mark.parametrize("uri, needle", [
    ("mnem:///d?bogus=1", "'bogus'"),
    ("mnem:///d?sync_writes=maybe", "sync_writes='maybe'"),
    ("mnem:///d?cache_bytes=lots", "cache_bytes='lots'"),
    ("mnem:///d?sync_writes=true&sync_writes=false", "given twice"),
    ("mnem://", "names no store"),
    ("mnem:///", "names no store"),
    ("/plain/path", "not a mnem URI"),
    ("mnem:///d#frag", "fragment"),
])
def test_bad_uris_are_value_errors_naming_the_problem(uri, needle):
    with pytest.raises(ValueError) as e:
        parse_uri(uri)
    assert needle in str(e.value)


def test_services_py_route_absolute_relative_and_memory(agents_dir, tmp_path):
    (agents_dir / "services.py").write_text(SERVICES_PY)
    load_services_module(str(agents_dir))

    store = tmp_path / "var" / "memory"
    svc = build(agents_dir, f"mnem://{store}?sync_writes=true")
    assert isinstance(svc, MnemMemoryService)
    remember(svc, "the blue kettle")
    assert recall(svc, "kettle") == ["e1"]
    svc.close_sync()
    # The URI's directory holds the store: a plain mnem.Store reads the memory back.
    with mnem.Store(str(store), create=False) as st:
        assert [m["id"] for m in st.search("app", "u", "kettle")["memories"]] == ["e1"]

    rel = build(agents_dir, "mnem://data/mem")
    remember(rel, "green tea")
    rel.close_sync()
    assert (agents_dir / "data" / "mem").is_dir()
    with MnemMemoryService(agents_dir / "data" / "mem", create=False) as again:
        assert recall(again, "tea") == ["e1"]

    mem = build(agents_dir, "mnem://:memory:")
    remember(mem, "in process only")
    assert recall(mem, "process") == ["e1"]
    mem.close_sync()

    with pytest.raises(ValueError, match="unknown option 'colour'"):
        build(agents_dir, f"mnem://{tmp_path}/x?colour=red")


def test_services_yaml_route(agents_dir, tmp_path):
    (agents_dir / "services.yaml").write_text(
        "services:\n  - scheme: mnemyaml\n    type: memory\n    class: mnem.adk.MnemMemoryService\n")
    load_services_module(str(agents_dir))
    svc = build(agents_dir, f"mnemyaml://{tmp_path}/ystore")
    assert isinstance(svc, MnemMemoryService)
    remember(svc, "yaml route works")
    assert recall(svc, "yaml") == ["e1"]
    svc.close_sync()
    rel = build(agents_dir, "mnemyaml://yrel")
    rel.close_sync()
    assert (agents_dir / "yrel").is_dir(), "a relative URI resolves against the agents dir ADK passes"


def test_register_passes_service_options(agents_dir, tmp_path):
    mnem.adk.register(scheme="mnemopts", semantic_weight=0.25)
    svc = build(agents_dir, "mnemopts://:memory:")
    assert svc.semantic_weight == 0.25
    svc.close_sync()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_adk_api_server_process_uses_mnem(agents_dir):
    (agents_dir / "services.py").write_text(SERVICES_PY)
    agent = agents_dir / "memory_agent"
    agent.mkdir()
    (agent / "__init__.py").write_text("from . import agent\n")
    (agent / "agent.py").write_text(
        "from google.adk.agents import Agent\nfrom google.adk.tools import load_memory\n"
        "root_agent = Agent(name='memory_agent', model='gemini-2.5-flash', tools=[load_memory])\n")
    port = free_port()
    adk = Path(sys.executable).with_name("adk")
    log = agents_dir.parent / "server.log"
    # The server imports the mnem under test (installed, or the source tree's).
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(mnem.__file__).parents[1]), env.get("PYTHONPATH")]))
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(adk), "api_server", "--host", "127.0.0.1", "--port", str(port),
                                 "--memory_service_uri", "mnem://store", str(agents_dir)],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=agents_dir.parent)
    try:
        body = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/list-apps", timeout=5) as r:
                    assert r.status == 200
                    body = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert body is not None, f"api_server did not answer; log:\n{log.read_text()[-4000:]}"
        assert "memory_agent" in body
        # The server built its memory service from the URI: the store exists in the agents dir
        # and is held open (a second open is refused as busy).
        assert (agents_dir / "store" / "CURRENT").is_file(), log.read_text()[-4000:]
        with pytest.raises(mnem.Busy):
            mnem.Store(str(agents_dir / "store"), create=False)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_postgresql_uris_keep_libpq_parameters_and_take_the_services_own():
    from mnem.adk import parse_uri
    path, opts = parse_uri("mnem+postgresql://u@127.0.0.1:5/db?schema=agents&sslmode=require&create=true")
    assert path == "postgresql://u@127.0.0.1:5/db?schema=agents&sslmode=require"
    assert opts == {"create": True}
    assert parse_uri("mnem+postgres://h/db")[0] == "postgres://h/db"
    with pytest.raises(ValueError, match="postgresql"):
        parse_uri("mnem+postgresx://h/db")

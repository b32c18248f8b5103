"""An ADK API server with two worker processes (uvicorn --workers 2, the app built by ADK's own
get_fast_api_app) shares one memory in PostgreSQL: what one worker's agent saves, the other's
load_memory recalls. Needs the test server (MNEM_TEST_PG_URI; scripts/test starts one)."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import mnem

SERVER = os.environ.get("MNEM_TEST_PG_URI")
pytestmark = pytest.mark.skipif(not SERVER, reason="MNEM_TEST_PG_URI is not set")

# The scripted model of test_adk_runner (no network: a fact is "Noted.", a question calls
# load_memory and is answered with what it recalled), each answer signed with the worker's pid.
AGENT_PY = """
import os, sys
sys.path.insert(0, {tests!r})
from google.adk.agents import Agent
from google.adk.tools import load_memory
from google.genai import types
import test_adk_runner


class SignedModel(test_adk_runner.ScriptedModel):
    async def generate_content_async(self, llm_request, stream=False):
        async for r in super().generate_content_async(llm_request, stream):
            if r.content and r.content.parts and r.content.parts[0].text:
                r.content.parts.append(types.Part(text=f" [pid {{os.getpid()}}]"))
            yield r


root_agent = Agent(name="tea_agent", model=SignedModel(), tools=[load_memory],
                   after_agent_callback=test_adk_runner.save_turn)
"""

SERVE_PY = '''
import os
from google.adk.cli.fast_api import get_fast_api_app


def make_app():
    return get_fast_api_app(agents_dir=os.environ["AGENTS_DIR"], memory_service_uri=os.environ["MEMORY_URI"],
                            web=False, auto_create_session=True)
'''

WORDS = ["amber", "basil", "cedar", "dahlia", "ember", "fennel", "garnet", "hazel", "indigo", "juniper",
         "kumquat", "lilac", "mango", "nutmeg", "olive", "pepper", "quince", "russet", "saffron", "teal"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(port, session, text):
    body = json.dumps({"app_name": "tea_agent", "user_id": "ana", "session_id": session,
                       "new_message": {"role": "user", "parts": [{"text": text}]}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/run", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        events = json.loads(r.read())
    answer = "".join(p.get("text") or "" for e in events if e.get("author") == "tea_agent"
                     for p in (e.get("content") or {}).get("parts") or [])
    pid = int(answer.rsplit("[pid ", 1)[1].rstrip("]"))
    return answer, pid


def test_two_workers_share_one_memory(tmp_path):
    agents = tmp_path / "agents"
    (agents / "tea_agent").mkdir(parents=True)
    (agents / "services.py").write_text("import mnem.adk\n\nmnem.adk.register()\n")
    (agents / "tea_agent" / "__init__.py").write_text("from . import agent\n")
    (agents / "tea_agent" / "agent.py").write_text(AGENT_PY.format(tests=str(Path(__file__).parent)))
    (tmp_path / "serve.py").write_text(SERVE_PY)
    sep = "&" if "?" in SERVER else "?"
    schema = f"api_workers_{os.getpid()}_{int(time.time())}"
    port = free_port()
    env = dict(os.environ, AGENTS_DIR=str(agents), MEMORY_URI=f"mnem+{SERVER}{sep}schema={schema}&create=true")
    # The workers import the mnem under test (installed, or the source tree's).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(mnem.__file__).parents[1]), str(tmp_path),
                                                      env.get("PYTHONPATH")]))
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "serve:make_app", "--workers", "2",
                                 "--host", "127.0.0.1", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"server exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"server did not start:\n{log.read_text()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/list-apps", timeout=5) as r:
                    if "tea_agent" in r.read().decode():
                        break
            except OSError:
                time.sleep(0.5)
        # Facts told at once from several clients, so that both workers take some; asked
        # likewise in new sessions. A round repeats (new facts) until some question was
        # answered by the worker that did not save its fact, or the test proves nothing.
        crossed, writers, readers = 0, set(), set()
        with ThreadPoolExecutor(8) as pool:
            for rnd in range(10):
                facts = [f"the kettle of round{rnd} guest{k} is {WORDS[k]}{rnd}" for k in range(len(WORDS))]
                told = list(pool.map(lambda k: run(port, f"tell-{rnd}-{k}", facts[k]), range(len(facts))))
                asked = list(pool.map(lambda k: run(port, f"ask-{rnd}-{k}", f"{WORDS[k]}{rnd}?"), range(len(facts))))
                for k, ((note, wpid), (answer, rpid)) in enumerate(zip(told, asked)):
                    assert note.startswith("Noted."), note
                    assert facts[k] in answer, f"worker {rpid} did not recall what worker {wpid} saved: {answer!r}"
                    writers.add(wpid)
                    readers.add(rpid)
                    crossed += wpid != rpid
                if crossed and len(writers) == 2 and len(readers) == 2:
                    break
        assert len(writers | readers) == 2, f"expected two workers, saw pids {writers | readers}"
        assert crossed, "no question reached the worker that had not saved its fact"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()

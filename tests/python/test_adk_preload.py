"""mnem.preload.PreloadMemoryTool: google-adk 2.13.0's PreloadMemoryTool with byte and token
budgets, a cap on the count and de-duplication. With no option set its request must be
identical to ADK's tool's (fed the same search results by a fake service, and fed by
InMemoryMemoryService and MnemMemoryService holding the same sessions); each option is checked
at its boundary through a real ToolContext, and once through an ADK Runner."""
import asyncio
import logging
from typing import AsyncGenerator

import pytest
from google.adk.agents import Agent, config_agent_utils
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.memory import BaseMemoryService, InMemoryMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools.preload_memory_tool import PreloadMemoryTool as AdkPreloadMemoryTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_cases import EDGE_TEXTS
from mnem.adk import MnemMemoryService
from mnem.preload import FRAMING_FOOTER, FRAMING_HEADER, PreloadMemoryTool, estimate_tokens

APP, USER = "preload-app", "preload-user"
TS = "2023-11-15T03:43:20"


def mem(*texts, author="user", ts=TS, mid=None):
    parts = [types.Part(text=t) for t in texts]
    return MemoryEntry(id=mid, author=author, timestamp=ts, content=types.Content(role="user", parts=parts))


class FakeMemoryService(BaseMemoryService):
    """Answers every search with the same memories; records the queries."""

    def __init__(self, memories=(), fail=False):
        self.memories, self.fail, self.queries = list(memories), fail, []

    async def add_session_to_memory(self, session):
        raise NotImplementedError

    async def search_memory(self, *, app_name, user_id, query):
        assert (app_name, user_id) == (APP, USER)
        self.queries.append(query)
        if self.fail:
            raise RuntimeError("search failed")
        return SearchMemoryResponse(memories=[m.model_copy(deep=True) for m in self.memories])


def user_content(*texts, thought=None):
    return types.Content(role="user", parts=[types.Part(text=t, thought=thought) for t in texts])


def tool_context(service, content):
    invocation = InvocationContext(
        session_service=InMemorySessionService(), memory_service=service, invocation_id="inv-1",
        agent=Agent(name="agent"), session=Session(app_name=APP, user_id=USER, id="current"),
        user_content=content)
    return ToolContext(invocation)


def history(question):
    """A request as ADK builds it: earlier turns, then the current user turn."""
    return LlmRequest(contents=[
        types.Content(role="user", parts=[types.Part(text="Hello")]),
        types.Content(role="model", parts=[types.Part(text="Hi")]),
        types.Content(role="user", parts=[types.Part(text=question)]),
    ])


def run(tool, service, question="What tea do I like?", content=None):
    request = history(question)
    content = user_content(question) if content is None else content
    asyncio.run(tool.process_llm_request(tool_context=tool_context(service, content), llm_request=request))
    return request


def inserted(request):
    """The memory text the tool inserted (None if none), after checking where it went: one user
    content right before the current user turn, nothing else touched."""
    if len(request.contents) == 3:
        return None
    assert len(request.contents) == 4
    assert [c.role for c in request.contents] == ["user", "model", "user", "user"]
    assert request.contents[0].parts[0].text == "Hello" and request.contents[3].parts[0].text.endswith("?")
    (part,) = request.contents[2].parts
    return part.text


def block(*lines):
    return FRAMING_HEADER + "\n".join(lines) + FRAMING_FOOTER


def lines_of(memory):
    out = [f"Time: {memory.timestamp}"] if memory.timestamp else []
    text = " ".join(p.text for p in memory.content.parts if p.text)
    return out + ([f"{memory.author}: {text}" if memory.author else text] if text else [])


def expected(*memories):
    return block(*[line for m in memories for line in lines_of(m)])


def size(text):
    return len(text.encode("utf-8"))


# --- identical to ADK's tool with no option set ---------------------------------------------

RESULT_SETS = {
    "plain": [mem("I like oolong"), mem("Sure, noted", author="model", ts="2023-11-15T03:43:21")],
    "duplicates_and_blanks": [
        mem("tea is good"), mem("tea  is good "), mem("tea is good", author="model"), mem(""),
        mem("   \n"), mem("", ts=None), mem(ts=None), mem("Tea is good"),
    ],
    "no_author_no_time": [mem("no author", author=None), mem("no time", ts=None), mem("neither", author=None, ts=None)],
    "parts": [mem("first part", "second part"), mem("x", "", "y"), mem("line1\nline2\r\n\ttabbed")],
    "unicode": [mem(t, author=a) for t, a in zip(EDGE_TEXTS[:12], ["user", "model", "🤖", None] * 3)],
    "only_empty": [mem("", ts=None), mem(ts=None)],
    "only_timestamps": [mem(""), mem(ts="2020-01-01T00:00:00")],
    "nothing": [],
}


@pytest.mark.parametrize("name", sorted(RESULT_SETS))
def test_no_options_inserts_what_adk_inserts(name):
    memories = RESULT_SETS[name]
    adk = run(AdkPreloadMemoryTool(), FakeMemoryService(memories))
    ours = run(PreloadMemoryTool(), FakeMemoryService(memories))
    assert ours.model_dump() == adk.model_dump()
    # Explicit "no limit" values are the defaults.
    explicit = PreloadMemoryTool(max_tokens=None, max_bytes=None, max_memories=None, count_tokens=None, dedupe=False)
    assert run(explicit, FakeMemoryService(memories)).model_dump() == adk.model_dump()
    # Budgets too large to bind change nothing either.
    roomy = PreloadMemoryTool(max_tokens=10**9, max_bytes=10**9, max_memories=10**9)
    assert run(roomy, FakeMemoryService(memories)).model_dump() == adk.model_dump()
    if name in ("plain", "parts", "unicode"):
        assert inserted(ours) == expected(*memories)
    if name in ("only_empty", "nothing"):
        assert inserted(ours) is None


def test_no_options_matches_adk_through_real_services():
    """ADK's tool over InMemoryMemoryService and ours over MnemMemoryService with the same
    sessions (duplicates, a repeated text, Unicode) put the same text in the same place; and each
    tool gives the same request over either service."""
    sessions = [
        Session(app_name=APP, user_id=USER, id="monday", events=[
            Event(id="m1", author="user", timestamp=1700000000.25,
                  content=types.Content(role="user", parts=[types.Part(text="My favourite tea is lapsang souchong")])),
            Event(id="m2", author="model", timestamp=1700000001.0,
                  content=types.Content(role="model", parts=[types.Part(text="Noted: lapsang souchong tea")])),
            Event(id="m3", author="user", timestamp=1700000002.0, content=None),
        ]),
        Session(app_name=APP, user_id=USER, id="tuesday", events=[
            Event(id="t1", author="user", timestamp=1700086400.5,
                  content=types.Content(role="user", parts=[types.Part(text="My favourite tea is lapsang souchong")])),
            Event(id="t2", author="user", timestamp=1700086401.0,
                  content=types.Content(role="user", parts=[types.Part(text="I drink green tea"),
                                                            types.Part(text="in the morning")])),
        ]),
        Session(app_name=APP, user_id=USER, id="edge", events=[
            Event(id=f"e{i}", author="user", timestamp=1600000000.0 + i,
                  content=types.Content(role="user", parts=[types.Part(text=t)]))
            for i, t in enumerate(EDGE_TEXTS)
        ]),
    ]
    queries = ["What tea do I like?", "tea", "morning green", "Café Python", "İstanbul straße",
               "nothing matches zzz"]

    async def requests(tool, service):
        for s in sessions:
            await service.add_session_to_memory(s)
        out = []
        for q in queries:
            request = history(q)
            await tool.process_llm_request(tool_context=tool_context(service, user_content(q)), llm_request=request)
            out.append(request.model_dump())
        return out

    adk_on_adk = asyncio.run(requests(AdkPreloadMemoryTool(), InMemoryMemoryService()))
    mnem = MnemMemoryService()
    try:
        ours_on_mnem = asyncio.run(requests(PreloadMemoryTool(), mnem))
    finally:
        mnem.close_sync()
    ours_on_adk = asyncio.run(requests(PreloadMemoryTool(), InMemoryMemoryService()))
    assert ours_on_mnem == adk_on_adk
    assert ours_on_adk == adk_on_adk
    # The queries did find memories, including the duplicate sentence twice.
    texts = [r["contents"][2]["parts"][0]["text"] for r in adk_on_adk if len(r["contents"]) == 4]
    assert len(texts) == 5
    assert texts[0].count("My favourite tea is lapsang souchong") == 2


def test_query_is_the_user_text_like_adk():
    """Text parts joined by a space, thoughts left out; no text: no search, nothing inserted."""
    content = types.Content(role="user", parts=[types.Part(text="green"), types.Part(text="plan", thought=True),
                                                types.Part(text="tea")])
    for tool in (AdkPreloadMemoryTool(), PreloadMemoryTool(max_memories=3)):
        service = FakeMemoryService([mem("green tea")])
        assert inserted(run(tool, service, content=content)) == expected(mem("green tea"))
        assert service.queries == ["green tea"]
        for empty in (user_content(), user_content(""), user_content("thinking", thought=True)):
            service = FakeMemoryService([mem("green tea")])
            assert inserted(run(tool, service, content=empty)) is None
            assert service.queries == []


def test_failed_search_inserts_nothing_and_logs(caplog):
    with caplog.at_level(logging.WARNING, logger="mnem.preload"):
        request = run(PreloadMemoryTool(max_bytes=1000), FakeMemoryService(fail=True))
    assert inserted(request) is None
    assert any("Failed to preload memory" in r.message and r.exc_info for r in caplog.records)


def test_tool_is_adks_tool():
    tool = PreloadMemoryTool(max_memories=2)
    assert isinstance(tool, AdkPreloadMemoryTool)
    assert (tool.name, tool.description) == ("preload_memory", "preload_memory")
    assert tool._get_declaration() is None  # the model never calls it
    # memory_context: the text it would insert for given search results, without a request.
    assert tool.memory_context(MEMS[:3]) == expected(*MEMS[:2])
    assert tool.memory_context([]) is None


# --- budgets -----------------------------------------------------------------------------------

MEMS = [
    mem("I like oolong tea"),
    mem("Grüße aus München, ich trinke Tee", author="model"),  # multi-byte UTF-8
    mem("Green tea in the morning", ts=None),
    mem("紅茶が好きです", author="user"),
]


def sizes(memories):
    """The UTF-8 size of the text inserted with the first k memories, k = 1..n."""
    return [size(expected(*memories[:k])) for k in range(1, len(memories) + 1)]


def test_max_bytes_counts_the_whole_inserted_text_exactly():
    full = sizes(MEMS)
    assert size(FRAMING_HEADER + FRAMING_FOOTER) == 176
    for k, limit in enumerate(full, start=1):
        at = inserted(run(PreloadMemoryTool(max_bytes=limit), FakeMemoryService(MEMS)))
        assert at == expected(*MEMS[:k]) and size(at) == limit
        below = inserted(run(PreloadMemoryTool(max_bytes=limit - 1), FakeMemoryService(MEMS)))
        assert below == (expected(*MEMS[:k - 1]) if k > 1 else None)
    # Nothing fits: nothing at all is inserted (not an empty framing), also for 0.
    for limit in (0, 176, full[0] - 1):
        assert inserted(run(PreloadMemoryTool(max_bytes=limit), FakeMemoryService(MEMS))) is None


def test_a_memory_too_big_stops_the_list():
    """The first memory over budget ends the list: a smaller one after it is not taken, and no
    memory is cut."""
    big = mem("x" * 500)
    small = mem("tiny")
    memories = [MEMS[0], big, small]
    limit = size(expected(MEMS[0], small))  # room for the first and the small one, not the big one
    assert limit < size(expected(MEMS[0], big))
    text = inserted(run(PreloadMemoryTool(max_bytes=limit), FakeMemoryService(memories)))
    assert text == expected(MEMS[0])
    tokens = inserted(run(PreloadMemoryTool(max_tokens=estimate_tokens(expected(MEMS[0], small))),
                          FakeMemoryService(memories)))
    assert tokens == expected(MEMS[0])


def test_estimate_tokens_is_ceil_bytes_over_four():
    assert [estimate_tokens(s) for s in ["", "a", "abcd", "abcde", "é", "€€", "😀😀"]] == [0, 1, 1, 2, 1, 2, 2]
    assert estimate_tokens(FRAMING_HEADER + FRAMING_FOOTER) == 44


def test_max_tokens_default_estimate_at_the_boundary():
    full = [estimate_tokens(expected(*MEMS[:k])) for k in range(1, len(MEMS) + 1)]
    assert len(set(full)) == len(full)
    for k, limit in enumerate(full, start=1):
        at = inserted(run(PreloadMemoryTool(max_tokens=limit), FakeMemoryService(MEMS)))
        assert at == expected(*MEMS[:k]) and estimate_tokens(at) == limit
        below = inserted(run(PreloadMemoryTool(max_tokens=limit - 1), FakeMemoryService(MEMS)))
        assert below == (expected(*MEMS[:k - 1]) if k > 1 else None)


def test_max_tokens_with_a_callers_counter_sees_the_whole_text():
    calls = []

    def words(text):  # a "tokenizer": whitespace-separated words
        calls.append(text)
        return len(text.split())

    full = [words(expected(*MEMS[:k])) for k in range(1, len(MEMS) + 1)]
    calls.clear()
    for k, limit in enumerate(full, start=1):
        tool = PreloadMemoryTool(max_tokens=limit, count_tokens=words)
        at = inserted(run(tool, FakeMemoryService(MEMS)))
        assert at == expected(*MEMS[:k]) and words(at) == limit
        below = inserted(run(PreloadMemoryTool(max_tokens=limit - 1, count_tokens=words), FakeMemoryService(MEMS)))
        assert below == (expected(*MEMS[:k - 1]) if k > 1 else None)
    # The counter is only ever given whole candidate texts, framing included.
    assert calls and all(c.startswith(FRAMING_HEADER) and c.endswith(FRAMING_FOOTER) for c in calls)


def test_a_counter_that_does_not_add_up_is_respected():
    """count_tokens is applied to the whole text, so a counter that is not a sum over pieces
    (here: 1 token per distinct word) is still the bound."""
    def distinct(text):
        return len(set(text.split()))

    memories = [mem("tea tea tea"), mem("tea tea"), mem("coffee")]
    base = distinct(expected(memories[0]))
    assert distinct(expected(*memories[:2])) == base  # the second memory adds no new word
    tool = PreloadMemoryTool(max_tokens=base, count_tokens=distinct)
    assert inserted(run(tool, FakeMemoryService(memories))) == expected(*memories[:2])


def test_both_budgets_the_tighter_one_binds():
    by_bytes = sizes(MEMS)
    by_tokens = [estimate_tokens(expected(*MEMS[:k])) for k in range(1, len(MEMS) + 1)]
    tool = PreloadMemoryTool(max_bytes=by_bytes[3], max_tokens=by_tokens[1])
    assert inserted(run(tool, FakeMemoryService(MEMS))) == expected(*MEMS[:2])
    tool = PreloadMemoryTool(max_bytes=by_bytes[1], max_tokens=by_tokens[3])
    assert inserted(run(tool, FakeMemoryService(MEMS))) == expected(*MEMS[:2])


def test_max_memories_keeps_the_first_n_in_order():
    for n in range(len(MEMS) + 2):
        text = inserted(run(PreloadMemoryTool(max_memories=n), FakeMemoryService(MEMS)))
        assert text == (expected(*MEMS[:n]) if n else None)


def test_order_is_the_searchs_not_the_timestamps():
    memories = [mem("newest", ts="2024-01-01T00:00:00"), mem("oldest", ts="2001-01-01T00:00:00"),
                mem("middle", ts="2010-01-01T00:00:00")]
    for tool in (PreloadMemoryTool(dedupe=True), PreloadMemoryTool(max_bytes=10_000, max_memories=3)):
        text = inserted(run(tool, FakeMemoryService(memories)))
        assert text == expected(*memories)
        assert text.index("newest") < text.index("oldest") < text.index("middle")


# --- de-duplication ----------------------------------------------------------------------------

def test_dedupe_leaves_out_repeats_and_empty_memories():
    memories = [
        mem("I like  oolong\ttea", ts="2023-01-01T00:00:00"),
        mem(""),                                              # no text: left out with its Time line
        mem("  \n\t ", author="model"),                      # whitespace only: no text
        mem(" I like oolong\n tea ", author="model", ts="2023-02-02T00:00:00"),  # same text, other author
        mem("I like", "oolong tea", ts=None),                # parts join with a space: same text
        mem("I LIKE OOLONG TEA"),                             # case differs: kept
        mem("Green tea", author=None, ts=None),
        mem("green  tea", author="model"),                    # case differs from "Green tea": kept
        mem("Green tea\n"),                                   # repeat
    ]
    text = inserted(run(PreloadMemoryTool(dedupe=True), FakeMemoryService(memories)))
    assert text == expected(memories[0], memories[5], memories[6], memories[7])
    # The first of each text is the one kept, as it was (its own whitespace, author and time).
    assert "Time: 2023-01-01T00:00:00\nuser: I like  oolong\ttea\n" in text
    assert "2023-02-02" not in text


def test_dedupe_does_not_count_left_out_memories_against_the_limits():
    memories = [mem("oolong"), mem("oolong "), mem(""), mem("sencha"), mem("matcha")]
    tool = PreloadMemoryTool(dedupe=True, max_memories=2)
    assert inserted(run(tool, FakeMemoryService(memories))) == expected(memories[0], memories[3])
    limit = size(expected(memories[0], memories[3]))
    tool = PreloadMemoryTool(dedupe=True, max_bytes=limit)
    assert inserted(run(tool, FakeMemoryService(memories))) == expected(memories[0], memories[3])


def test_dedupe_with_only_empty_or_repeated_memories():
    memories = [mem(""), mem(" "), mem(ts=None)]
    assert inserted(run(PreloadMemoryTool(dedupe=True), FakeMemoryService(memories))) is None
    # Without dedupe, ADK's tool keeps their Time lines and the blank text, and so does this one.
    adk = inserted(run(AdkPreloadMemoryTool(), FakeMemoryService(memories)))
    assert adk == block(f"Time: {TS}", f"Time: {TS}", "user:  ")
    assert inserted(run(PreloadMemoryTool(), FakeMemoryService(memories))) == adk


# --- arguments ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max_tokens", "max_bytes", "max_memories"])
def test_bad_limits(name):
    with pytest.raises(ValueError, match=name):
        PreloadMemoryTool(**{name: -1})
    for bad in (1.5, "10", True, [3]):
        with pytest.raises(TypeError, match=name):
            PreloadMemoryTool(**{name: bad})
    assert getattr(PreloadMemoryTool(**{name: 0}), name) == 0


def test_bad_count_tokens_and_dedupe():
    for bad in (5, "len", object()):
        with pytest.raises(TypeError, match="count_tokens"):
            PreloadMemoryTool(max_tokens=10, count_tokens=bad)
    with pytest.raises(TypeError, match="dedupe"):
        PreloadMemoryTool(dedupe="yes")


def test_count_tokens_must_return_a_count():
    for result, error in ((1.5, TypeError), ("3", TypeError), (None, TypeError), (True, TypeError), (-1, ValueError)):
        tool = PreloadMemoryTool(max_tokens=100, count_tokens=lambda text, r=result: r)
        with pytest.raises(error, match="count_tokens"):
            run(tool, FakeMemoryService(MEMS))


@pytest.mark.filterwarnings("ignore:LlmAgentConfig is deprecated:DeprecationWarning")  # ADK's own
def test_built_from_an_agent_config_yaml(tmp_path):
    (tmp_path / "root_agent.yaml").write_text(
        "name: tea_agent\n"
        "model: gemini-2.5-flash\n"
        "instruction: Answer.\n"
        "tools:\n"
        "  - name: mnem.preload.PreloadMemoryTool\n"
        "    args: {max_tokens: 60, max_memories: 3, dedupe: true, count_tokens: mnem.preload.estimate_tokens}\n"
        "  - name: mnem.preload.PreloadMemoryTool\n")
    agent = config_agent_utils.from_config(str(tmp_path / "root_agent.yaml"))
    tool, plain = agent.tools
    assert isinstance(tool, PreloadMemoryTool) and isinstance(plain, PreloadMemoryTool)
    assert (tool.max_tokens, tool.max_bytes, tool.max_memories, tool.dedupe) == (60, None, 3, True)
    assert tool.count_tokens is estimate_tokens
    assert (plain.max_tokens, plain.max_bytes, plain.max_memories, plain.dedupe) == (None, None, None, False)


# --- through an ADK Runner ---------------------------------------------------------------------

class RecordingModel(BaseLlm):
    """Answers "ok" and keeps every request's contents."""

    model: str = "recording"
    seen: list = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append([c.model_copy(deep=True) for c in llm_request.contents])
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]))


def test_runner_puts_the_bounded_memories_before_the_question(tmp_path):
    said = ["My favourite tea is lapsang souchong", "my favourite tea is  lapsang souchong",
            "I also like green tea", "Tea with milk, never"]
    remembered = Session(app_name=APP, user_id=USER, id="monday", events=[
        Event(id=f"m{i}", author="user", timestamp=1700000000.0 + i,
              content=types.Content(role="user", parts=[types.Part(text=t)]))
        for i, t in enumerate(said)
    ])
    question = "Which tea do I like?"

    async def ask(tool):
        model = RecordingModel(seen=[])
        async with MnemMemoryService(tmp_path / "memory") as memory:
            await memory.add_session_to_memory(remembered)
            sessions = InMemorySessionService()
            await sessions.create_session(app_name=APP, user_id=USER, session_id="tuesday")
            runner = Runner(app_name=APP, agent=Agent(name="tea_agent", model=model, tools=[tool]),
                            session_service=sessions, memory_service=memory)
            async for _ in runner.run_async(user_id=USER, session_id="tuesday",
                                            new_message=types.Content(role="user", parts=[types.Part(text=question)])):
                pass
            await runner.close()
        (contents,) = model.seen
        return contents

    adk = asyncio.run(ask(AdkPreloadMemoryTool()))
    ours = asyncio.run(ask(PreloadMemoryTool()))
    assert [c.model_dump() for c in ours] == [c.model_dump() for c in adk]
    assert [c.role for c in ours] == ["user", "user"] and ours[1].parts[0].text == question
    full = ours[0].parts[0].text
    assert all(t in full for t in said)

    bounded = asyncio.run(ask(PreloadMemoryTool(dedupe=True, max_memories=2)))
    assert [c.role for c in bounded] == ["user", "user"] and bounded[1].parts[0].text == question
    text = bounded[0].parts[0].text
    assert text.startswith(FRAMING_HEADER) and text.endswith(FRAMING_FOOTER)
    memory_lines = [line for line in text[len(FRAMING_HEADER):-len(FRAMING_FOOTER)].split("\n")
                    if not line.startswith("Time: ")]
    # Search ranks the memory matching 3 of the question's words first, then the others in the
    # order they were said; the repeat (said[1]) is left out, and the limit keeps two.
    assert full.index(said[2]) < full.index(said[0]) < full.index(said[1]) < full.index(said[3])
    assert memory_lines == ["user: I also like green tea", "user: My favourite tea is lapsang souchong"]

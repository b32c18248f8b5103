"""An ADK Runner recalls through the load_memory tool from MnemMemoryService: a scripted model
(no network) calls load_memory, then answers with what it got. The first conversation is
saved by an after_agent_callback (add_events_to_memory); the second runs in a new session,
with a new service opened on the same directory."""
import asyncio
import json
from typing import AsyncGenerator

from google.adk.agents import Agent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types

from mnem.adk import MnemMemoryService

APP, USER = "tea_app", "ana"


class ScriptedModel(BaseLlm):
    """Asked a question, calls load_memory(question); given its result, answers with the
    recalled texts; told a fact, acknowledges it."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        result = next((p.function_response for p in last.parts or [] if p.function_response), None)
        if result is not None:
            # The tool's return value, as a model sees it once serialized: {"result": {"memories": [...]}}.
            data = json.loads(json.dumps(result.response, default=lambda o: o.model_dump(mode="json")))
            texts = [p["text"] for m in data["result"]["memories"]
                     for p in (m.get("content") or {}).get("parts", []) if p.get("text")]
            answer = "I recall: " + " | ".join(texts) if texts else "I recall nothing."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]))
            return
        said = " ".join(p.text for p in last.parts or [] if p.text)
        if said.endswith("?"):
            call = types.FunctionCall(name="load_memory", args={"query": said.rstrip("?")})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))


async def save_turn(callback_context):
    await callback_context.add_events_to_memory(events=callback_context.session.events)


def make_agent():
    return Agent(name="tea_agent", model=ScriptedModel(), tools=[load_memory], after_agent_callback=save_turn)


async def say(runner, sessions, session_id, text):
    if await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id) is None:
        await sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)
    final, calls = None, []
    async for event in runner.run_async(user_id=USER, session_id=session_id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=text)])):
        calls += [c.name for c in event.get_function_calls()]
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts)
    return final, calls


def test_runner_recalls_through_load_memory(tmp_path):
    path = tmp_path / "memory"

    async def main():
        sessions = InMemorySessionService()
        async with MnemMemoryService(path) as memory:
            runner = Runner(app_name=APP, agent=make_agent(), session_service=sessions, memory_service=memory)
            first = await say(runner, sessions, "monday", "My favourite tea is a smoky lapsang souchong")
            await runner.close()
        async with MnemMemoryService(path, create=False) as memory:
            runner = Runner(app_name=APP, agent=make_agent(), session_service=InMemorySessionService(),
                            memory_service=memory)
            second = await say(runner, runner.session_service, "tuesday", "What is my favourite tea?")
            nothing = await say(runner, runner.session_service, "wednesday", "Which bicycle was bought?")
            await runner.close()
        return first, second, nothing

    first, second, nothing = asyncio.run(main())
    assert first == ("Noted.", [])
    answer, calls = second
    assert calls == ["load_memory"]
    assert "smoky lapsang souchong" in answer, answer
    assert nothing == ("I recall nothing.", ["load_memory"])

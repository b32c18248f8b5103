"""MnemMemoryService never blocks the event loop: every store call runs in a worker thread,
and the service closes asynchronously (`await close()`, `async with`) or synchronously."""
import asyncio
import time

import pytest
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types

from mnem.adk import MnemMemoryService

APP, USER = "app", "user"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def batch(n, start=0):
    return [Event(id=f"e{i}", invocation_id="inv", author="user", timestamp=1000.0 + i,
                  content=types.Content(parts=[types.Part(text=" ".join(WORDS[(i + k) % len(WORDS)]
                                                                        for k in range(40)) + f" n{i}")]))
            for i in range(start, start + n)]


async def max_tick_gap(work):
    """Runs `work` while a ticker sleeps 1 ms at a time; returns (result, longest gap in s, ticks)."""
    gaps, done = [], asyncio.Event()

    async def ticker():
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    t = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    try:
        result = await work()
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        await t
    return result, max(gaps), len(gaps), elapsed


def test_event_loop_keeps_ticking_during_large_writes_and_searches(tmp_path):
    async def main():
        # The events are built before the clock starts: building them is the caller's work.
        batches = [batch(5000, 5000 * k) for k in range(4)]
        session = Session(app_name=APP, user_id=USER, id="big", last_update_time=1, events=batch(5000, 20000))
        async with MnemMemoryService(tmp_path / "store") as svc:
            async def work():
                for k, events in enumerate(batches):
                    await svc.add_events_to_memory(app_name=APP, user_id=USER, session_id=f"s{k}", events=events)
                await svc.add_session_to_memory(session)
                found = []
                for w in WORDS:
                    found.append(len((await svc.search_memory(app_name=APP, user_id=USER, query=w)).memories))
                return found
            return await max_tick_gap(work)

    found, gap, ticks, elapsed = asyncio.run(main())
    assert found == [10] * len(WORDS), "every word is in many events; ADK search returns at most 10"
    # The work takes seconds; a blocked loop would show one gap that long. The bound leaves
    # room for scheduling noise and the GIL hand-offs of the worker thread's JSON encoding.
    assert elapsed > 0.5, f"the work took {elapsed:.3f}s: too little to show blocking"
    assert gap < min(0.25, elapsed / 4), f"the loop stalled for {gap:.3f}s of {elapsed:.3f}s"
    assert ticks > elapsed / 0.25


class SlowEmbedder:
    """A blocking (plain) embed that takes EMBED_SECONDS a call: the service must run it off
    the loop, or the ticker sees one gap that long. Sizing the work by a sleep, not by how
    fast this machine writes, keeps the test's precondition true on any machine."""

    dimensions = 8
    EMBED_SECONDS = 0.3

    def __init__(self):
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        time.sleep(self.EMBED_SECONDS)
        return [[float(t.count(w[0])) + 1.0 for w in WORDS[:8]] for t in texts]


def test_event_loop_keeps_ticking_with_semantic_recall(tmp_path):
    embedder = SlowEmbedder()
    queries, writes = WORDS[:3], 2

    async def main():
        # The service may embed text by text: few events keep the sleeps to seconds.
        batches = [batch(5, 5 * k) for k in range(writes)]
        async with MnemMemoryService(tmp_path / "store", embedder=embedder) as svc:
            async def work():
                for k, events in enumerate(batches):
                    await svc.add_events_to_memory(app_name=APP, user_id=USER, session_id=f"s{k}", events=events)
                return [len((await svc.search_memory(app_name=APP, user_id=USER, query=w)).memories)
                        for w in queries]
            return await max_tick_gap(work)

    found, gap, ticks, elapsed = asyncio.run(main())
    assert found == [10] * len(queries)
    # Each write embeds its events and each search its query: one blocking call at least each.
    assert embedder.calls >= len(queries) + writes, embedder.calls
    assert gap < SlowEmbedder.EMBED_SECONDS * 0.8, f"the loop stalled for {gap:.3f}s of {elapsed:.3f}s"
    assert ticks > elapsed / 0.25


def test_a_blocking_service_would_fail_the_ticker(tmp_path):
    """The ticker measurement detects a store call made on the loop itself."""
    async def main():
        lines = ["\n".join(e.model_dump_json() for e in batch(5000, 5000 * k)) for k in range(3)]
        with MnemMemoryService(tmp_path / "store") as svc:
            async def work():
                # The same writes, inline on the loop (what the service must never do).
                for k, jsonl in enumerate(lines):
                    svc.store.add_events(APP, USER, f"s{k}", jsonl)
            return await max_tick_gap(work)

    _, gap, _, elapsed = asyncio.run(main())
    assert gap > elapsed * 0.9


def test_close_async_sync_and_context_managers(tmp_path):
    async def main():
        svc = MnemMemoryService(tmp_path / "a")
        await svc.add_events_to_memory(app_name=APP, user_id=USER, events=batch(1))
        await svc.close()
        assert svc.store.closed
        await svc.close()  # idempotent
        async with MnemMemoryService(tmp_path / "a", create=False) as again:
            assert len((await again.search_memory(app_name=APP, user_id=USER, query="n0")).memories) == 1
        assert again.store.closed
        with pytest.raises(ValueError, match="closed"):
            await again.search_memory(app_name=APP, user_id=USER, query="n0")

    asyncio.run(main())
    svc = MnemMemoryService(tmp_path / "a", create=False)
    svc.close_sync()
    assert svc.store.closed
    # Without a running loop, a plain close() closes before it returns (the store's lock is
    # released: a new service opens it), and awaiting its result later is harmless.
    svc = MnemMemoryService(tmp_path / "a", create=False)
    done = svc.close()
    assert svc.store.closed
    MnemMemoryService(tmp_path / "a", create=False).close()

    async def await_it():
        await done

    asyncio.run(await_it())

    async def not_awaited():
        # Inside a loop, close() has started even if nobody awaits it.
        s = MnemMemoryService(tmp_path / "a", create=False)
        s.close()
        for _ in range(200):
            if s.store.closed:
                return True
            await asyncio.sleep(0.01)
        return False

    assert asyncio.run(not_awaited())
    with MnemMemoryService(tmp_path / "a", create=False) as svc:
        pass
    assert svc.store.closed

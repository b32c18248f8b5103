"""mnem_search against google-adk's InMemoryMemoryService, same corpus, same queries, one run.

    scripts/python-env
    /var/cache/mnem/venv/bin/python bench/adk_search.py 10000

Prints the mean time per search_memory call of the reference, of MnemMemoryService (through
the ADK API: the worker-thread hop, JSON decode and pydantic models included) and of the raw
C call (mnem_search through ctypes), the ratios, and checks that every answer is identical.
The reference runs each query once. MnemMemoryService is timed on the same single pass (the
first search of each query) and on 20 more passes; the raw call on 20 passes, like the
second.
"""
import asyncio, json, os, random, subprocess, sys, tempfile, time

from mnem_env import ROOT  # first: the binding and MNEM_LIB

CORPUS_PY = ROOT / "bench" / "corpus.py"

from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions.session import Session
from mnem.adk import MnemMemoryService

APP, USER = "bench", "user"


def corpus(n, seed=7):
    out = subprocess.run([sys.executable, str(CORPUS_PY), str(n), str(seed)],
                         check=True, capture_output=True, text=True, encoding="utf-8").stdout
    sessions = {}
    for line in out.splitlines():
        d = json.loads(line)
        sid = d.pop("session_id")
        sessions.setdefault(sid, []).append(Event.model_validate(d))
    return sessions


def queries(sessions, k, seed=11):
    rng = random.Random(seed)
    texts = [p.text for evs in sessions.values() for e in evs for p in e.content.parts if p.text]
    qs = []
    while len(qs) < k:
        words = rng.choice(texts).split()
        if words:
            qs.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 3)))))
    return qs


async def timed(svc, qs):
    out, t = [], time.perf_counter()
    for q in qs:
        out.append(await svc.search_memory(app_name=APP, user_id=USER, query=q))
    return (time.perf_counter() - t) / len(qs), out


def entries(resp):
    return [(m.id, m.author, m.timestamp, m.content.model_dump()) for m in resp.memories]


async def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    sessions = corpus(n)
    qs = queries(sessions, k)
    ref = InMemoryMemoryService()
    with tempfile.TemporaryDirectory() as d:
        svc = MnemMemoryService(os.path.join(d, "store"))
        t = time.perf_counter()
        for sid, evs in sessions.items():
            s = Session(id=sid, app_name=APP, user_id=USER, events=evs)
            await ref.add_session_to_memory(s)
        t_ref_add = time.perf_counter() - t
        t = time.perf_counter()
        for sid, evs in sessions.items():
            await svc.add_session_to_memory(Session(id=sid, app_name=APP, user_id=USER, events=evs))
        t_mnem_add = time.perf_counter() - t
        await svc.search_memory(app_name=APP, user_id=USER, query="warm up")
        ref_t, ref_out = await timed(ref, qs)
        mnem_t, mnem_out = await timed(svc, qs)
        reps = 20
        mnem_warm_t = 0.0
        for _ in range(reps):
            mnem_warm_t += (await timed(svc, qs))[0] / reps
        raw_t = time.perf_counter()
        for _ in range(reps):
            for q in qs:
                svc.store.search_raw(APP, USER, q)
        raw_t = (time.perf_counter() - raw_t) / (reps * len(qs))
        # The index's worst case: words in most events (long postings to score and sort).
        common = {}
        for q in ["the", "the a is of", "I you what", "の", "я в не", "的 是"]:
            t = time.perf_counter()
            for _ in range(reps):
                svc.store.search_raw(APP, USER, q)
            common[q] = (time.perf_counter() - t) / reps
        same = all(entries(a) == entries(b) for a, b in zip(ref_out, mnem_out))
        hits = sum(len(r.memories) for r in ref_out)
        await svc.close()
        # Reopen: the first search rebuilds the namespace's index from the store.
        svc = MnemMemoryService(os.path.join(d, "store"))
        t = time.perf_counter()
        svc.store.search_raw(APP, USER, qs[0])
        t_rebuild = time.perf_counter() - t
        await svc.close()
    print(f"corpus {n} events in {len(sessions)} sessions, {len(qs)} queries, {hits} results, identical: {same}")
    print(f"{'':34}{'ms/query':>10}{'vs reference':>14}")
    print(f"{'InMemoryMemoryService (reference)':34}{ref_t*1e3:10.3f}{1.0:13.1f}x")
    print(f"{'MnemMemoryService (ADK API)':34}{mnem_t*1e3:10.3f}{ref_t/mnem_t:13.1f}x")
    print(f"{'  the same, 20 more passes':34}{mnem_warm_t*1e3:10.3f}{ref_t/mnem_warm_t:13.1f}x")
    print(f"{'mnem_search (ctypes, raw JSON), 20':34}{raw_t*1e3:10.3f}{ref_t/raw_t:13.1f}x")
    print("common-word queries, mnem_search (ms): " + ", ".join(f"{q!r} {t*1e3:.3f}" for q, t in common.items()))
    print(f"ingest: reference {t_ref_add:.2f} s, mnem {t_mnem_add:.2f} s (persisted, indexed)")
    print(f"first search after reopening the store (rebuilds the index): {t_rebuild*1e3:.1f} ms")
    if not same:
        sys.exit("results differ")


asyncio.run(main())

"""ADK ingest against the number of events per `add_events` call, through the Python binding.

    /var/cache/mnem/venv-wheel/bin/python bench/ingest_batches.py --corpus /tmp/mnem-bench/corpus.jsonl 1 5 20 100 1000

The first --n events of the corpus (bench/corpus.py), grouped in order into calls of each
given size (one session id per call), written to a new store in /tmp; prints events/s per
size. It separates what a call costs from what an event costs: the time per event falls from
1 to 5 events per call by the per-call cost, and keeps falling beyond because a larger batch
writes its index keys in longer sorted runs.
"""
import argparse
import shutil
import tempfile
import time

import mnem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=60000)
    ap.add_argument("sizes", type=int, nargs="+")
    a = ap.parse_args()
    with open(a.corpus, encoding="utf-8") as f:
        lines = [line for _, line in zip(range(a.n), f)]
    for size in a.sizes:
        calls = [(f"b{i}", "".join(lines[i:i + size]).encode()) for i in range(0, len(lines), size)]
        d = tempfile.mkdtemp(prefix="mnem-ingest-")
        try:
            s = mnem.Store(d)
            t = time.perf_counter()
            for sid, payload in calls:
                s.add_events("bench", "user", sid, payload)
            dt = time.perf_counter() - t
            s.close()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        print(f"{size:>5} events per call: {len(calls):>6} calls, {len(lines) / dt:>8.0f} events/s")


if __name__ == "__main__":
    main()

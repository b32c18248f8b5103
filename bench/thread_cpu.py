"""CPU of each thread of a command, in windows of half a second (Linux only).

    python3 bench/thread_cpu.py $CARGO_TARGET_DIR/release/examples/bench_indexes beside-writer --n 100000

Runs the command, samples /proc/PID/task/*/stat every 0.1 s and prints, per window, the
cores each thread name used (the process's first thread as `main`). Threads that end within
a window (a postings mover, an overlay compactor: one thread per move or merge) are gone
from /proc by the next sample; their time shows as `exited` (the process's total, which
counts ended threads, less the live ones). The command's own output is printed first.
"""
import collections
import os
import subprocess
import sys
import time

WINDOW = 5  # samples of 0.1 s


def ticks(stat):
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def sample(pid):
    snap = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue  # ended between the listing and the read
        name = "main" if int(tid) == pid else stat[stat.index("(") + 1:stat.rindex(")")]
        snap[(tid, name)] = ticks(stat)
    snap[("all", "all")] = ticks(open(f"/proc/{pid}/stat").read())
    return snap


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: thread_cpu.py COMMAND [ARG...]")
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
    hz = os.sysconf("SC_CLK_TCK")
    samples = []
    while proc.poll() is None:
        try:
            samples.append((time.monotonic(), sample(proc.pid)))
        except OSError:
            break  # the process ended
        time.sleep(0.1)
    sys.stdout.write(proc.stdout.read())
    t0 = samples[0][0] if samples else 0
    for i in range(WINDOW, len(samples), WINDOW):
        (ta, a), (tb, b) = samples[i - WINDOW], samples[i]
        cores = collections.Counter()
        for key, t in b.items():
            cores[key[1]] += (t - a.get(key, 0)) / hz / (tb - ta)
        cores["exited"] = cores["all"] - sum(v for k, v in cores.items() if k != "all")
        used = " ".join(f"{n}={c:.2f}" for n, c in cores.most_common() if c >= 0.02)
        print(f"{tb - t0:5.1f} s  {used}")


if __name__ == "__main__":
    main()

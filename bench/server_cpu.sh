#!/usr/bin/env bash
# The CPU a command costs its own process and a local PostgreSQL server:
#
#   bench/server_cpu.sh DATA_DIR COMMAND [ARGS...]
#
# DATA_DIR is the server's data directory (`scripts/pg-server start DIR` puts it in DIR/data).
# Prints the command's output, then its CPU (`perf stat -e task-clock`, children included)
# and the server's: the CPU time of the postmaster's children that ended meanwhile, which
# counts a command's sessions once they close (the command's own connections end with it).
# Divide both by the command's runs; run the command once with one run to subtract its
# start-up. Measured only while nothing else uses the server.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DATA_DIR COMMAND [ARGS...]" >&2; exit 2; }
data=$1; shift
pm=$(head -1 "$data/postmaster.pid")
ticks=$(getconf CLK_TCK)
children() { awk '{print $16 + $17}' "/proc/$pm/stat"; }
before=$(children)
stat=$(mktemp)
trap 'rm -f "$stat"' EXIT
perf stat -x, -e task-clock -o "$stat" "$@"
sleep 0.5  # the server reaps the sessions that just closed
after=$(children)
echo "client task-clock ms: $(grep task-clock "$stat" | cut -d, -f1)  server ms: $(( (after - before) * 1000 / ticks ))"

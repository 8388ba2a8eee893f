#!/bin/sh
# `make bench`: every tests/bench/*_bench.sh in turn, each given BUILD
# (server_bench.sh: the server against nginx; healthz_bench.sh: /healthz
# latency and RSS under the loads of issue 14, about 2 minutes;
# sandbox_bench.sh: the sandbox's added time per run; capacity_bench.sh: a
# course on deadline night, 100 to 10,000 students, about 6 minutes;
# gen_bench.sh: NumPy input generation, whole arrays against chunks). Not
# tests: they print tables and always go on.
BUILD=${1:-build}
for b in "$(dirname "$0")"/*_bench.sh; do
    echo "=== $(basename "$b")"
    sh "$b" "$BUILD" || echo "($(basename "$b") exited $?)"
    echo
done

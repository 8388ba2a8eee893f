#!/bin/sh
# capacity_bench.sh - a course on deadline night against the real server:
# N students submit on a deadline curve (curl and the web form), poll their
# submissions, and fake runners grade them; a table per N (issue 13).
#
#   sh tests/bench/capacity_bench.sh [BUILD]
#   env: STUDENTS="100 1000 10000"  DURATION=60  RUNNERS=auto  GRADE_SECONDS=0.25
#        CONNS=128  DRAIN=90  BROWSER=50  PIN=1  SEED=1
#
# Everything is in tests/bench/capacity_bench.py (its docstring says what a
# student does and what each column means). No GPU, no nginx, no wrk:
# Python 3 and taskset.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CUGRADE_BUILD=$(cd "$BUILD" && pwd)
export CUGRADE_BUILD CUGRADE_ROOT="$ROOT"
[ -x "$CUGRADE_BUILD/cugrade-server" ] || {
    echo "capacity_bench: no $CUGRADE_BUILD/cugrade-server (make all)" >&2; exit 2; }
# 10,000 students hold no socket each, but the pool, the runners and the
# server's database need some headroom.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec python3 "$ROOT/tests/bench/capacity_bench.py"

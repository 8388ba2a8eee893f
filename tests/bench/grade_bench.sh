#!/bin/sh
# Grading benchmark on the GPU host (see tests/bench/grade_bench.py):
# submit-to-graded latency of a correct matmul (median of BENCH_N=10) split
# by phase next to the floor (nvcc -c + the GPU work), and regrade stability
# (the same submission graded BENCH_N times: spread of the metric, tier flips).
#   sh tests/bench/grade_bench.sh [BUILD]
# Binaries from dist/ when present (as tests/gpu/run.sh), else BUILD/.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 2
if [ "${BENCH_FORCE:-0}" != 1 ] && ! (env -u LD_LIBRARY_PATH nvidia-smi -L 2>/dev/null | grep -q '^GPU'); then
    echo "grade_bench: no GPU on this host (nvidia-smi -L): skipped (run it through the device tool)"
    exit 0
fi
. "$ROOT/tests/tools/dist_env.sh"
exec python3 tests/bench/grade_bench.py

#!/bin/sh
# One submission at a time on an idle service (issue 25's inner loop):
# tests/bench/alone_bench.py (a table, not a test). Uses dist/ like
# tests/gpu/run.sh; ~3 minutes of device time with the default files.
#   FILES="solutions/reduction/fast.cu ..." (paths under tests/gpu/), REPEAT=2,
#   OUT=DIR keeps the logs and alone.json, CUGRADE_GPUS=N uses N GPUs.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
. "$ROOT/tests/tools/dist_env.sh"
exec python3 tests/bench/alone_bench.py

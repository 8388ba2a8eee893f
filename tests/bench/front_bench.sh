#!/bin/sh
# The front pass's cost on this host: tests/bench/front_bench.py (a table, not
# a test). Uses dist/ like tests/gpu/run.sh.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
. "$ROOT/tests/tools/dist_env.sh"
exec python3 tests/bench/front_bench.py

#!/bin/sh
# Deadline night on one GPU host: tests/bench/deadline_bench.py (a table, not
# a test). Uses dist/ like tests/gpu/run.sh. HOSTILE=10 (default) and
# HOSTILE=0 give the two rows of docs/runner.md's table.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
. "$ROOT/tests/tools/dist_env.sh"
exec python3 tests/bench/deadline_bench.py

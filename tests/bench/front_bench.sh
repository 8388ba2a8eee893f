#!/bin/sh
# The front pass's cost on this host: tests/bench/front_bench.py (a table, not
# a test). Uses dist/ like tests/gpu/run.sh.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
if [ -x "$ROOT/dist/cugrade-runner" ]; then
    D=$(mktemp -d /tmp/cugrade-dist.XXXXXX) || exit 2
    trap 'rm -rf "$D"' EXIT INT TERM
    cp -r "$ROOT/dist/." "$D/" && chmod -R go+rX "$D" && chmod 755 "$D"
    export CUGRADE_SERVER_BIN="$D/cugrade-server" CUGRADE_RUNNER_BIN="$D/cugrade-runner"
    export CUGRADE_BIN_ENV="LD_LIBRARY_PATH=$D/lib;CUGRADE_BWRAP=$D/bwrap"
fi
export PATH="/usr/local/cuda/bin:$PATH"
exec python3 tests/bench/front_bench.py

#!/bin/sh
# healthz_bench.sh - /healthz latency and server RSS under the loads of
# issue 14 (300 students submitting at once, 400 uploads of 256 KiB, 30
# runner results of 8 MiB, a filesystem freeze, 10 clients pipelining
# /metrics), beside the stalls before the writer thread. See healthz_bench.py for the
# details and the knobs (SEED, REPEAT, FREEZE_S, PIPELINE_S, PROBE_MS).
#
#   sh tests/bench/healthz_bench.sh [BUILD]
#
# As root it loop-mounts an ext4 image for the database so that it can
# freeze it (fsfreeze); otherwise that row says why it did not run.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
command -v python3 >/dev/null || { echo "healthz_bench: python3 is not installed" >&2; exit 2; }
[ -x "$BUILD/cugrade-server" ] || { echo "healthz_bench: no $BUILD/cugrade-server (make all)" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec python3 "$ROOT/tests/bench/healthz_bench.py" "$BUILD"

#!/bin/sh
# make test-gpu: the real pipeline on a real GPU (run it on the GPU host, as root).
#
#   sh tests/gpu/run.sh [BUILD]
#
# 1. tests/gpu/sandbox.sh first, when present (the sandbox on this GPU), unless
#    CUGRADE_SKIP_SANDBOX=1;
# 2. tests/gpu/e2e.py: the real server and runners, every
#    tests/gpu/solutions/<lab>/*.cu submitted through the API, a table of
#    file, status, score, key metric, expected, match.
# Binaries come from dist/ (make dist: our binaries + their libraries + bwrap,
# for a host without our build dependencies) when it exists, else BUILD/.
# Logs go to $OUT when set. Exit status: non-zero on any mismatch.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 2
rc=0

. "$ROOT/tests/tools/dist_env.sh"
# (dist_env.sh also sets CUGRADE_PYTHON for Python files.)

if [ -f tests/gpu/sandbox.sh ] && [ "${CUGRADE_SKIP_SANDBOX:-0}" != 1 ]; then
    echo "== tests/gpu/sandbox.sh"
    if [ -n "$DIST" ]; then sh tests/gpu/sandbox.sh "$DIST"; else sh tests/gpu/sandbox.sh; fi || rc=1
fi

echo "== tests/gpu/e2e.py (server + runners + tests/gpu/solutions)"
python3 tests/gpu/e2e.py || rc=1
exit $rc

#!/bin/bash
# What a Python process of a job costs before any of the student's code:
# the imports, with NumPy's BLAS threads as each of our processes starts
# them (docs/python.md, "The owner's own NumPy runs its BLAS on one
# thread"), and a sanitizer run as the runner starts it, without the
# sandbox. Prints one row per command: the median of REPEAT runs (default
# 3) of its wall, user and system seconds (bash's `time`). Not a test: on
# a host without CuPy or compute-sanitizer those rows say so.
#
#   sh tests/bench/import_probe.sh            (on the GPU host, from the checkout)
#   PY=/usr/bin/python3 REPEAT=5 sh tests/bench/import_probe.sh
#
# Why: on the 16-core H200 host a bare `import numpy` took 2.1-2.2 s of CPU
# in 0.32 s (OpenBLAS's threads spinning as they start), in every process
# that imports it (docs/log/2026-12-02-owner-kernels.md).
# bash's `time` keyword and TIMEFORMAT: `sh` (dash) has neither, and its
# rows failed on the GPU host, so a run under sh starts bash.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-${CUGRADE_PYTHON:-}}
if [ -z "$PY" ]; then
    PY=/usr/bin/python3
    [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
fi
REPEAT=${REPEAT:-3}
CUDA=${CUDA_HOME:-/usr/local/cuda}
CS=$CUDA/bin/compute-sanitizer
T=$ROOT/labs/common/py/tenant.py
F=$ROOT/tests/gpu/solutions-py/reduction/fast_numba.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TIMEFORMAT="%R %U %S"

# row LABEL CMD...: REPEAT runs of CMD (fd 3 a scratch file: the sanitizer
# run's channel), the median of each column, or the failure's last line.
row() {
    label=$1
    shift
    : >"$TMP/times"
    for _ in $(seq "$REPEAT"); do
        { time "$@" 3>"$TMP/chan" >"$TMP/out" 2>&1; } 2>>"$TMP/times"
        rc=$?
        if [ $rc -ne 0 ]; then
            printf '%-56s | exit %d: %s\n' "$label" "$rc" "$(tail -1 "$TMP/out" | cut -c1-60)"
            return
        fi
    done
    "$PY" - "$TMP/times" "$label" <<'EOF'
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = [sorted(c)[len(c) // 2] for c in zip(*rows)]
print("%-56s | %6.2f %6.2f %6.2f" % (sys.argv[2], *med))
EOF
}

SIM=""
if ! nvidia-smi -L >/dev/null 2>&1; then
    export NUMBA_ENABLE_CUDASIM=1 # no GPU: the sanitizer run's rows in Numba's simulator,
    SIM=" (simulator)"            # on the starter (one block: the simulator runs threads in Python)
    F=$ROOT/labs/reduction/starter.py
fi
echo "python: $PY; $(nproc) CPUs; median of $REPEAT"
# Whether the modules come compiled (a root without bytecode compiles them
# at every import in our -B runs: the runner's prepare compiles it,
# docs/python.md "Bytecode").
"$PY" -I -B - <<'EOF' 2>/dev/null
import importlib.util, os
seen = []
for name in ("numpy", "numba", "cupy", "torch", "sympy"):
    spec = importlib.util.find_spec(name)
    if spec and spec.origin:
        seen.append("%s %s" % (name, "yes" if os.path.exists(importlib.util.cache_from_source(spec.origin)) else "NO"))
print("bytecode beside each package's __init__: " + (", ".join(seen) or "none of them installed"))
EOF
printf '%-56s | %6s %6s %6s\n' "command" "wall" "user" "sys"
row "import numpy" "$PY" -I -B -c "import numpy"
row "import numpy, OPENBLAS_NUM_THREADS=1 (owner, judge)" env OPENBLAS_NUM_THREADS=1 "$PY" -I -B -c "import numpy"
row "import numpy, OPENBLAS_THREAD_TIMEOUT=4 (tenants)" env OPENBLAS_THREAD_TIMEOUT=4 "$PY" -I -B -c "import numpy"
row "import numba.cuda" "$PY" -I -B -c "import numba.cuda"
row "import numba.cuda, OPENBLAS_THREAD_TIMEOUT=4" env OPENBLAS_THREAD_TIMEOUT=4 "$PY" -I -B -c "import numba.cuda"
row "import cupy" "$PY" -I -B -c "import cupy"
row "import cupy, OPENBLAS_THREAD_TIMEOUT=4" env OPENBLAS_THREAD_TIMEOUT=4 "$PY" -I -B -c "import cupy"
row "import torch, OMP_NUM_THREADS=4 (profiling trainers)" env OMP_NUM_THREADS=4 OPENBLAS_THREAD_TIMEOUT=4 \
    "$PY" -I -B -c "import numpy, torch"
row "  and torch._dynamo (a trainer's first optimizer step)" env OMP_NUM_THREADS=4 OPENBLAS_THREAD_TIMEOUT=4 \
    "$PY" -I -B -c "import numpy, torch, torch._dynamo"
row "tenant --sanitize reduction 1000 $(basename "$F")$SIM" "$PY" -I -B "$T" --sanitize reduction 1000 0123456789abcdef "$F"
if [ -x "$CS" ] && [ -z "$SIM" ]; then
    for tool in memcheck racecheck; do
        row "  the same under $tool" "$CS" --tool $tool --error-exitcode 86 --print-limit 20 \
            --launch-timeout 60 "$PY" -I -B "$T" --sanitize reduction 1000 0123456789abcdef "$F"
    done
else
    echo "(no GPU or no $CS: no sanitizer rows)"
fi

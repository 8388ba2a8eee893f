#!/bin/sh
# Build a lab's trusted programs for one GPU architecture (docs/labs.md).
#
#   sh labs/build-lab.sh LAB OUTDIR ARCH        e.g. sh labs/build-lab.sh matmul /tmp/x sm_90
#
# Writes into OUTDIR:
#   cases.h             the cases of labs/LAB/lab.json, as C (generated)
#   harness.o           the trusted harness: link a student object with it
#   judge               the trusted judge (runs outside the sandbox, needs the GPU)
#   baseline-<name>     harness.o + reference/LAB/<name>.cu, for each GPU baseline
#                       listed in lab.json ("naive", "optimized", "cublas")
#   cpu-baseline        reference/LAB/cpu.c, when lab.json lists "cpu"
#   link.txt            the exact command that links a student's object
#
# The runner runs this once at start (trusted, outside any sandbox), then per
# submission:  nvcc -c <nvcc_flags> -arch=ARCH student.cu -o student.o
#              nvcc -arch=ARCH -cudart static OUTDIR/harness.o student.o -o prog
#              nvcc ... -shared -o prog.so      (the same, for the sanitizers)
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# CC (default cc), PYTHON (default python3).
set -eu

if [ $# -ne 3 ]; then
    echo "usage: sh labs/build-lab.sh LAB OUTDIR ARCH   (ARCH like sm_90)" >&2
    exit 2
fi
LAB=$1 OUT=$2 ARCH=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)

case "$LAB" in *[!a-z0-9_-]*|"") echo "build-lab: bad lab name '$LAB'" >&2; exit 2;; esac
case "$ARCH" in sm_[0-9]*) ;; *) echo "build-lab: ARCH must look like sm_90, got '$ARCH'" >&2; exit 2;; esac
[ -f "$ROOT/labs/$LAB/lab.json" ] || { echo "build-lab: no labs/$LAB/lab.json" >&2; exit 2; }

# A lab without a CUDA harness (Python submissions only: labs/profiling,
# labs/pipeline): its judge is a trusted Python program,
# reference/LAB/judge.py, and nothing is compiled. The judge and the Python
# files it may import (labs/common/py/gen.py and owner_tenant.py,
# labs/LAB/*.py and lab.json)
# are copied, so a later change of the tree does not change a built lab;
# `judge` runs the copy with a Python that has NumPy: $CUGRADE_PYTHON (the
# submissions' interpreter), else $PYTHON, else /usr/bin/python3.
if [ ! -f "$ROOT/labs/$LAB/harness.cu" ] && [ -f "$ROOT/reference/$LAB/judge.py" ]; then
    mkdir -p "$OUT/py"
    OUT=$(cd "$OUT" && pwd)
    PY=/usr/bin/python3
    for p in "${CUGRADE_PYTHON:-}" "$(command -v "${PYTHON:-python3}" 2>/dev/null || true)" /usr/bin/python3; do
        if [ -n "$p" ] && "$p" -c "import numpy" >/dev/null 2>&1; then PY=$p; break; fi
    done
    cp "$ROOT/reference/$LAB/judge.py" "$OUT/judge.py"
    for f in "$ROOT/labs/common/py/gen.py" "$ROOT/labs/common/py/owner_tenant.py" \
        "$ROOT/labs/$LAB/lab.json" "$ROOT/labs/$LAB/"*.py; do
        if [ -f "$f" ]; then cp "$f" "$OUT/py/"; fi
    done
    printf '#!/bin/sh\nexec %s -I -B "%s/judge.py" "$@"\n' "$PY" "$OUT" > "$OUT/judge.tmp"
    chmod 755 "$OUT/judge.tmp"
    mv "$OUT/judge.tmp" "$OUT/judge"
    echo "build-lab: $LAB: the Python judge only (no harness.cu), run with $PY" >&2
    exit 0
fi

if [ -z "${NVCC:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
INC="-I$OUT -I$ROOT/labs/common"
# Trusted code: optimise, and keep the host side hardened like our C.
# Position-independent: harness.o links into the check run's executable and
# into the shared object the sanitizers load (runner/launch.c).
NVFLAGS="-O3 -arch=$ARCH -std=c++17 -Xcompiler -fstack-protector-strong -Xcompiler -fPIC"

# The cases, from lab.json. A host without python3 uses the copy generated
# into the repository (labs/LAB/cases.generated.h; tests/labs/build.t keeps
# it in sync with lab.json).
if command -v "$PYTHON" >/dev/null 2>&1; then
    (cd "$ROOT" && "$PYTHON" labs/common/gen-cases.py "labs/$LAB/lab.json") > "$OUT/cases.h.tmp"
    mv "$OUT/cases.h.tmp" "$OUT/cases.h"
else
    echo "build-lab: no $PYTHON; using labs/$LAB/cases.generated.h" >&2
    cp "$ROOT/labs/$LAB/cases.generated.h" "$OUT/cases.h"
fi

# Which baselines lab.json lists: its one-line "baselines": [...] array.
BASELINES=$(sed -n 's/.*"baselines": *\[\(.*\)\].*/\1/p' "$ROOT/labs/$LAB/lab.json" | tr -d '"' | tr ',' ' ')

run() { echo "  $*" >&2; "$@"; }

echo "build-lab: $LAB for $ARCH into $OUT" >&2
run "$NVCC" $NVFLAGS $INC -c "$ROOT/labs/$LAB/harness.cu" -o "$OUT/harness.o"
run "$NVCC" $NVFLAGS $INC "$ROOT/reference/$LAB/judge.cu" -o "$OUT/judge"

for b in $BASELINES; do
    case "$b" in
    cpu)
        run "$CC" -std=c17 -D_GNU_SOURCE -O2 $INC "$ROOT/reference/$LAB/cpu.c" -o "$OUT/cpu-baseline"
        ;;
    *)
        libs=""
        if [ "$b" = cublas ]; then
            cudalib=$(dirname "$(command -v "$NVCC")")/../lib64
            libs="-lcublas -Xlinker -rpath -Xlinker $cudalib"
        fi
        run "$NVCC" $NVFLAGS -c "$ROOT/reference/$LAB/$b.cu" -o "$OUT/ref-$b.o"
        # cuBLAS is linked dynamically (its static archives are ~1 GB); the
        # baseline runs on the runner host, where the CUDA toolkit is.
        run "$NVCC" -arch="$ARCH" -cudart static "$OUT/harness.o" "$OUT/ref-$b.o" -o "$OUT/baseline-$b" $libs
        ;;
    esac
done

echo "$NVCC -arch=$ARCH -cudart static $OUT/harness.o student.o -o prog" > "$OUT/link.txt"
echo "build-lab: ok" >&2

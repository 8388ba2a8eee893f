#!/bin/sh
# The fake lab's build: harness.o, judge, baseline-naive, cpu-baseline.
# A suite's set-up, not what it checks: through the suites' compile cache
# when tests/run.sh gives one (CUGRADE_TEST_NVCC, tests/tools/nvcc_cached.py),
# each source compiled from its own folder, by its name, so that every
# suite's copy of this lab is the same compile.
set -eu
LAB=$1 OUT=$2 ARCH=$3
HERE=$(cd "$(dirname "$0")" && pwd)
NVCC=${NVCC:-${CUGRADE_TEST_NVCC:-/usr/local/cuda/bin/nvcc}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
(cd "$HERE" && "$NVCC" -arch="$ARCH" -Xcompiler -fPIC -c -x cu harness.cpp -o "$OUT/harness.o")
cp "$HERE/judge.py" "$OUT/judge" && chmod 755 "$OUT/judge"
cp "$HERE/judge_rule.py" "$OUT/judge_rule.py"
# The naive reference: about 1 ms a call on the big case, some 90 times the
# plain loop's (the tiers need 2x); a timing run's 600 calls take 0.5 s of
# CPU (40 volatile adds an element took 15 ms a call, 7.6 s a run, the
# most of every runner suite's CPU).
printf 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) { volatile float x = 0; for (int k = 0; k < 4; k++) x += 1; o[i] = 2.0f * i + (x - 4); } }\n' > "$OUT/naive.cu"
(cd "$OUT" && "$NVCC" -arch="$ARCH" -c naive.cu -o naive.o)
"$NVCC" -arch="$ARCH" "$OUT/harness.o" "$OUT/naive.o" -o "$OUT/baseline-naive"
printf '#!/bin/sh\necho "{\\"case\\":\\"big\\",\\"median_ms\\":5.0,\\"samples_ms\\":[5.0,5.1,4.9]}"\n' > "$OUT/cpu-baseline"
chmod 755 "$OUT/cpu-baseline"

#!/bin/sh
# ncu_probe.sh - where a profile's seconds go: the runner's ncu command line
# on a lab's trusted program (the reference solution linked with the
# harness: a correct student's program), bare, without the runner or the
# sandbox, against variants that each drop one cost.
#
# Why (issue 25): in a 200-job burst on two H200s only 4 of 147 profiles
# came within 60 s of their verdict. One profiler runs per GPU, and a
# profile took 2.5-3.3 s alone; a GPU grading 33 jobs a minute leaves it
# under 1.8 s a job. This says which of ncu's costs can go.
#
#   sh tests/bench/ncu_probe.sh LABDIR [LAB] [PROG]
#     LABDIR: sh labs/build-lab.sh LAB LABDIR sm_90's output
#     PROG: the program in LABDIR (default baseline-optimized)
#   env: NCU (default /opt/nvidia/nsight-compute/2025.3.1/ncu, else on PATH)
#        REPEAT=3  CASES="" (default: the lab's timing case, then its
#        sanitize case)  OUT=DIR (ncu's logs)
#
# Prints one row per variant and case: the median and smallest wall time of
# REPEAT runs and the kernels profiled. A table, not a test.
set -eu
LABDIR=$(cd "${1:?usage: sh tests/bench/ncu_probe.sh LABDIR [LAB] [PROG]}" && pwd)
LAB=${2:-reduction}
PROG=$LABDIR/${3:-baseline-optimized}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NCU=${NCU:-/opt/nvidia/nsight-compute/2025.3.1/ncu}
[ -x "$NCU" ] || NCU=$(command -v ncu || true)
[ -n "$NCU" ] || { echo "ncu_probe: no ncu: skipped"; exit 0; }
nvidia-smi -L > /dev/null 2>&1 || { echo "ncu_probe: no GPU on this host: skipped"; exit 0; }
REPEAT=${REPEAT:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# The runner's lists, read from its sources so that the probe follows them.
METRICS=$(sed -n '/^const char PROFILE_METRICS\[\] =/,/;$/p' "$ROOT/runner/feedback/profile.c" |
    grep -o '"[^"]*"' | tr -d '"' | tr -d '\n')
SRC_METRICS=$(sed -n '/#define PROFILE_SOURCE_METRICS/,/"$/p' "$ROOT/runner/feedback/profile.h" |
    grep -o '"[^"]*"' | tr -d '"' | tr -d '\n')
LAUNCHES=$(sed -n 's/#define PROFILE_LAUNCH_COUNT "\([0-9]*\)".*/\1/p' "$ROOT/runner/feedback/profile.h")
SKIP=$(cat "$ROOT/labs/common/harness_common.cu" "$ROOT/labs/$LAB/harness.cu" |
    sed -n 's/.*__global__ void \([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' | sort -u | paste -sd'|')
FILTER="regex:^(?!($SKIP)\$).*"
CASES=${CASES:-$(python3 -c "
import json,sys; s=json.load(open('$ROOT/labs/$LAB/lab.json'))
print(s['timing_case'], s.get('sanitize_case', s['cases'][0]['name']))")}

echo "ncu_probe: $LAB, $(basename "$PROG"), $($NCU --version | tail -1), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "| variant | case | median s | min s | kernels profiled |"
echo "|---|---|---|---|---|"

probe() { # name case cmd...
    name=$1 case=$2; shift 2
    ts=""
    i=0
    while [ $i -lt "$REPEAT" ]; do
        i=$((i + 1))
        rm -f "$OUT/$name-$cs.csv" "$OUT/$name-$cs.ncu-rep" "$OUT/$name.out"
        t0=$(date +%s%N)
        "$@" > "$OUT/$name.out" 2>&1 3>/dev/null || echo "ncu_probe: $name $case exited $?" >&2
        t1=$(date +%s%N)
        ts="$ts $(((t1 - t0) / 1000000))"
    done
    k=$(grep -c '^"[0-9]' "$OUT/$name-$cs.csv" 2>/dev/null || true)
    echo "$ts" | python3 -c "
import sys,statistics; t=[int(x) / 1000 for x in sys.stdin.read().split()]
print('| $name | $case | %.2f | %.2f | $k |' % (statistics.median(t), min(t)))"
}

# One ncu variant of case $c: the runner's fixed options and the log probe
# counts the kernels in, then the variant's own options, then the target.
ncu_variant() { # name options...
    v=$1; shift
    probe "$v" "$c" "$NCU" --csv --page raw --target-processes all --clock-control none \
        --print-kernel-base function "$@" --log-file "$OUT/$v-$cs.csv" $T
}

SEED=5eed5eed5eed5eed
for c in $(echo "$CASES" | tr ',' ' '); do
    cs=$(printf %s "$c" | tr -c 'A-Za-z0-9' '_') # the case in file names
    T="$PROG check --seed $SEED --cases $c"
    probe bare "$c" $T
    ncu_variant runner --metrics "$METRICS,$SRC_METRICS" --launch-count "$LAUNCHES" \
        -f -o "$OUT/runner-$cs" --kernel-name-base function --kernel-name "$FILTER"
    ncu_variant no_source --metrics "$METRICS" --launch-count "$LAUNCHES" \
        --kernel-name-base function --kernel-name "$FILTER"
    ncu_variant no_cache_flush --cache-control none --metrics "$METRICS,$SRC_METRICS" \
        --launch-count "$LAUNCHES" -f -o "$OUT/no_cache_flush-$cs" \
        --kernel-name-base function --kernel-name "$FILTER"
    ncu_variant launch4 --metrics "$METRICS,$SRC_METRICS" --launch-count 4 \
        -f -o "$OUT/launch4-$cs" --kernel-name-base function --kernel-name "$FILTER"
    ncu_variant time_only --metrics gpu__time_duration.sum --launch-count "$LAUNCHES" \
        --kernel-name-base function --kernel-name "$FILTER"
    ncu_variant no_kernel --metrics gpu__time_duration.sum --kernel-name 'regex:^none_such$'
done

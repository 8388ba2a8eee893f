#!/bin/sh
# sync_probe.sh - what a check run's processes cost the host's CPUs while
# they wait for a GPU that other jobs' processes share (issue 25).
#
# Why: a process of one CUDA context on a host of many cores spins on a
# core whenever it waits for the GPU (CUDA's default, "auto"). In a burst a
# GPU time-slices a dozen jobs' contexts, so each wait is long, and every
# check run's processes spun through theirs: the Python burst's host was
# 99% busy at its p90 while the GPU's utilisation was 20%. Check runs and
# sanitizer runs now wait asleep (harness_common.cu, vmm.py blocking_sync).
#
#   sh tests/bench/sync_probe.sh OLD_LABDIR NEW_LABDIR [LAB]
#     *_LABDIR: sh labs/build-lab.sh LAB DIR sm_90's output, built from the
#     tree before and after the change
#   env: N=8 (check runs at once)  SPIN_MS=50 LAUNCHES=20 PYTHON=python3
#        (the CuPy part: an interpreter with CuPy)
#
# Prints two tables: the lab's reference program's `check` of every case
# (its harness is a student's) alone and N at once, per build: wall, the CPU
# seconds of all N, and the device record's "sync"; then N CuPy processes
# at once, each waiting on LAUNCHES kernels of SPIN_MS, with CuPy's default
# and after vmm.blocking_sync(): their CPU seconds in the waits. A table,
# not a test.
set -eu
OLD=$(cd "${1:?usage: sh tests/bench/sync_probe.sh OLD_LABDIR NEW_LABDIR [LAB]}" && pwd)
NEW=$(cd "${2:?usage}" && pwd)
LAB=${3:-reduction}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-8}
nvidia-smi -L > /dev/null 2>&1 || { echo "sync_probe: no GPU on this host: skipped"; exit 0; }
TMP=$(mktemp -d)
CASES=$(python3 -c "
import json; print(','.join(c['name'] for c in json.load(open('$ROOT/labs/$LAB/lab.json'))['cases']))")
PROG=$(ls "$OLD" | grep '^baseline-' | grep -v cpu | head -1)

# run_checks DIR K: K checks of DIR's program at once; prints "wall cpu sync"
run_checks() {
    i=0
    t0=$(date +%s%N)
    while [ $i -lt "$2" ]; do
        i=$((i + 1))
        /usr/bin/time -f "%U %S" -o "$TMP/t$i" \
            "$1/$PROG" check --seed 5eed$i --cases "$CASES" 3>"$TMP/c$i" >/dev/null 2>&1 &
    done
    wait
    t1=$(date +%s%N)
    cpu=$(cat "$TMP"/t* | awk '{ s += $1 + $2 } END { printf "%.2f", s }')
    sync=$(grep -ho '"sync":"[a-z]*"' "$TMP"/c1 | head -1 | cut -d'"' -f4)
    rm -f "$TMP"/t* "$TMP"/c*
    echo "$(( (t1 - t0) / 1000000 )) $cpu ${sync:-none}"
}

echo "sync_probe: $LAB $PROG, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
echo "| build | runs at once | wall ms | CPU s, all runs | device record's sync |"
echo "|---|---|---|---|---|"
for b in old new; do
    d=$OLD; [ $b = new ] && d=$NEW
    run_checks "$d" 1 > /dev/null   # the program's first start: caches
    for k in 1 "$N"; do
        set -- $(run_checks "$d" "$k")
        echo "| $b | $k | $1 | $2 | $3 |"
    done
done

cat > "$TMP/probe.py" <<EOF
import resource, sys, time
sys.path.insert(0, "$ROOT/labs/common/py")
import vmm
ok = vmm.blocking_sync() if sys.argv[1] == "blocking" else None
import cupy as cp
k = cp.RawKernel(r'''extern "C" __global__ void spin(long long c)
{ long long t0 = clock64(); while (clock64() - t0 < c) {} }''', "spin")
rate = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1000
k((1,), (1,), (cp.int64(1000),)); cp.cuda.Device().synchronize()
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.time()
for _ in range(int(sys.argv[2])):
    k((1,), (1,), (cp.int64(rate * int(sys.argv[3]) // 1000),))
    cp.cuda.Device().synchronize()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("%.2f %.3f %s" % (time.time() - t0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, ok))
EOF
echo
echo "| CuPy waits | processes at once | wall s (max) | CPU s in the waits, all | blocking_sync() |"
echo "|---|---|---|---|---|"
for mode in default blocking; do
    for k in 1 "$N"; do
        i=0
        while [ $i -lt "$k" ]; do
            i=$((i + 1))
            "${PYTHON:-python3}" "$TMP/probe.py" $mode "${LAUNCHES:-20}" "${SPIN_MS:-50}" > "$TMP/out.$i" 2>&1 &
        done
        wait
        awk -v m=$mode -v k="$k" '$1 ~ /^[0-9.]+$/ { if ($1 > w) w = $1; c += $2; s = $3; n++ }
            END { printf "| %s | %d | %.2f | %.2f | %s (%d of %d ran) |\n", m, k, w, c, s, n, k }' "$TMP"/out.*
        for f in $(grep -L '^[0-9]' "$TMP"/out.*); do tail -n 3 "$f" >&2; done
        rm -f "$TMP"/out.*
    done
done
rm -rf "$TMP"

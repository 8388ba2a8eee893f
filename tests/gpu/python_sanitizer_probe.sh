#!/bin/sh
# compute-sanitizer on Python (Numba, CuPy) kernels, outside the runner: the
# probe behind docs/python.md "Sanitizers" and the fixtures under
# tests/runner/fixtures/pysan-*.txt. Each line of $OUT/probe/summary.txt:
# name, exit status, seconds; the outputs beside it.
#   sh tests/gpu/python_sanitizer_probe.sh
BACK=${OUT:-/tmp}; OUT=$BACK/probe
[ "${1:-}" = runner ] && OUT=/tmp/pysan-out   # one archive comes back, not many files
mkdir -p "$OUT"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
CS="compute-sanitizer --error-exitcode 86 --print-limit 20 --launch-timeout 60"
T=labs/common/py/tenant.py; O=labs/common/py/owner.py; S=tests/gpu/solutions-py
# /work/kernel.py, as in the sandbox, for the runs whose output becomes a
# fixture (sequential); /work/NAME/kernel.py for the others.
W=/work; mkdir -p $W || exit 2
one() { # name, command...
    n=$1; shift; s=$(date +%s.%N)
    timeout ${PROBE_TIMEOUT:-100} "$@" >"$OUT/$n.out" 2>"$OUT/$n.err" 3>"$OUT/$n.chan"
    echo "$n rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s" >>"$OUT/summary.txt"
}
tsan() { # name tool lab case file [dir]
    mkdir -p "$W/${6:-}"; cp "$S/$3/$5.py" "$W/${6:-}/kernel.py"
    one "$1" $CS --tool "$2" python3 -I -B $T --sanitize "$3" "$4" 5eed0123 "$W/${6:-}/kernel.py"
}
if [ "${1:-}" = runner ]; then
    # The captures behind tests/runner/fixtures/pysan-{memcheck,racecheck}.txt
    # (the student's file as /work/kernel.py, as in the sandbox), then the
    # runner itself (tests/gpu/python_smoke.sh, from dist/) on a few
    # solutions with a rubric without speed lines (no timing run); one
    # archive back ($OUT/pysan.tgz).
    for c in "memcheck oob_write" "racecheck race"; do
        set -- $c; cp "$S/reduction/$2.py" $W/kernel.py
        s=$(date +%s.%N)
        $CS --tool $1 python3 -I -B $T --sanitize reduction 1000 5eed0123 $W/kernel.py \
            >"$OUT/cap-$1.txt" 2>&1 3>/dev/null
        echo "cap $1 $2 rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s" | tee -a "$OUT/summary.txt"
    done
    python3 -c "import json; r=json.load(open('rubrics/reduction.json')); r['speed']=[]; json.dump(r, open('/tmp/rub-nospeed.json','w'))"
    chmod 644 /tmp/rub-nospeed.json
    OUT=$OUT RUBRIC=/tmp/rub-nospeed.json FILES=${FILES:-"race oob_write fast_numba"} \
        timeout ${SMOKE_TIMEOUT:-150} sh tests/gpu/python_smoke.sh 2>&1 | tee "$OUT/smoke.txt"
    tar czf "$BACK/pysan.tgz" -C "$OUT" . 2>/dev/null
    exit 0
fi
: >"$OUT/summary.txt"
python3 -c "import numpy as np; np.row_stack=np.vstack; import numba, numba_cuda; print('numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)" >>"$OUT/summary.txt" 2>&1
compute-sanitizer --version | tail -1 >>"$OUT/summary.txt"
# plain python, no sanitizer: the baseline cost
one plain_fast python3 -I -B $T --sanitize reduction 1000 5eed0123 $S/reduction/fast_numba.py
# sequential, for the times
tsan mem_fast memcheck reduction 1000 fast_numba
tsan mem_oob memcheck reduction 1000 oob_write
tsan race_race racecheck reduction 1000 race
# the rest in parallel
tsan race_fast racecheck reduction 1000 fast_numba race_fast &
tsan mem_cupy memcheck reduction 1000 cupy_sum mem_cupy &
tsan race_cupy racecheck reduction 1000 cupy_sum race_cupy &
tsan mem_nobounds memcheck reduction 1000 no_bounds mem_nobounds &
tsan race_oob racecheck reduction 1000 oob_write race_oob &
tsan mem_race memcheck reduction 1000 race mem_race &
tsan race_tiled racecheck matmul 100x1x300 tiled_numba race_tiled &
tsan race_nosync racecheck matmul 100x1x300 no_sync race_nosync &
tsan mem_gather memcheck embedding 1000x33 gather_numba mem_gather &
tsan mem_embnob memcheck embedding 1000x33 no_bounds mem_embnob &
tsan mem_take memcheck embedding 1000x33 cupy_take mem_take &
# the owner/tenant pair with IPC buffers: does memcheck follow the tenant
# (--target-processes all), see the IPC allocation's bounds, and stay quiet
# on the owner's CuPy kernels and a correct kernel?
cp $S/reduction/oob_write.py $W/ipc_oob.py; cp $S/reduction/fast_numba.py $W/ipc_fast.py
chmod -R a+rX $W
one ipc_all_oob $CS --tool memcheck --target-processes all python3 -I -B $O reduction check --cases 1000 --no-guard --seed 5eed0123 --file $W/ipc_oob.py &
one ipc_all_fast $CS --tool memcheck --target-processes all python3 -I -B $O reduction check --cases 1000 --no-guard --seed 5eed0123 --file $W/ipc_fast.py &
one ipc_app_oob $CS --tool memcheck python3 -I -B $O reduction check --cases 1000 --no-guard --seed 5eed0123 --file $W/ipc_oob.py &
one ipc_all_race_fast $CS --tool racecheck --target-processes all python3 -I -B $O reduction check --cases 1000 --no-guard --seed 5eed0123 --file $W/ipc_fast.py &
wait
cat "$OUT/summary.txt"

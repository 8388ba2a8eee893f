#!/bin/sh
# The sandbox's added time per run: /bin/true, and a trivial CUDA program
# (context creation + one empty kernel) when a GPU is present; inside vs
# outside, median of N runs (default 20). Target: at most 50 ms added.
#   sh tests/bench/sandbox_bench.sh [BUILD|DIST] [N]
# Inside = sandbox_run() around the command (cgroup create/remove, bwrap,
# namespaces, seccomp, supervisor), timed in-process by the CLI's --bench;
# outside = fork+exec+wait of the same command by the same CLI (--direct).
# The CUDA program is measured twice: as the GPU's only user, and while
# another process holds a context open (as the runner's gpu-hold does).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WHERE=$(cd "${1:-${CUGRADE_BUILD:-$ROOT/build}}" && pwd) || exit 2
N=${2:-20}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
T=$(mktemp -d /tmp/cugrade-bench.XXXXXX) || exit 2
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT INT TERM

if [ -x "$WHERE/tools/sandbox_run" ]; then
    SR() { LD_LIBRARY_PATH="$WHERE/lib" CUGRADE_BWRAP="$WHERE/bwrap" "$WHERE/tools/sandbox_run" "$@"; }
else
    SR() { "$WHERE/tests/tools/sandbox_run" "$@"; }
fi
# the median, only when every run exited 0 (a failing exec measures nothing)
med() { sed -n 's/.*"median_ms":\([0-9.]*\).*"failed":0}.*/\1/p'; }
ROWS=""
measure() { # name, sandbox_run options..., -- command
    # Outside runs in $T, where the program also is, as inside it runs in
    # /work: the same relative command works for both.
    name=$1; shift
    out=$(cd "$T" && SR --bench "$N" --direct "$@" | med)
    in=$(SR --bench "$N" "$@" | med)
    if [ -z "$in" ] || [ -z "$out" ]; then
        add="error"; verdict="NO"
    else
        add=$(awk -v a="$in" -v b="$out" 'BEGIN { printf "%.1f", a - b }')
        verdict=$(awk -v x="$add" 'BEGIN { print (x <= 50 ? "yes" : "NO") }')
    fi
    ROWS="$ROWS$(printf '| %-28s | %12s | %12s | %10s | %-6s |' "$name" "$out" "$in" "$add" "$verdict")
"
}

measure "/bin/true" --quiet -- /bin/true
if [ -e /dev/nvidiactl ] && [ -x "$NVCC" ]; then
    if env -u LD_LIBRARY_PATH "$NVCC" -O2 -arch=native -o "$T/cuda-prog" "$ROOT/tests/gpu/sandbox_cuda.cu" >/dev/null 2>&1 ||
       env -u LD_LIBRARY_PATH "$NVCC" -O2 -o "$T/cuda-prog" "$ROOT/tests/gpu/sandbox_cuda.cu" >/dev/null 2>&1; then
        "$T/cuda-prog" trivial >/dev/null 2>&1 # warm the driver (nvidia-uvm node, persistence)
        GPUENV=""
        if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
            for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
                [ -e "$d/libcuda.so.1" ] && GPUENV="--env LD_LIBRARY_PATH=$d" && break
            done
        fi
        measure "trivial CUDA program" --gpu --mem 4G --pids 128 --wall 60 --cpu 60 $GPUENV --put "$T/cuda-prog:cuda-prog" -- ./cuda-prog trivial
        # As the runner runs them: its `gpu-hold` process keeps a context
        # open on the GPU (docs/runner.md), so no run pays the driver's GPU
        # initialisation and teardown, which cost ~90 ms more inside the
        # run's cgroup than outside (tests/bench/sandbox_diag.sh).
        "$T/cuda-prog" hold 600 >/dev/null 2>&1 &
        HOLD=$!
        sleep 2
        measure "trivial CUDA, GPU held" --gpu --mem 4G --pids 128 --wall 60 --cpu 60 $GPUENV --put "$T/cuda-prog:cuda-prog" -- ./cuda-prog trivial
        kill "$HOLD" 2>/dev/null
        wait "$HOLD" 2>/dev/null
    else
        echo "# nvcc failed; no CUDA row" >&2
    fi
else
    echo "# no GPU here: the CUDA row needs the GPU host" >&2
fi

echo "sandbox overhead, median of $N runs ($(uname -n), $(nproc) cores)"
echo "| program                      |  outside ms  |  inside ms   |  added ms  | <=50ms |"
echo "|------------------------------|--------------|--------------|------------|--------|"
printf '%s' "$ROWS"

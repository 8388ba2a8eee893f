#!/bin/sh
# The sandbox on a real GPU (run it on the GPU host, as root):
#   sh tests/gpu/sandbox.sh [DIST]        DIST defaults to ./dist (make dist)
# Uses DIST/tools/sandbox_run with DIST/lib and DIST/bwrap when present, else
# $CUGRADE_BUILD/tests/tools/sandbox_run with the host's /usr/bin/bwrap.
# Prints TAP lines, then a table. Standalone: tests/gpu/run.sh may call it.
#
#   1. a correct CUDA program runs inside and its answer checks out
#   2. without the GPU nodes, the same program finds no device
#   3. an endless kernel is killed at the wall limit; the next program runs
#   4. a program that takes all GPU memory and exits leaves the GPU usable
#   5. nvcc -c inside; the hostile suite (tests/sandbox/*.t) on this host
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIST=${1:-${CUGRADE_DIST:-$ROOT/dist}}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
T=$(mktemp -d /tmp/cugrade-gpu.XXXXXX) || exit 2
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT INT TERM
ROWS="$T/rows"
: >"$ROWS"
FAILS=0

# sandbox_run through a wrapper: our libraries for it (and bwrap) only; the
# host's own tools (nvcc, nvidia-smi) run without them. The dist folder is
# copied where the sandbox's host uid ("nobody") can reach bwrap and its
# libraries (the checkout may live under a 0700 home).
if [ -x "$DIST/tools/sandbox_run" ]; then
    cp -r "$DIST" "$T/dist" && chmod -R go+rX "$T/dist" && DIST="$T/dist"
    export SANDBOX_TEST_BWRAP="$DIST/bwrap" # hostile.t's slow bwrap runs it
    cat >"$T/sr" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$DIST/lib" CUGRADE_BWRAP="\${CUGRADE_BWRAP:-$DIST/bwrap}" exec "$DIST/tools/sandbox_run" "\$@"
EOF
else
    cat >"$T/sr" <<EOF
#!/bin/sh
exec "${CUGRADE_BUILD:-$ROOT/build}/tests/tools/sandbox_run" "\$@"
EOF
fi
chmod 755 "$T/sr"
SR="$T/sr"

row() { printf '| %-58s | %-4s | %s |\n' "$1" "$2" "$3" >>"$ROWS"; }
pass() { echo "ok - $1"; row "$1" ok "$2"; }
fail() { echo "not ok - $1"; printf '#   %s\n' "$2" | cut -c1-3000; row "$1" FAIL "$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-160)"; FAILS=$((FAILS + 1)); }
has() { case "$J" in *"$1"*) return 0 ;; esac; return 1; }
num() { printf '%s' "$J" | sed -n "s/.*\"$1\":\([-0-9.]*\).*/\1/p"; }
outof() { printf '%s' "$J" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | sed 's/\\n/ /g'; }

echo "# --- host ---"
{
    echo "kernel: $(uname -r)"; id
    nvidia-smi -L 2>&1 | head -n 4
    echo "cgroup: $(cat /proc/self/cgroup | tr '\n' ' ')"
    mount | grep -E 'cgroup' | head -n 5
    echo "root controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
    echo "root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
    ls -l /dev/nvidia* 2>&1 | head -n 12
    echo "libcuda: $(ldconfig -p 2>/dev/null | grep 'libcuda.so' | head -n 3 | tr '\n' ' ')"
    echo "userns: max=$(cat /proc/sys/user/max_user_namespaces 2>&1) apparmor_restrict=$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>&1)"
    echo "bwrap: $(LD_LIBRARY_PATH="$DIST/lib" "$DIST/bwrap" --version 2>&1)"
    LD_LIBRARY_PATH="$DIST/lib" ldd "$DIST/bwrap" 2>&1
    echo "dist at $DIST: $(ls -ld "$DIST" 2>&1)"
} 2>&1 | sed 's/^/# /'

# The driver's libraries, for programs inside: found through ld.so.cache
# (bound from /etc) when it lists them; else by path, bound read-only.
GPUENV="--env PATH=/usr/local/cuda/bin:/usr/bin:/bin --env HOME=/work --env LANG=C"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
        if [ -e "$d/libcuda.so.1" ]; then
            GPUENV="$GPUENV --env LD_LIBRARY_PATH=$d"
            case "$d" in /usr/*) ;; *) GPUENV="$GPUENV --bind $d" ;; esac
            echo "# libcuda.so.1 not in ld.so.cache: using $d"
            break
        fi
    done
fi
LIM="--mem 4G --pids 128 --wall 60 --cpu 60"

# Can we build a sandbox here at all? If not for want of a cgroup, say so
# and go on without one, to learn what else holds (marked FAIL regardless).
J=$("$SR" -- /bin/true 2>"$T/err")
case "$J" in
'{"rc":0'*) pass "sandbox_run works on this host" "$(grep -h 'root mode' "$T/err" | head -n 1)" ;;
*) fail "sandbox_run works on this host" "$J $(cat "$T/err")"
   if grep -q cgroup "$T/err"; then
       sed -i 's|exec \(.*sandbox_run"\) "\$@"|exec \1 --no-cgroup "$@"|' "$SR"
       echo "# continuing WITHOUT cgroups to test the rest (sandbox_run --no-cgroup)"
   fi ;;
esac

# Build the CUDA programs here, with this host's nvcc, for this GPU.
if ! env -u LD_LIBRARY_PATH "$NVCC" -O2 -arch=native -o "$T/cuda-prog" "$ROOT/tests/gpu/sandbox_cuda.cu" >"$T/nvcc.log" 2>&1 &&
   ! env -u LD_LIBRARY_PATH "$NVCC" -O2 -o "$T/cuda-prog" "$ROOT/tests/gpu/sandbox_cuda.cu" >"$T/nvcc.log" 2>&1; then
    fail "nvcc builds tests/gpu/sandbox_cuda.cu" "$(tail -n 5 "$T/nvcc.log")"
    cat "$ROWS"; exit 1
fi
P="--put $T/cuda-prog:cuda-prog"

# 0. control: outside the sandbox (also creates /dev/nvidia-uvm on demand)
o=$("$T/cuda-prog" vecadd 2>&1)
case "$o" in PASS*) pass "control: CUDA program outside the sandbox" "$o" ;; *) fail "control: CUDA program outside the sandbox" "$o" ;; esac
MEM0=$("$T/cuda-prog" meminfo 2>&1)

# 1. correct program inside
J=$("$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd 2>"$T/err")
if has '"exit_code":0' && has 'PASS'; then pass "CUDA program correct inside the sandbox" "$(outof), $(num wall_seconds) s, peak $(($(num peak_memory_bytes) / 1048576)) MiB"
else fail "CUDA program correct inside the sandbox" "$J $(cat "$T/err")"; fi

# 2. no GPU nodes given: no GPU
J=$("$SR" $GPUENV $LIM $P -- ./cuda-prog vecadd 2>"$T/err")
if has '"exit_code":3' && ! has 'PASS'; then pass "without --gpu the sandbox has no GPU" "$(outof)"
else fail "without --gpu the sandbox has no GPU" "$J"; fi

# 3. endless kernel: killed at the wall limit, the next program runs
J=$("$SR" $GPUENV $LIM --wall 5 --gpu $P -- ./cuda-prog endless 2>"$T/err")
w=$(num wall_seconds)
if has '"timed_out":1' && has 'kernel launched' && ! has 'NOT REACHED'; then pass "endless kernel killed at the 5 s wall limit" "wall ${w} s"
else fail "endless kernel killed at the 5 s wall limit" "$J $(cat "$T/err")"; fi
J=$("$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd 2>"$T/err")
if has '"exit_code":0' && has 'PASS'; then pass "next CUDA program after the endless kernel" "$(outof), $(num wall_seconds) s"
else fail "next CUDA program after the endless kernel" "$J $(cat "$T/err")"; fi

# 4. all GPU memory taken, exit without freeing: the next is fine
J=$("$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog hog 2>"$T/err")
if has '"exit_code":0' && has 'hogged'; then pass "program cudaMallocs all GPU memory and exits" "$(outof)"
else fail "program cudaMallocs all GPU memory and exits" "$J $(cat "$T/err")"; fi
J=$("$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog meminfo 2>"$T/err")
MEM1=$(outof)
J=$("$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd 2>"$T/err")
if has '"exit_code":0' && has 'PASS'; then pass "next CUDA program after the memory hog" "$(outof); before: $MEM0; after: $MEM1"
else fail "next CUDA program after the memory hog" "$J $(cat "$T/err")"; fi

# 4b. boxes: two CUDA programs at once, each its own host uid; and root mode
# (the user namespace made by us for the box, uid 0 inside): the GPU works
"$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd >"$T/j1" 2>"$T/err1" &
"$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd >"$T/j2" 2>"$T/err2" &
wait
J=$(cat "$T/j1"); u1=$(num host_uid); okb=0
has '"exit_code":0' && has 'PASS' && okb=1
J=$(cat "$T/j2"); u2=$(num host_uid)
if [ "$okb" = 1 ] && has '"exit_code":0' && has 'PASS' && [ -n "$u1" ] && [ "$u1" != "$u2" ]; then
    pass "two CUDA programs at once: both PASS, each its own host uid" "host uids $u1 and $u2"
else fail "two CUDA programs at once: both PASS, each its own host uid" "$(cat "$T/j1") $J $(cat "$T/err1" "$T/err2")"; fi
J=$(CUGRADE_SANDBOX_USER=root "$SR" $GPUENV $LIM --gpu $P -- ./cuda-prog vecadd 2>"$T/err")
if has '"exit_code":0' && has 'PASS'; then pass "CUDA program correct inside, root mode (box uid $(num host_uid))" "$(outof), $(num wall_seconds) s"
else fail "CUDA program correct inside, root mode" "$J $(cat "$T/err")"; fi

# 5. the CPU suites on this host: nvcc inside, hostile programs (cgroup v2)
for suite in compile hostile hostile_root; do
    SANDBOX_RUN="$SR" CUGRADE_ROOT="$ROOT" sh "$ROOT/tests/sandbox/$suite.t" >"$T/$suite.log" 2>&1
    p=$(grep -c '^ok' "$T/$suite.log"); f=$(grep -c '^not ok' "$T/$suite.log")
    sed 's/^/# '"$suite"': /' "$T/$suite.log" | grep -E '^# [a-z]+: (not ok|#)' | head -n 40
    if [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then pass "tests/sandbox/$suite.t on this host" "$p passed"
    else fail "tests/sandbox/$suite.t on this host" "$p passed, $f failed: $(grep '^not ok' "$T/$suite.log" | tr '\n' ';' | cut -c1-300)"; fi
done

# Keep the suites' full logs when asked (the device tool's $OUT).
[ -n "${SANDBOX_GPU_LOGS:-}" ] && mkdir -p "$SANDBOX_GPU_LOGS" && cp "$T"/*.log "$SANDBOX_GPU_LOGS/" 2>/dev/null

echo
echo "| sandbox on the GPU host                                    | ok?  | detail |"
echo "|------------------------------------------------------------|------|--------|"
cat "$ROWS"
echo
[ "$FAILS" -eq 0 ]

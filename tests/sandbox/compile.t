#!/bin/sh
# suite: serial hostile-prog  (tests/run.sh: the host checks find leftover
# processes by the name hostile-prog, which sandbox/*.t all run)
# Compilers inside the sandbox: gcc and nvcc (-c) compile a normal file, and
# `#include "/etc/shadow"` shows nothing of the host's file (docs/sandbox.md,
# "The trust boundary"). nvcc needs /usr/local/cuda (under the read-only
# /usr), gcc on PATH, a writable /tmp, a few hundred MB and more than a few
# pids.
. "$(dirname "$0")/lib.sh"

cat >"$T/ok.c" <<'SRC'
int add(int a, int b) { return a + b; }
SRC
cat >"$T/shadow.c" <<'SRC'
#include "/etc/shadow"
int x;
SRC
cat >"$T/ok.cu" <<'SRC'
__global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" void launch(float *x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
SRC
cp "$T/shadow.c" "$T/shadow.cu"
ENVS="--env PATH=/usr/local/cuda/bin:/usr/bin:/bin --env HOME=/work --env LANG=C"
LIM="--mem 2G --pids 256 --wall 120 --cpu 120 --workdir-size 256M --fsize 256M"

if grep -q '^root:' /etc/shadow 2>/dev/null; then ok "control: the host's /etc/shadow has a root line"
else nok "control: the host's /etc/shadow has a root line"; fi

run $ENVS $LIM --put "$T/ok.c:ok.c" -- /bin/sh -c 'gcc -O2 -c ok.c -o ok.o && ls ok.o'
check "gcc -c of a normal file succeeds inside" all 'has "\"exit_code\":0"' 'has "\"out\":\"ok.o\n\""'

run $ENVS $LIM --put "$T/shadow.c:shadow.c" -- gcc -c shadow.c -o shadow.o
check "gcc: #include \"/etc/shadow\" finds nothing" all 'has "\"exited\":1"' 'lacks "\"exit_code\":0"' \
    'has "No such file or directory"' 'lacks "root:"' 'lacks "\$y\$"' 'lacks "\$6\$"'

if [ ! -x "$NVCC" ]; then
    # The compile sandbox is what CI must test: no nvcc is a failure.
    echo "not ok - nvcc -c of a normal file succeeds inside: no $NVCC"
    echo "not ok - nvcc: #include \"/etc/shadow\" finds nothing: no $NVCC"
    exit 1
fi
run $ENVS $LIM --put "$T/ok.cu:ok.cu" -- /bin/sh -c "$NVCC -c ok.cu -o ok.o && ls ok.o"
w=$(num wall_seconds); m=$(num peak_memory_bytes)
echo "# nvcc -c inside: ${w}s wall, peak memory $m bytes"
check "nvcc -c of a normal file succeeds inside" all 'has "\"exit_code\":0"' 'has "ok.o\n\""'

run $ENVS $LIM --put "$T/shadow.cu:shadow.cu" -- "$NVCC" -c shadow.cu -o shadow.o
check "nvcc: #include \"/etc/shadow\" finds nothing" all 'has "\"exited\":1"' 'lacks "\"exit_code\":0"' \
    'has "No such file or directory"' 'lacks "root:"' 'lacks "\$y\$"' 'lacks "\$6\$"'

host_clean >/dev/null || true  # the kernel's moment to reap (2 s at most): a leftover stays
left=$(sandbox_procs | tr '\n' ' '); J="processes left: $left"
check "host: no process left behind" test -z "$left"
left=$(cg_dirs | tr '\n' ' '); J="cgroups left: $left"
check "host: no cgroup left behind" test -z "$left"
exit 0

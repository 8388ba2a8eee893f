#!/bin/sh
# Where a sandboxed CUDA program's extra time goes, and what the grading
# step's processes (compute-sanitizer, the judge) spend theirs on. GPU host,
# as root, one call (docs/sandbox.md "Overhead", docs/runner.md "Measured"):
#   sh tests/bench/sandbox_diag.sh [DIST] [N]
# DIST (default ./dist, `make dist`) must hold tools/sandbox_run, bwrap, lib/;
# DIST/diag/{prog,judge} (a matmul lab linked with a correct solution, built
# elsewhere) enable the sanitizer and judge part. Prints medians of N runs
# (default 10) per variant; each variant switches ONE thing.
# DIAG_ONLY=racecheck: only compute-sanitizer option variants (GPU held).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${1:-$ROOT/dist}
N=${2:-10}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
T=$(mktemp -d /tmp/cugrade-diag.XXXXXX) || exit 2
chmod 755 "$T"
HOLDER=""
trap '[ -n "$HOLDER" ] && kill $HOLDER 2>/dev/null; rm -rf "$T"' EXIT INT TERM
cp -r "$SRC" "$T/dist" && chmod -R go+rX "$T/dist"
D=$T/dist
SR() { LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" "$D/tools/sandbox_run" "$@"; }
now() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
sec() { echo "== $*"; }

sec "host"
uname -r; nproc
env -u LD_LIBRARY_PATH nvidia-smi --query-gpu=name,driver_version,persistence_mode,compute_mode --format=csv 2>&1
for f in spec_store_bypass spectre_v2 mds retbleed; do
    printf '%s: ' "$f"; cat "/sys/devices/system/cpu/vulnerabilities/$f" 2>&1
done
cat /proc/cmdline
ls -la /dev/nvidia* 2>&1 | head -20
ls /proc/driver/nvidia 2>&1 | tr '\n' ' '; echo
ls -la /run/nvidia-persistenced 2>&1 | head -3
ldconfig -p | grep -E 'libcuda.so.1|libnvidia-ptxjitcompiler' | head
cat /sys/fs/cgroup/cgroup.controllers 2>&1; cat /proc/self/cgroup
"$CS" --version 2>&1 | tail -1

env -u LD_LIBRARY_PATH "$NVCC" -O2 -arch=sm_90 -o "$T/cuda-prog" "$ROOT/tests/gpu/sandbox_cuda.cu" || exit 1
env -u LD_LIBRARY_PATH /usr/local/cuda/bin/cuobjdump --list-elf --list-ptx "$T/cuda-prog" 2>&1 | head -5
"$T/cuda-prog" trivial
G="--gpu --mem 4G --pids 128 --wall 60 --cpu 60 --quiet --output-cap 4M --put $T/cuda-prog:cuda-prog"
E="--env PATH=/usr/local/cuda/bin:/usr/bin:/bin --env HOME=/work --env LANG=C"
if [ -z "${DIAG_ONLY:-}" ]; then

sec "trivial CUDA program, median of $N (ms); one switch per row"
row() { name=$1; shift; printf '%-44s ' "$name"; "$@" 2>"$T/rowerr" | tr -d '\n'; echo; grep -v WITHOUT "$T/rowerr" | head -3; }
row "outside (fork+exec)" sh -c "cd $T && LD_LIBRARY_PATH= $D/tools/sandbox_run --bench $N --direct -- ./cuda-prog trivial"
row "outside, env -i" sh -c "cd $T && env -i LD_LIBRARY_PATH=$D/lib $D/tools/sandbox_run --bench $N --direct -- ./cuda-prog trivial"
row "inside (default)" SR --bench "$N" $G -- ./cuda-prog trivial
row "inside, no cgroup" env LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" "$D/tools/sandbox_run" --no-cgroup --bench "$N" $G -- ./cuda-prog trivial
row "inside, no seccomp" env LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" "$D/tools/sandbox_run" --no-seccomp --bench "$N" $G -- ./cuda-prog trivial
row "inside, root-mapped" env CUGRADE_SANDBOX_USER=root LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" "$D/tools/sandbox_run" --bench "$N" $G -- ./cuda-prog trivial
row "inside, no cgroup+seccomp, root-mapped" env CUGRADE_SANDBOX_USER=root LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" "$D/tools/sandbox_run" --no-cgroup --no-seccomp --bench "$N" $G -- ./cuda-prog trivial
[ -d /run ] && row "inside, + ro /run" SR --bench "$N" $G --bind /run -- ./cuda-prog trivial
row "inside, + CUDA_CACHE_PATH=/tmp/nvc" SR --bench "$N" $G $E --env CUDA_CACHE_PATH=/tmp/nvc -- ./cuda-prog trivial
row "inside, + /proc/driver/nvidia bound" SR --bench "$N" $G --bind /proc/driver/nvidia -- ./cuda-prog trivial
row "inside, CUDA_MODULE_LOADING=EAGER" SR --bench "$N" $G $E --env CUDA_MODULE_LOADING=EAGER -- ./cuda-prog trivial

sec "phases (monotonic s): tool start .. main .. ctx .. kernel .. tool end"
ph() { # label; stdin: sandbox_run's JSON (with "out"), or "T0 a T1 b" + the program's output
    python3 -c '
import json, re, sys
label, txt = sys.argv[1], sys.stdin.read()
t = txt
if txt.lstrip().startswith("{"):
    d = json.loads(txt.strip().splitlines()[0])
    t = "T0 %s T1 %s %s" % (d.get("t_start"), d.get("t_end"), d.get("out", ""))
m = re.search(r"main ([0-9.]+) ctx ([0-9.]+) kernel ([0-9.]+)", t)
s = re.search(r"T0 ([0-9.]+) T1 ([0-9.]+)", t)
if not m or not s:
    print(label, "unparsed:", txt[:400]); sys.exit()
t0, t1 = float(s.group(1)), float(s.group(2)); a, b, c = (float(x) for x in m.groups())
print("%-34s to-main %6.1f  ctx %6.1f  kernel %5.1f  exit %6.1f  total %6.1f ms" % (label, (a-t0)*1e3, (b-a)*1e3, (c-b)*1e3, (t1-c)*1e3, (t1-t0)*1e3))
for l in t.splitlines():
    if l.startswith(("Seccomp", "Speculation", "NoNewPrivs")): print("    " + l.replace("\t", " "))
' "$1"
}
for i in 1 2 3; do
    (cd "$T" && t0=$(now) && out=$(./cuda-prog phases) && t1=$(now) && echo "T0 $t0 T1 $t1 $out") | ph "outside #$i"
done
G0="--gpu --mem 4G --pids 128 --wall 60 --cpu 60 --put $T/cuda-prog:cuda-prog"
for i in 1 2 3; do SR $G0 -- ./cuda-prog phases | ph "inside #$i"; done
for i in 1 2; do SR --no-cgroup $G0 -- ./cuda-prog phases 2>/dev/null | ph "inside no cgroup #$i"; done
for i in 1 2; do
    SR --no-seccomp $G0 -- ./cuda-prog phases 2>/dev/null | ph "inside no seccomp #$i"
done

sec "dynamic loader: LD_DEBUG=libs (library search), outside vs inside"
(cd "$T" && LD_DEBUG=libs ./cuda-prog trivial 2>&1 | grep -cE 'trying file') | sed 's/^/outside: tried files: /'
(cd "$T" && LD_DEBUG=libs ./cuda-prog trivial 2>&1 | grep -E 'find library|calling init' | head -20)
SR --gpu --mem 4G --pids 128 --wall 60 --cpu 60 --output-cap 4M --put "$T/cuda-prog:cuda-prog" $E --env LD_DEBUG=libs -- ./cuda-prog trivial |
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); e=d.get("err",""); print("inside: tried files:", e.count("trying file")); [print(l) for l in e.splitlines() if "find library" in l or "calling init" in l][:20]'
(cd "$T" && LD_DEBUG=statistics ./cuda-prog trivial 2>&1 | grep -E 'total startup|relocation' | head -3)

sec "with a trusted process holding a CUDA context open (GPU kept initialised)"
"$T/cuda-prog" hold 120 &
HOLDER=$!
sleep 2
row "outside, holder running" sh -c "cd $T && LD_LIBRARY_PATH= $D/tools/sandbox_run --bench $N --direct -- ./cuda-prog trivial"
row "inside, holder running" SR --bench "$N" $G -- ./cuda-prog trivial
for i in 1 2; do SR $G0 -- ./cuda-prog phases | ph "inside, holder #$i"; done
kill $HOLDER 2>/dev/null; wait $HOLDER 2>/dev/null; HOLDER=""
sleep 1

fi
if [ ! -x "$D/diag/prog" ] || [ ! -x "$D/diag/judge" ]; then
    echo "no $D/diag/prog: sanitizer/judge part skipped"; exit 0
fi
sec "compute-sanitizer and the judge (matmul, fast.cu)"
SEED=0123456789abcdef0123456789abcdef
CASES="1x1x1,17x31x13,100x1x300,333x555x777,512x1024x256,1000^3,1023x1025x129,2048^3,4096^3"
RE="--env PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin --env HOME=/work --env TMPDIR=/tmp --env LANG=C --env CUDA_DEVICE_ORDER=PCI_BUS_ID --env CUDA_CACHE_PATH=/tmp/nvcache"
RG="--gpu --mem 16G --pids 256 --wall 120 --cpu 480 --quiet --output-cap 1M --put $D/diag/prog:prog"
sj() { python3 -c '
import json,sys
lab=sys.argv[1]
for l in sys.stdin:
    l=l.strip()
    if not l.startswith("{"): continue
    d=json.loads(l)
    print("%-44s rc %s exit %s wall %.3f s cpu %.3f s setup %.3f s %s" % (lab, d.get("rc"), d.get("exit_code"), d.get("wall_seconds",0), d.get("cpu_seconds",0), d.get("setup_seconds",0), d.get("message","")))
' "$1"; }
SR $RG $RE --result-file "$T/chan-check" -- /work/prog check --seed $SEED --cases "$CASES" | sj "check run (9 cases)"
SR $RG $RE --result-file "$T/chan-time" -- /work/prog time --seed $SEED --case "4096^3" --max-ms 300 | sj "timing run (4096^3)"
SR $RG $RE --result-file "$T/chan-x" -- /work/prog check --seed $SEED --cases 100x1x300 --no-guard | sj "check 100x1x300 alone (no sanitizer)"
jt() { label=$1; shift; t0=$(now); env -u LD_LIBRARY_PATH "$D/diag/judge" "$@" >"$T/jout" 2>&1; rc=$?; t1=$(now)
       printf '%-44s rc %s %.3f s  %s\n' "$label" $rc "$(dt $t0 $t1)" "$(head -c 160 "$T/jout")"; }
for i in 1 2; do jt "judge, check channel (9 cases) #$i" --seed $SEED --channel "$T/chan-check" --cases "$CASES"; done
jt "judge, check channel, small cases only" --seed $SEED --channel "$T/chan-check" --cases "1x1x1,17x31x13,100x1x300"
jt "judge, check channel, 4096^3 only" --seed $SEED --channel "$T/chan-check" --cases "4096^3"
jt "judge, timing channel" --seed $SEED --channel "$T/chan-time"
ls -la "$T/chan-check" "$T/chan-time"

san() { # label, tool, extra options...
    label=$1; tool=$2; shift 2
    SR $RG $RE --result-file "$T/chan-s-$tool" -- $CS --tool "$tool" --error-exitcode 86 --print-limit 20 \
        --launch-timeout 60 "$@" /work/prog check --seed $SEED --cases 100x1x300 --no-guard | sj "$label"
}
if [ "${DIAG_ONLY:-}" = racecheck ]; then
    # what racecheck (the grading's long pole, ~1.05 s) spends its time on
    "$T/cuda-prog" hold 300 >/dev/null 2>&1 &
    HOLDER=$!
    sleep 2
    for i in 1 2; do san "racecheck, GPU held #$i" racecheck; done
    san "racecheck --racecheck-report hazard" racecheck --racecheck-report hazard
    san "racecheck --racecheck-memcpy-async no" racecheck --racecheck-memcpy-async no
    san "racecheck --racecheck-num-workers 1" racecheck --racecheck-num-workers 1
    san "racecheck --racecheck-num-workers 8" racecheck --racecheck-num-workers 8
    san "racecheck --target-processes application-only" racecheck --target-processes application-only
    san "racecheck --kernel-name kns=matmul_opt_kernel" racecheck --kernel-name kns=matmul_opt_kernel
    san "memcheck --target-processes application-only" memcheck --target-processes application-only
    san "memcheck, GPU held" memcheck
    SR $G $RE --output-cap 1M -- $CS --tool racecheck ./cuda-prog trivial | sj "racecheck on the trivial program"
    SR $G $RE --output-cap 1M -- $CS --tool memcheck ./cuda-prog trivial | sj "memcheck on the trivial program"
    SR $RG $RE --result-file "$T/chan-z" -- /work/prog check --seed $SEED --cases 100x1x300 --no-guard | sj "no sanitizer, GPU held"
    kill $HOLDER 2>/dev/null; wait $HOLDER 2>/dev/null; HOLDER=""
    echo "== done"; exit 0
fi
t0=$(now); "$CS" --version >/dev/null 2>&1; t1=$(now); echo "compute-sanitizer --version: $(dt $t0 $t1) s"
for i in 1 2 3; do san "memcheck alone #$i" memcheck; done
for i in 1 2 3; do san "racecheck alone #$i" racecheck; done
for i in 1 2; do
    san "memcheck concurrent #$i" memcheck > "$T/c1" & a=$!
    san "racecheck concurrent #$i" racecheck > "$T/c2" & b=$!
    wait $a $b; cat "$T/c1" "$T/c2"
done
sanp() { # cpus, label, tool: as san, pinned to cpus
    cpus=$1; label=$2; tool=$3
    LD_LIBRARY_PATH="$D/lib" CUGRADE_BWRAP="$D/bwrap" taskset -c "$cpus" "$D/tools/sandbox_run" $RG $RE --result-file "$T/chan-p-$tool" -- $CS --tool "$tool" --error-exitcode 86 --print-limit 20 \
        --launch-timeout 60 /work/prog check --seed $SEED --cases 100x1x300 --no-guard | sj "$label"
}
if command -v taskset >/dev/null; then
    for i in 1 2; do
        sanp 0-7 "memcheck concurrent, cpus 0-7 #$i" memcheck > "$T/c1" & a=$!
        sanp 8-15 "racecheck concurrent, cpus 8-15 #$i" racecheck > "$T/c2" & b=$!
        wait $a $b; cat "$T/c1" "$T/c2"
    done
    sanp 0-3 "memcheck alone, 4 cpus" memcheck
    sanp 0 "memcheck alone, 1 cpu" memcheck
fi
for i in 1 2; do
    san "memcheck + concurrent check run #$i" memcheck > "$T/c1" & a=$!
    SR $RG $RE --result-file "$T/chan-y" -- /work/prog check --seed $SEED --cases 100x1x300 --no-guard | sj "  check run beside it" > "$T/c2" & b=$!
    wait $a $b; cat "$T/c1" "$T/c2"
done
san "memcheck --check-device-heap no" memcheck --check-device-heap no
san "memcheck --kernel-name kns=matmul_opt_kernel" memcheck --kernel-name kns=matmul_opt_kernel
san "racecheck --kernel-name kns=matmul_opt_kernel" racecheck --kernel-name kns=matmul_opt_kernel
san "memcheck --kernel-regex kns=matmul_opt" memcheck --kernel-regex kns=matmul_opt
san "memcheck --target-processes application-only" memcheck --target-processes application-only
san "memcheck --show-backtrace no" memcheck --show-backtrace no
san "memcheck --leak-check none --check-api-memory-access no" memcheck --leak-check none --check-api-memory-access no
san "memcheck --lazy-patching? (off by default)" memcheck --lazy-patching yes
for i in 1 2; do
    t0=$(now); (cd "$T" && cp "$D/diag/prog" ./prog && env -u LD_LIBRARY_PATH $CS --tool memcheck --error-exitcode 86 --print-limit 20 --launch-timeout 60 ./prog check --seed $SEED --cases 100x1x300 --no-guard 3>"$T/chan-o" >/dev/null 2>&1); rc=$?; t1=$(now)
    echo "memcheck OUTSIDE the sandbox #$i: rc $rc $(dt $t0 $t1) s"
done
"$T/cuda-prog" hold 120 &
HOLDER=$!
sleep 2
for i in 1 2; do san "memcheck alone, holder running #$i" memcheck; done
for i in 1 2; do
    san "memcheck concurrent, holder #$i" memcheck > "$T/c1" & a=$!
    san "racecheck concurrent, holder #$i" racecheck > "$T/c2" & b=$!
    wait $a $b; cat "$T/c1" "$T/c2"
done
SR $RG $RE --result-file "$T/chan-check2" -- /work/prog check --seed $SEED --cases "$CASES" | sj "check run (9 cases), holder"
SR $RG $RE --result-file "$T/chan-time2" -- /work/prog time --seed $SEED --case "4096^3" --max-ms 300 | sj "timing run, holder"
jt "judge, check channel, holder" --seed $SEED --channel "$T/chan-check2" --cases "$CASES"
kill $HOLDER 2>/dev/null; wait $HOLDER 2>/dev/null; HOLDER=""
"$CS" --help 2>&1 | grep -E '^\s+--(kernel|check|lazy|target|show|leak|racecheck|padding|injection|require|mode|binary)' | head -40
echo "== done"

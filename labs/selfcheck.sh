#!/bin/sh
# Check the labs end to end on a GPU host, without the server or the sandbox:
# build each lab (build-lab.sh), link every tests/gpu/solutions/<lab>/*.cu and
# every baseline with the harness, run `check` on all cases + the judge, time
# the ones that pass (+ the judge), run compute-sanitizer memcheck/racecheck
# on the sanitize case, time the CPU baseline, and print one table.
#
#   sh labs/selfcheck.sh OUTDIR [LAB...]
#
# Environment: SEED (hex, default random), MAX_MS (time cap per timing run,
# default 1500), SANITIZE=0 to skip compute-sanitizer, JOBS (parallel
# compiles, default nproc). Everything lands under OUTDIR (logs, channels,
# verdicts, table.txt). This is the course staff's tool and the source of
# the numbers in docs/labs.md; `make test-gpu` grades the same files through
# the real server and runner.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: sh labs/selfcheck.sh OUTDIR [LAB...]}
shift
LABS=${*:-reduction matmul embedding}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SEED=${SEED:-$(od -An -N8 -tx8 /dev/urandom | tr -d ' \n')}
MAX_MS=${MAX_MS:-1500}
SANITIZE=${SANITIZE:-1}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
if [ -z "${NVCC:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
export NVCC
SANITIZER=$(command -v compute-sanitizer || echo "$(dirname "$(command -v "$NVCC")")/compute-sanitizer")
CC_=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
ARCH=sm_${CC_:-90}
CUDALIB=$(dirname "$(command -v "$NVCC")")/../lib64
export LD_LIBRARY_PATH="$CUDALIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "selfcheck: labs [$LABS] arch $ARCH seed $SEED out $OUT" >&2

field() { # field FILE KEY: the JSON string/number after "KEY": in a one-line file
    sed -n "s/.*\"$2\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$1" 2>/dev/null | head -1
}

for lab in $LABS; do
    B="$OUT/$lab/build"
    mkdir -p "$B" "$OUT/$lab/obj"
    if ! sh "$ROOT/labs/build-lab.sh" "$lab" "$B" "$ARCH" >"$OUT/$lab/build.log" 2>&1; then
        echo "selfcheck: build of $lab failed:" >&2
        tail -20 "$OUT/$lab/build.log" >&2
        continue
    fi
    ALL=$(sed -n 's/^    {"\([^"]*\)".*/\1/p' "$B/cases.h" | paste -sd, -)
    TCASE=$(sed -n 's/^#define LAB_TIMING_CASE "\(.*\)"/\1/p' "$B/cases.h")
    SCASE=$(sed -n 's/^#define LAB_SANITIZE_CASE "\(.*\)"/\1/p' "$B/cases.h")

    # Compile and link every solution in parallel (CPU only).
    ls "$ROOT/tests/gpu/solutions/$lab"/*.cu 2>/dev/null | xargs -P "$JOBS" -I{} sh -c '
        f={}; n=$(basename "$f" .cu); o="$1/obj/$n"
        if "$NVCC" -c -O3 -lineinfo -arch="$2" "$f" -o "$o.o" >"$o.compile.log" 2>&1; then
            "$NVCC" -arch="$2" -cudart static "$3/harness.o" "$o.o" -o "$o.prog" -lcublas -ldl \
                >"$o.link.log" 2>&1 || true
        fi' _ "$OUT/$lab" "$ARCH" "$B"
    for b in "$B"/baseline-*; do
        [ -x "$b" ] && cp "$b" "$OUT/$lab/obj/$(basename "$b").prog"
    done

    for p in "$OUT/$lab"/obj/*.prog; do
        [ -x "$p" ] || continue
        n=$(basename "$p" .prog)
        d="$OUT/$lab/$n"
        mkdir -p "$d"
        # The inspector rejects these before they run: check them, time nothing.
        rejected=0
        head -1 "$ROOT/tests/gpu/solutions/$lab/$n.cu" 2>/dev/null | grep -q 'status=rejected' && rejected=1
        echo $rejected >"$d/rejected"
        timeout 300 "$p" check --seed "$SEED" --cases "$ALL" 3>"$d/check.chan" 2>"$d/check.err"
        echo $? >"$d/check.rc"
        # A crash ends the process: run the cases after it in a new one.
        if [ "$(cat "$d/check.rc")" = 3 ]; then
            done_cases=$(grep -a '^{"type":"case"' "$d/check.chan" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | paste -sd'|' -)
            rest=$(echo "$ALL" | tr , '\n' | grep -Ev "^($done_cases)\$" | paste -sd, -)
            [ -n "$rest" ] && timeout 300 "$p" check --seed "$SEED" --cases "$rest" 3>"$d/check2.chan" 2>>"$d/check.err"
        fi
        "$B/judge" --seed "$SEED" --channel "$d/check.chan" --cases "$ALL" >"$d/check.json" 2>"$d/judge.err"
        [ -f "$d/check2.chan" ] && "$B/judge" --seed "$SEED" --channel "$d/check2.chan" >"$d/check2.json" 2>>"$d/judge.err"
        if [ $rejected = 0 ] && ! grep -q '"passed":false' "$d/check.json" && { [ ! -f "$d/check2.json" ] || ! grep -q '"passed":false' "$d/check2.json"; }; then
            timeout 300 "$p" time --seed "$SEED" --case "$TCASE" --max-ms "$MAX_MS" 3>"$d/time.chan" 2>"$d/time.err"
            echo $? >"$d/time.rc"
            "$B/judge" --seed "$SEED" --channel "$d/time.chan" >"$d/time.json" 2>>"$d/judge.err"
        fi
    done
    if [ -x "$B/cpu-baseline" ]; then
        "$B/cpu-baseline" --case "$TCASE" --seed "$SEED" --reps 5 >"$OUT/$lab/cpu.json" 2>&1
    fi
    if [ "$SANITIZE" = 1 ] && [ -x "$SANITIZER" ]; then
        for p in "$OUT/$lab"/obj/*.prog; do
            n=$(basename "$p" .prog)
            [ "$(cat "$OUT/$lab/$n/rejected" 2>/dev/null)" = 0 ] && echo "$p"
        done | grep -v baseline- | xargs -P 4 -I{} sh -c '
            p={}; n=$(basename "$p" .prog); d="$1/$n"
            for tool in memcheck racecheck; do
                timeout 240 "$2" --tool $tool --error-exitcode 99 "$p" check --seed "$3" \
                    --cases "$4" --no-guard 3>/dev/null >"$d/$tool.log" 2>&1
                echo $? >"$d/$tool.rc"
            done' _ "$OUT/$lab" "$SANITIZER" "$SEED" "$SCASE"
    fi
done

# The table.
if ! command -v python3 >/dev/null 2>&1; then
    for f in "$OUT"/*/*/check.json "$OUT"/*/*/time.json; do echo "$f"; cat "$f"; done
    exit 0
fi
python3 - "$OUT" $LABS <<'EOF' | tee "$OUT/table.txt"
import json, os, sys, glob
out, labs = sys.argv[1], sys.argv[2:]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
for lab in labs:
    cpu = load(os.path.join(out, lab, "cpu.json"))
    base = {}
    print("== %s%s" % (lab, "  cpu-baseline median %.1f ms" % cpu["median_ms"] if cpu else ""))
    rows = []
    for d in sorted(glob.glob(os.path.join(out, lab, "*", "check.rc"))):
        d = os.path.dirname(d); n = os.path.basename(d)
        chk = load(os.path.join(d, "check.json")) or {}
        chk2 = load(os.path.join(d, "check2.json")) or {}
        cases = {c["name"]: c for c in chk.get("cases", [])}
        cases.update({c["name"]: c for c in chk2.get("cases", [])})
        tm = (load(os.path.join(d, "time.json")) or {}).get("timing")
        san = []
        for tool in ("memcheck", "racecheck"):
            try:
                rc = open(os.path.join(d, tool + ".rc")).read().strip()
                san.append(tool[0] + ("+" if rc == "0" else "!" + rc))
            except OSError:
                pass
        rc = open(os.path.join(d, "check.rc")).read().strip()
        verdict = "".join("P" if c.get("passed") else "F" for c in cases.values())
        worst = max([c.get("max_rel_err") or 0 for c in cases.values() if c.get("passed")] or [0])
        first_fail = next((c["name"] + ": " + c["message"] for c in cases.values() if not c.get("passed")), "")
        t = ""
        if tm:
            t = "%.3f ms bw %.2f gf %.0f rel %.3f n %d%s" % (tm["median_ms"], tm.get("bandwidth_share") or 0,
                tm.get("gflops") or 0, tm["rel_err"], tm["n"], " FLAG: " + tm["flag_reason"] if tm["flagged"] else "")
            if n.startswith("baseline-"):
                base[n] = tm["median_ms"]
        rows.append((n, rc, verdict, worst, " ".join(san), t, first_fail))
    for n, rc, verdict, worst, san, t, ff in rows:
        print("%-20s rc=%s %-10s worst_ok_rel=%.2e %-10s %s" % (n, rc, verdict, worst, san, t))
        if ff:
            print("%20s   %s" % ("", ff[:230]))
    if base:
        print("baselines:", ", ".join("%s %.3f ms" % kv for kv in sorted(base.items())))
EOF

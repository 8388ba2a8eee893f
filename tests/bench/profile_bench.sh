#!/bin/sh
# Profiling benchmark on the GPU host (docs/runner.md "Profiling hints"): the
# latency that profiling adds to one graded submission. Each file is graded
# BENCH_N times (default 10) by `cugrade-runner grade` with profiling on and
# BENCH_N_OFF times (default 3) with it off (CUGRADE_NCU=none), after an
# untimed warm-up run that builds the lab; prints a
# table: the profile phase's seconds (median, min, max: the phase is serial,
# so this is the added latency), the whole job's median with and without it,
# and the hints seen.
#   BENCH_FILES="matmul/fast reduction/fast" sh tests/bench/profile_bench.sh [BUILD]
# Binaries from dist/ when present (as tests/gpu/run.sh), else BUILD/.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 2
if [ "${BENCH_FORCE:-0}" != 1 ] && ! (env -u LD_LIBRARY_PATH nvidia-smi -L 2>/dev/null | grep -q '^GPU'); then
    echo "profile_bench: no GPU on this host (nvidia-smi -L): skipped (run it through the device tool)"
    exit 0
fi
N=${BENCH_N:-10}; NOFF=${BENCH_N_OFF:-3}
FILES=${BENCH_FILES:-"matmul/fast reduction/fast embedding/fast"}
T=$(mktemp -d /tmp/cugrade-pbench.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
if [ -x "$ROOT/dist/cugrade-runner" ]; then
    # The sandbox's uid must reach the binaries, the tree and the work dirs.
    mkdir -p "$T/d" "$T/r" && cp -r "$ROOT/dist/." "$T/d/"
    export LD_LIBRARY_PATH="$T/d/lib" CUGRADE_BWRAP="$T/d/bwrap"
    RUNNER="$T/d/cugrade-runner"
else
    mkdir -p "$T/r"; RUNNER="$ROOT/$BUILD/cugrade-runner"
fi
cp -r labs reference rubrics tests "$T/r/"
mkdir -p "$T/w"; chmod -R go+rX "$T"; chmod 755 "$T" "$T/r" "$T/w"
CACHE=${BENCH_CACHE:-$T/w/cache}   # a cache of built labs to reuse (BENCH_CACHE)
export PATH="/usr/local/cuda/bin:$PATH"
START=$(date +%s)
# BENCH_SECONDS (0: none): no new run starts past it; the table then counts
# what ran (its "runs" column says how many).
BUDGET=${BENCH_SECONDS:-0}
for f in $FILES; do
    lab=${f%%/*}
    # An untimed first run builds the lab and measures its baselines.
    CUGRADE_NCU=none timeout 300 "$RUNNER" grade --root "$T/r" --lab "$lab" \
        --file "$T/r/tests/gpu/solutions/$f.cu" --gpu 0 --cache "$CACHE" --work "$T/w/work" \
        > /dev/null 2>"$T/err" || { echo "profile_bench: $f warm-up failed:"; tail -3 "$T/err"; }
    i=0
    while [ $i -lt $((N + NOFF)) ]; do
        [ "$BUDGET" -gt 0 ] && [ $(($(date +%s) - START)) -ge "$BUDGET" ] && break
        if [ $i -lt $NOFF ]; then mode=off; ncu=none; else mode=on; ncu=${CUGRADE_NCU:-}; fi
        CUGRADE_NCU=$ncu timeout 300 "$RUNNER" grade --root "$T/r" --lab "$lab" \
            --file "$T/r/tests/gpu/solutions/$f.cu" --gpu 0 --cache "$CACHE" \
            --work "$T/w/work" > "$T/$lab.$mode.$i.json" 2>"$T/err" ||
            { echo "profile_bench: $f run $i failed:"; tail -3 "$T/err"; }
        i=$((i + 1))
    done
done
python3 - "$T" $FILES <<'PY'
import glob, json, statistics as st, sys
t = sys.argv[1]
def load(lab, mode):
    out = []
    for p in sorted(glob.glob(f"{t}/{lab}.{mode}.*.json")):
        try:
            out.append(json.load(open(p))["result"]["cugrade"])
        except (ValueError, KeyError):
            pass
    return out
print("| file | runs | profile phase s: median (min, max) | job s with | job s without | added s (medians) | status | hints |")
print("|---|---|---|---|---|---|---|---|")
for f in sys.argv[2:]:
    lab = f.split("/")[0]
    on, off = load(lab, "on"), load(lab, "off")
    ph = [c["phases"].get("profile", 0.0) for c in on if c.get("phases")]
    ton = [c["phases"]["total"] for c in on if c.get("phases")]
    toff = [c["phases"]["total"] for c in off if c.get("phases")]
    prof = [c.get("profile") or {} for c in on]
    status = sorted({p.get("status", "none") for p in prof})
    hints = sorted({h["id"] for p in prof for h in p.get("hints") or []})
    if not ph or not ton:
        print(f"| {f} | 0 | - | - | - | - | - | - |")
        continue
    mon, moff = st.median(ton), (st.median(toff) if toff else float("nan"))
    print(f"| {f} | {len(ph)}+{len(toff)} | {st.median(ph):.2f} ({min(ph):.2f}, {max(ph):.2f}) | "
          f"{mon:.2f} | {moff:.2f} | {mon - moff:.2f} | {','.join(status)} | {','.join(hints) or '-'} |")
PY

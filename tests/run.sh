#!/bin/sh
# Run every test that needs no GPU and print one summary line last:
# "N passed, N failed, N skipped".
#
# A suite is either a unit-test binary under $BUILD/tests/unit/, or an
# executable file tests/<area>/*.t (any language, by its #! line). Every suite
# prints TAP-style lines: "ok - name" or "not ok - name" (numbers optional).
# "ok - name # SKIP why" is counted as skipped, never as passed. A suite that
# exits non-zero, or prints neither a result nor a skip, counts as one failure.
#
#   sh tests/run.sh [BUILD]            all suites
#   ONLY=server sh tests/run.sh        only suites whose path contains "server"
#   JOBS=1 sh tests/run.sh             one suite at a time (default: 2 x cores)
#
# Suites run side by side, JOBS at a time (most of a suite's time is spent
# waiting: on a server, a lease, a sandboxed child, a browser), the longest
# first: tests/suite-times holds each suite's seconds from a serial run
# ($BUILD/test-logs/suite-times, written by every run, takes precedence; a
# suite in neither counts as 30 s). Each suite prints its line when it ends;
# the counts are summed from the suites' logs ($BUILD/test-logs/<suite>.log)
# once all have ended. A suite that cannot share the machine says so in a
# comment line of its own (`#` or `//`) near its top:
#   suite: alone          runs with no other suite running: it loads every
#                         core itself, or bounds waits to fractions of a
#                         second. The alone suites run first, one by one.
#   suite: quiet          runs with no other suite but idle ones in the
#                         foreground: it bounds a latency or the seconds of
#                         a run, which another suite's CPU work would
#                         stretch. The quiet suites run one by one after the
#                         alone ones, the pool beside them in the
#                         background (below).
#   suite: idle           waits nearly all its time (a server's timeouts,
#                         locks held for seconds) and uses almost no CPU
#                         (more than IDLE_CPU_MAX, 8 s, fails it): runs in
#                         IDLE_JOBS lanes of its own (default 3; 0, the
#                         default when JOBS=1: in the pool), started after
#                         the alone suites, beside the quiet suites and
#                         then the pool.
#   suite: serial NAME    runs one after another with the other suites that
#                         name the same NAME (one slot of the pool, beside
#                         the rest): they watch one host-wide resource,
#                         e.g. processes found by name in /proc.
# The rest run in the pool, JOBS at a time. Where the host lets us make a
# CPU group (root, cgroup v1's cpu controller), the pool starts
# when the alone suites end, in a group of CPU weight 2 against the
# others' 1024: it runs on what the quiet suites leave idle (they used
# 0.4-0.8 of the 2 cores) and yields the CPU to them at once; when the last
# quiet suite ends the group gets the common weight. Elsewhere, or with
# BG_POOL=0, the pool starts after the quiet suites.
#
# SANITIZER_LOG_DIR (set by `make asan`, where ASAN_OPTIONS and UBSAN_OPTIONS
# have log_path=$SANITIZER_LOG_DIR/report): every process of the ASan+UBSan
# build -- servers, runners, tools, unit tests -- writes its sanitizer
# reports there, also those whose suite never reads their stderr (a runner
# logging to a temporary file). Each suite runs with its own folder there
# ($SANITIZER_LOG_DIR/<suite>/, log_path rewritten to it), inherited by
# every process it starts, so a report fails the suite that caused it even
# with others running beside it; it is moved to
# $BUILD/test-logs/<suite>.sanitizer/. A report written after its suite
# ended (a process it left behind) fails that suite at the end of the run.
if [ "${1:-}" = --chain ]; then CHAIN=1; shift; else CHAIN=""; fi
BUILD=${CUGRADE_BUILD:-build}
[ -z "$CHAIN" ] && BUILD=${1:-build}
export CUGRADE_BUILD="$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")"
export CUGRADE_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$CUGRADE_ROOT" || exit 2
# The suites' nvcc cache (tests/tools/nvcc_cached.py): for the builds a
# suite needs but does not check (the fake lab's), shared by all suites.
export CUGRADE_TEST_NVCC="$CUGRADE_ROOT/tests/tools/nvcc_cached.py"
export CUGRADE_TEST_NVCC_CACHE="$CUGRADE_BUILD/nvcc-cache"
# The suites' python3 is Debian's, /usr/bin/python3: the one
# deploy/install-deps.sh installs the test packages into (python3-numba,
# ...), whichever python3 comes first on PATH. A version manager's shim
# there (pyenv's: bash, 0.45 s of CPU a start) ran every `#!/usr/bin/env
# python3` -- every suite in Python, every python3 a suite starts --
# through itself. The pool's slots (--chain) inherit the PATH.
if [ -z "$CHAIN" ] && [ -x /usr/bin/python3 ]; then
    mkdir -p "$CUGRADE_BUILD/test-bin"
    ln -sf /usr/bin/python3 "$CUGRADE_BUILD/test-bin/python3"
    export PATH="$CUGRADE_BUILD/test-bin:$PATH"
fi
# The runner compiles a student's file at nice 10 (CUGRADE_COMPILE_NICE),
# in a session (autogroup) of that nice: on a GPU host, a share of the CPUs
# that yields to the processes feeding the GPU. Beside three other suites
# on 2 cores (chromium, the CUDA simulator) that share is a few percent: a
# correct file's compile waited 33.6 s for a CPU and ran 2.9 s in its 60 s
# limit, three times over (runner/compile_inspect.t, 699 s). A system_error,
# rightly, and not what a suite about inspection asks. The suites compile
# at the runner's priority; those about priorities set it themselves.
: "${CUGRADE_COMPILE_NICE:=0}"
export CUGRADE_COMPILE_NICE
LOGDIR="$CUGRADE_BUILD/test-logs"
mkdir -p "$LOGDIR"
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}

# run_suite NAME: run one suite (unit/X: the binary $BUILD/tests/unit/X,
# else tests/NAME), count its TAP lines into $RUN_RESULTS/<suite>.res
# ("passed failed skipped seconds") and print its line (and its skips and
# failures) in one piece.
run_suite() {
    name=$1
    case "$name" in unit/*) set -- "$CUGRADE_BUILD/tests/$name" ;; *) set -- "./tests/$name" ;; esac
    flat=$(echo "$name" | tr '/' '_')
    log="$LOGDIR/$flat.log"
    out="$RUN_RESULTS/$flat.out"
    if [ -n "${SANITIZER_LOG_DIR:-}" ]; then
        sdir="$SANITIZER_LOG_DIR/$flat"
        rm -rf "$sdir"; mkdir -p "$sdir"
        set -- env SANITIZER_LOG_DIR="$sdir" \
            ASAN_OPTIONS="$(printf '%s' "${ASAN_OPTIONS:-}" | sed "s|log_path=[^:]*|log_path=$sdir/report|")" \
            UBSAN_OPTIONS="$(printf '%s' "${UBSAN_OPTIONS:-}" | sed "s|log_path=[^:]*|log_path=$sdir/report|")" "$@"
    fi
    start=$(date +%s)
    times >"$RUN_RESULTS/$flat.cpu"
    timeout -k 10 "$SUITE_TIMEOUT" "$@" >"$log" 2>&1
    rc=$?
    times >>"$RUN_RESULTS/$flat.cpu"
    s=$(grep -E '^ok( [0-9]+)?( -|$)' "$log" | grep -ciE '#[[:space:]]*skip')
    p=$(( $(grep -cE '^ok( [0-9]+)?( -|$)' "$log") - s ))
    f=$(grep -cE '^not ok( [0-9]+)?( -|$)' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1; echo "not ok - $name exited with status $rc" >>"$log"
    fi
    if [ -n "${SANITIZER_LOG_DIR:-}" ] && [ -n "$(ls -A "$sdir" 2>/dev/null)" ]; then
        san="$log.sanitizer"
        mkdir -p "$san" && mv "$sdir"/* "$san"/
        for r in "$san"/*; do
            f=$((f + 1))
            echo "not ok - $name: no sanitizer report ($(basename "$r"): $(grep -m1 -E 'ERROR|runtime error' "$r"))" >>"$log"
            sed -n '1,25p' "$r" | sed 's/^/    | /' >>"$log"
        done
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
        f=1; echo "not ok - $name printed no results" >>"$log"
    fi
    secs=$(( $(date +%s) - start ))
    # Its CPU seconds (user + sys of the processes it waited for, the
    # sandboxes' included): the slot's children's times, after less before.
    cpu=$(awk 'function s(x) { split(x, a, "m"); return a[1] * 60 + a[2] + 0 }
        NR == 2 { b = s($1) + s($2) } NR == 4 { printf "%.1f", s($1) + s($2) - b }' "$RUN_RESULTS/$flat.cpu")
    # An idle suite runs beside the quiet ones on the word that it uses
    # almost no CPU: one that uses more than IDLE_CPU_MAX seconds fails
    # (CPU seconds, not a share of its wall time, which a busy host
    # stretches).
    if [ -n "${IDLE_LANE:-}" ] && awk -v c="${cpu:-0}" -v m="$IDLE_CPU_MAX" 'BEGIN { exit !(c > m) }'; then
        f=$((f + 1))
        echo "not ok - $name is a \`suite: idle\` but used ${cpu} s of CPU (at most $IDLE_CPU_MAX): make it a pool suite" >>"$log"
    fi
    echo "$p $f $s $secs ${cpu:-0} $((start - ${RUN_T0:-$start}))" >"$RUN_RESULTS/$flat.res"
    {
        printf '%-44s %4d passed %3d failed %3d skipped  (%ss)\n' "$name" "$p" "$f" "$s" "$secs"
        if [ "$s" -gt 0 ]; then
            grep -iE '^ok.*#[[:space:]]*skip' "$log" | sed 's/^/    /'
        fi
        if [ "$f" -gt 0 ]; then
            grep -E '^not ok' "$log" | sed 's/^/    /'
            echo "    --- last lines of $log:"; tail -n 15 "$log" | sed 's/^/    | /'
        fi
    } >"$out"
    flock "$RUN_RESULTS/print.lock" cat "$out"
}

# One slot of the pool (xargs below): the named suites, one after another.
if [ -n "$CHAIN" ]; then
    for n; do run_suite "$n"; done
    exit 0
fi

RUN_RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/cugrade-run.XXXXXX") || exit 2
RUN_T0=$(date +%s)
export RUN_RESULTS RUN_T0
# The pool's background CPU group (made below), removed at the end: it goes
# once its last process has (a suite's leftover keeps it).
bg=""
bg_end() {
    [ -n "$bg" ] || return 0
    for _ in 1 2 3 4 5; do rmdir "$bg" 2>/dev/null && return 0; sleep 1; done
    echo "tests/run.sh: $bg still has processes: $(cat "$bg/cgroup.procs" | tr '\n' ' ')" >&2
}
trap 'rm -rf "$RUN_RESULTS"; bg_end' EXIT
JOBS=${JOBS:-$(( $(nproc 2>/dev/null || echo 1) * 2 ))}
# The idle suites' lanes; 0 (the default when JOBS=1): they join the pool.
IDLE_JOBS=${IDLE_JOBS:-$([ "$JOBS" -le 1 ] && echo 0 || echo 3)}
# An idle suite's CPU seconds at most (the ten use 0.1-1.2 s in 5-139 s;
# room for an ASan build's).
IDLE_CPU_MAX=${IDLE_CPU_MAX:-8}
export IDLE_CPU_MAX

# Every suite as "NAME CLASS": CLASS is "-", "alone", "quiet", "idle" or
# "serial:NAME".
list() {
    for t in "$CUGRADE_BUILD"/tests/unit/*; do
        [ -x "$t" ] && [ -f "$t" ] && case "$t" in *.o|*.d) continue;; esac && echo "unit/$(basename "$t") -"
    done
    for t in tests/*/*.t; do
        [ -f "$t" ] || continue
        c=$(sed -n '1,40{s,^[[:space:]]*\(#\|//\)[[:space:]]*suite:[[:space:]]*\(alone\|quiet\|idle\|serial[[:space:]][[:space:]]*[A-Za-z0-9_-]*\).*,\2,p}' "$t" |
            head -n 1 | tr -s ' \t' ':')
        echo "${t#tests/} ${c:--}"
    done
}
suites=$(list | while read -r n c; do case "$n" in *"${ONLY:-}"*) echo "$n $c" ;; esac; done)

# The slots of the suites of class CLASS ("-": the pool's, serial groups
# included; "idle"), longest first: one line per slot, the suites it runs.
# A serial group is one slot, its suites' seconds summed.
echo "$suites" >"$RUN_RESULTS/suites"
slots() {
    awk -v list="$RUN_RESULTS/suites" -v want="$1" -v lanes="$IDLE_JOBS" '
    FILENAME != list { sec[$1] = $2; next }
    $1 == "" || $2 == "alone" || $2 == "quiet" { next }
    $2 == "idle" && lanes == 0 { $2 = "-" }
    (want == "idle") != ($2 == "idle") { next }
    { t = ($1 in sec) ? sec[$1] : 30
      k = ($2 == "-" || $2 == "idle") ? $1 : $2
      if (!(k in est)) order[n++] = k
      est[k] += t; who[k] = who[k] " " $1 }
    END { for (i = 0; i < n; i++) print est[order[i]] who[order[i]] }' \
    $(for f in tests/suite-times "$LOGDIR/suite-times"; do [ -f "$f" ] && echo "$f"; done) "$RUN_RESULTS/suites" |
    sort -k1,1nr | cut -d' ' -f2-
}
pool=$(slots -)
idle=$(slots idle)

# The background CPU group (see the header), or "" where there is none.
# Under this process's own group there (a run inside a suite nests).
BG_CPU="/sys/fs/cgroup/cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/self/cgroup 2>/dev/null | sed 's,/$,,')"
if [ "${BG_POOL:-1}" != 0 ] && [ "$JOBS" -gt 1 ] && [ -n "$pool" ] &&
    [ -n "$(echo "$suites" | awk '$2 == "quiet"')" ] && [ -w "$BG_CPU/cgroup.procs" ] &&
    mkdir "$BG_CPU/cugrade-tests-$$" 2>/dev/null; then
    bg="$BG_CPU/cugrade-tests-$$"
    # its weight, and a process moved into it (one that ends at once)
    { echo 2 >"$bg/cpu.shares" && sh -c 'echo $$ >"$1/cgroup.procs"' sh "$bg"; } 2>/dev/null ||
        { rmdir "$bg"; bg=""; }
fi

for n in $(echo "$suites" | awk '$2 == "alone" { print $1 }'); do
    run_suite "$n"
done
idle_pid=""
if [ -n "$idle" ]; then
    echo "$idle" | IDLE_LANE=1 xargs -L 1 -P "$IDLE_JOBS" sh "$CUGRADE_ROOT/tests/run.sh" --chain &
    idle_pid=$!
fi
pool_pid=""
if [ -n "$bg" ]; then
    echo "$pool" | sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$bg" \
        xargs -L 1 -P "$JOBS" sh "$CUGRADE_ROOT/tests/run.sh" --chain &
    pool_pid=$!
fi
for n in $(echo "$suites" | awk '$2 == "quiet" { print $1 }'); do
    run_suite "$n"
done
if [ -n "$pool_pid" ]; then
    echo 1024 >"$bg/cpu.shares"
    wait "$pool_pid"
elif [ -n "$pool" ]; then
    echo "$pool" | xargs -L 1 -P "$JOBS" sh "$CUGRADE_ROOT/tests/run.sh" --chain
fi
[ -n "$idle_pid" ] && wait "$idle_pid"

# The sum, in the suites' order; the seconds go to $LOGDIR/suite-times.
passed=0; failed=0; skipped=0; failures=""
for n in $(echo "$suites" | awk '{ print $1 }'); do
    flat=$(echo "$n" | tr '/' '_')
    if [ -n "${SANITIZER_LOG_DIR:-}" ] && [ -n "$(ls -A "$SANITIZER_LOG_DIR/$flat" 2>/dev/null)" ]; then
        # written after its suite ended: a process it left behind
        for r in "$SANITIZER_LOG_DIR/$flat"/*; do
            echo "not ok - $n: no sanitizer report after the suite ended ($(basename "$r"): $(grep -m1 -E 'ERROR|runtime error' "$r"))" |
                tee -a "$LOGDIR/$flat.log"
        done
        mkdir -p "$LOGDIR/$flat.log.sanitizer" && mv "$SANITIZER_LOG_DIR/$flat"/* "$LOGDIR/$flat.log.sanitizer"/
        failed=$((failed + 1)); failures="$failures $n"
    fi
    if [ ! -f "$RUN_RESULTS/$flat.res" ]; then
        echo "not ok - $n did not run to its end (its slot was killed)" | tee -a "$LOGDIR/$flat.log"
        failed=$((failed + 1)); failures="$failures $n"; continue
    fi
    read -r p f s secs cpu at <"$RUN_RESULTS/$flat.res"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" -gt 0 ] && case " $failures " in *" $n "*) ;; *) failures="$failures $n" ;; esac
    echo "$n $secs" >>"$RUN_RESULTS/times"
    echo "$n $cpu $secs $at" >>"$RUN_RESULTS/cpu"
done
if [ -n "${SANITIZER_LOG_DIR:-}" ]; then
    for r in $(find "$SANITIZER_LOG_DIR" -maxdepth 1 -type f 2>/dev/null); do
        echo "not ok - no sanitizer report outside a suite ($r: $(grep -m1 -E 'ERROR|runtime error' "$r"))"
        failed=$((failed + 1)); failures="$failures (none)"
    done
fi
if [ -f "$RUN_RESULTS/times" ]; then
    { [ -f "$LOGDIR/suite-times" ] && cat "$LOGDIR/suite-times"; cat "$RUN_RESULTS/times"; } |
        awk '{ t[$1] = $2 } END { for (n in t) print n, t[n] }' | sort >"$RUN_RESULTS/all-times"
    mv "$RUN_RESULTS/all-times" "$LOGDIR/suite-times"
    # This run's CPU seconds per suite, the most first: "NAME CPU WALL
    # START" (START: seconds after the first suite started).
    sort -k2,2nr "$RUN_RESULTS/cpu" >"$LOGDIR/suite-cpu"
fi

[ -n "$failures" ] && echo "failed suites:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

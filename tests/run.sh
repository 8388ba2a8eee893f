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
#
# SANITIZER_LOG_DIR (set by `make asan`, where ASAN_OPTIONS and UBSAN_OPTIONS
# have log_path=$SANITIZER_LOG_DIR/report): every process of the ASan+UBSan
# build -- servers, runners, tools, unit tests -- writes its sanitizer
# reports there, also those whose suite never reads their stderr (a runner
# logging to a temporary file). A report left there fails the suite that ran
# when it was written; it is moved to $BUILD/test-logs/<suite>.sanitizer/.
BUILD=${1:-build}
export CUGRADE_BUILD="$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")"
export CUGRADE_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$CUGRADE_ROOT" || exit 2
LOGDIR="$CUGRADE_BUILD/test-logs"
mkdir -p "$LOGDIR"
passed=0; failed=0; skipped=0; failures=""
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}

run_suite() {
    name=$1; shift
    case "$name" in *"${ONLY:-}"*) ;; *) return ;; esac
    log="$LOGDIR/$(echo "$name" | tr '/' '_').log"
    start=$(date +%s)
    timeout -k 10 "$SUITE_TIMEOUT" "$@" >"$log" 2>&1
    rc=$?
    s=$(grep -E '^ok( [0-9]+)?( -|$)' "$log" | grep -ciE '#[[:space:]]*skip')
    p=$(( $(grep -cE '^ok( [0-9]+)?( -|$)' "$log") - s ))
    f=$(grep -cE '^not ok( [0-9]+)?( -|$)' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1; echo "not ok - $name exited with status $rc" >>"$log"
    fi
    if [ -n "${SANITIZER_LOG_DIR:-}" ] && [ -n "$(ls -A "$SANITIZER_LOG_DIR" 2>/dev/null)" ]; then
        san="$log.sanitizer"
        mkdir -p "$san" && mv "$SANITIZER_LOG_DIR"/* "$san"/
        for r in "$san"/*; do
            f=$((f + 1))
            echo "not ok - $name: no sanitizer report ($(basename "$r"): $(grep -m1 -E 'ERROR|runtime error' "$r"))" >>"$log"
            sed -n '1,25p' "$r" | sed 's/^/    | /' >>"$log"
        done
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
        f=1; echo "not ok - $name printed no results" >>"$log"
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    printf '%-44s %4d passed %3d failed %3d skipped  (%ss)\n' "$name" "$p" "$f" "$s" "$(( $(date +%s) - start ))"
    if [ "$s" -gt 0 ]; then
        grep -iE '^ok.*#[[:space:]]*skip' "$log" | sed 's/^/    /'
    fi
    if [ "$f" -gt 0 ]; then
        grep -E '^not ok' "$log" | sed 's/^/    /'
        echo "    --- last lines of $log:"; tail -n 15 "$log" | sed 's/^/    | /'
        failures="$failures $name"
    fi
}

for t in "$CUGRADE_BUILD"/tests/unit/*; do
    [ -x "$t" ] && [ -f "$t" ] && case "$t" in *.o|*.d) continue;; esac && run_suite "unit/$(basename "$t")" "$t"
done
for t in tests/*/*.t; do
    [ -f "$t" ] && run_suite "${t#tests/}" "./$t"
done

[ -n "$failures" ] && echo "failed suites:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

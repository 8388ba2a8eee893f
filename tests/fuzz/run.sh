#!/bin/sh
# make fuzz: run every libFuzzer target (tests/fuzz/*.c, built in BUILD by
# `make fuzz-build`) for FUZZ_SECONDS each (default 60) and print one table:
#   target, runs, exec/s, corpus size, crashes
# Each target starts from its seed corpus (tests/fuzz/corpus/<target>/, read
# only) and from what earlier runs found (BUILD/fuzz/<target>/corpus/, where
# new inputs go). A crash, leak, timeout or out-of-memory leaves its input in
# BUILD/fuzz/<target>/artifacts/ and makes this script fail. To replay one:
#   BUILD/tests/fuzz/<target> BUILD/fuzz/<target>/artifacts/crash-...
#   sh tests/fuzz/run.sh [BUILD]
BUILD=${1:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
cd "$(dirname "$0")/../.." || exit 2
failed=0
printf '%-10s %12s %9s %8s %8s\n' target runs exec/s corpus crashes
for src in tests/fuzz/*.c; do
    t=$(basename "$src" .c)
    bin=$BUILD/tests/fuzz/$t
    dir=$BUILD/fuzz/$t
    if [ ! -x "$bin" ]; then
        echo "fuzz: $bin is missing: run make fuzz-build" >&2
        exit 2
    fi
    mkdir -p "$dir/corpus" "$dir/artifacts"
    # Artifacts of earlier runs were reported then; count this run's only.
    rm -f "$dir"/artifacts/*
    "$bin" -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" "tests/fuzz/corpus/$t" \
        >"$dir/log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -n 1 | tr -d '#')
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
    corpus=$(find "$dir/corpus" "tests/fuzz/corpus/$t" -type f | wc -l)
    crashes=$(find "$dir/artifacts" -type f | wc -l)
    printf '%-10s %12s %9s %8s %8s\n' "$t" "${runs:--}" "${speed:--}" "$corpus" "$crashes"
    if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
        failed=1
        echo "  $t failed (exit $rc); see $dir/log:" >&2
        grep -E 'ERROR|SUMMARY|Test unit written' "$dir/log" | head -n 5 | sed 's/^/    /' >&2
    fi
done
echo "(FUZZ_SECONDS=$SECONDS_EACH per target; corpus: seeds + inputs found so far)"
exit $failed

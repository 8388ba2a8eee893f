#!/bin/sh
# The fuzzers' smoke run for `make test`: every libFuzzer target
# (tests/fuzz/*.c) over its seed corpus and then SMOKE_RUNS runs in all
# (bounded by count, not by time; fixed seed), failing on any crash,
# sanitizer report, leak or timeout. The long runs are `make fuzz`.
cd "$(dirname "$0")/../.." || exit 2
RUNS=${SMOKE_RUNS:-4000}
BUILD=${FUZZ_BUILD:-build-fuzz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
if make --no-print-directory -s fuzz-build FUZZ_BUILD="$BUILD" >"$tmp/build.log" 2>&1; then
    echo "ok - the fuzz targets build (clang, libFuzzer, ASan+UBSan in $BUILD)"
else
    echo "not ok - the fuzz targets build (clang, libFuzzer, ASan+UBSan in $BUILD)"
    tail -n 20 "$tmp/build.log" | sed 's/^/# /'
    exit 1
fi
for src in tests/fuzz/*.c; do
    t=$(basename "$src" .c)
    seeds=$(find "tests/fuzz/corpus/$t" -type f 2>/dev/null | wc -l)
    if [ "$seeds" -eq 0 ]; then
        echo "not ok - fuzz/$t has a seed corpus in tests/fuzz/corpus/$t"
        continue
    fi
    mkdir -p "$tmp/$t/corpus" "$tmp/$t/artifacts"
    env -u ASAN_OPTIONS -u UBSAN_OPTIONS "$BUILD/tests/fuzz/$t" -runs="$RUNS" -seed=1 -timeout=25 -rss_limit_mb=2048 \
        -artifact_prefix="$tmp/$t/artifacts/" "$tmp/$t/corpus" "tests/fuzz/corpus/$t" \
        >"$tmp/$t/log" 2>&1
    rc=$?
    found=$(find "$tmp/$t/artifacts" -type f | wc -l)
    if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ] && grep -q "^Done $RUNS runs" "$tmp/$t/log"; then
        echo "ok - fuzz/$t: $seeds seeds and $RUNS runs, no crash, leak or timeout"
    else
        echo "not ok - fuzz/$t: $seeds seeds and $RUNS runs, no crash, leak or timeout (exit $rc)"
        grep -E 'ERROR|SUMMARY|Assertion|runtime error' "$tmp/$t/log" | head -n 8 | sed 's/^/# /'
        for a in "$tmp/$t/artifacts"/*; do
            [ -f "$a" ] && echo "# input: $(od -An -c "$a" | head -n 4 | tr -s ' ')"
        done
        n=$((n + 1))
    fi
done
[ "$n" -eq 0 ]

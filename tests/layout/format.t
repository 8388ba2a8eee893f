#!/bin/sh
# make format / make format-check (.clang-format, docs/contributing.md
# "Format") in a scratch git repository holding the tree's .clang-format:
#  - format-check passes when nothing changed since FORMAT_BASE;
#  - it fails on a badly formatted line added since, and prints the diff;
#  - make format fixes that line in place (and leaves the lines of before,
#    badly formatted as they are, alone); format-check passes again;
#  - the house rules: a json_array_foreach brace on its line, a long
#    message string never split, includes left in their order.
ROOT=${CUGRADE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
n=0; failed=0
check() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
if ! command -v git-clang-format >/dev/null 2>&1; then
    echo "not ok 1 - needs clang-format (make test-deps)"; exit 1
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2
git init -q . && git config user.email t@t && git config user.name t
cp "$ROOT/.clang-format" .
mkdir common
cat > common/x.c <<'C'
#include "x.h"
#include <stdio.h>
int old( int a ) { return a; }
C
git add -A && git commit -qm base
mk() { make -s -f "$ROOT/Makefile" BUILD="$T/build" "$@" 2>&1; }

out=$(mk format-check FORMAT_BASE=HEAD); rc=$?
check $rc "format-check passes with nothing changed since FORMAT_BASE"

cat >> common/x.c <<'C'
int count(json_t *arr)
{
    size_t i; json_t *v; int n=0;
    json_array_foreach(arr, i, v) {
        n++;
    }
    fprintf(stderr, "this message is long enough that it would run past the hundredth column if it were kept whole: %d\n", n);
    return n;
}
C
out=$(mk format-check FORMAT_BASE=HEAD); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q '^+    int n = 0;'
check $? "format-check fails on a badly formatted line added since, printing the diff"

mk format FORMAT_BASE=HEAD >/dev/null
grep -q '^    int n = 0;$' common/x.c
check $? "make format formats the added lines in place"
grep -q '^int old( int a ) { return a; }$' common/x.c
check $? "...and leaves the lines it did not change alone"
grep -q '^    json_array_foreach(arr, i, v) {$' common/x.c
check $? "...a json_array_foreach keeps its brace on its line (ForEachMacros)"
grep -q '"this message is long enough .* if it were kept whole: %d\\n",$' common/x.c
check $? "...a long string is never split"
[ "$(sed -n 1p common/x.c)" = '#include "x.h"' ]
check $? "...includes stay in their order"
out=$(mk format-check FORMAT_BASE=HEAD); rc=$?
check $rc "format-check passes once make format ran"
echo "1..$n"
[ $failed = 0 ]

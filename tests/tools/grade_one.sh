#!/bin/sh
# grade_one.sh - grade one file on a GPU host with the runner alone (no
# server), and print what its result says: status, message, output, each
# case's line, the program's own output (a Python owner's traceback, a
# harness's stderr), sanitizer findings, phases. For reading a verdict that
# a bench or make test-gpu only counted.
#
#   sh tests/tools/grade_one.sh FILE LAB      (from the checkout, after make dist)
#   env: OUT (where the result JSON and the runner's log go; default a
#        temporary folder), ARCH (default sm_90)
#
# The lab is built into OUT/cache on the first call (~20-40 s).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
f=${1:?usage: sh tests/tools/grade_one.sh FILE LAB}
lab=${2:?usage: sh tests/tools/grade_one.sh FILE LAB}
OUT=${OUT:-$(mktemp -d)}
. "$ROOT/tests/tools/dist_env.sh"
mkdir -p "$OUT/cache" "$OUT/work"
chmod 755 "$OUT" "$OUT/cache" "$OUT/work"   # the sandbox's uid must traverse them
name=$(basename "$f")
env $(echo "${CUGRADE_BIN_ENV:-}" | tr ';' ' ') "$CUGRADE_RUNNER_BIN" grade --root "$ROOT" \
    --lab "$lab" --file "$f" --cache "$OUT/cache" --work "$OUT/work" --arch "${ARCH:-sm_90}" \
    > "$OUT/$name.json" 2> "$OUT/$name.log"
echo "== $f: runner exit $? (result: $OUT/$name.json, log: $OUT/$name.log)"
python3 - "$OUT/$name.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("no result document: %s" % e)
r = d.get("result") or {}
c = r.get("cugrade") or {}
print("status:", d.get("status"), "| score:", r.get("score"), "| message:", r.get("status_message") or "")
print("output:", r.get("output") or "")
for t in r.get("tests") or []:
    print("  %-28s %s" % (t.get("name"), (t.get("output") or "")[:300].replace("\n", " | ")))
if c.get("program_output"):
    print("program output:\n" + c["program_output"][:3000])
for t in c.get("sanitizer") or []:
    for x in (t.get("findings") or [])[:5]:
        print("sanitizer %s: %s" % (t.get("tool"), (x.get("message") or "")[:300]))
print("phases:", json.dumps(c.get("phases")))
PY

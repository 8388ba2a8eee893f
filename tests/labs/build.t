#!/bin/sh
# The labs build here (nvcc, no GPU): build-lab.sh for all three labs, the
# committed cases.generated.h in sync with lab.json, the harness exporting
# nothing but main and its allocation ledger, the starter compiling and
# linking with it, and the judge surviving hostile channels without a GPU.
# (The test solutions: client/local_test.t, below.) TAP output.
ROOT=${CUGRADE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ -z "${NVCC:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
export NVCC
ARCH=${ARCH:-sm_90}
TMP=$(mktemp -d /tmp/cugrade-labs-build.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=$((fails + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else notok "$2"; fi; }

if ! "$NVCC" --version >/dev/null 2>&1; then
    notok "nvcc found ($NVCC)"
    exit 1
fi

for lab in embedding matmul reduction; do
    B="$TMP/$lab"
    sh "$ROOT/labs/build-lab.sh" "$lab" "$B" "$ARCH" >"$TMP/$lab.log" 2>&1
    rc=$?
    [ $rc = 0 ] || sed 's/^/# /' "$TMP/$lab.log" | tail -20
    check $rc "build-lab.sh $lab $ARCH"
    want="harness.o judge link.txt"
    for b in $(sed -n 's/.*"baselines": *\[\(.*\)\].*/\1/p' "$ROOT/labs/$lab/lab.json" | tr -d '"' | tr ',' ' '); do
        if [ "$b" = cpu ]; then want="$want cpu-baseline"; else want="$want baseline-$b"; fi
    done
    missing=""
    for f in $want; do [ -s "$B/$f" ] || missing="$missing $f"; done
    [ -z "$missing" ] || echo "# missing:$missing"
    check "$([ -z "$missing" ]; echo $?)" "$lab: built$(echo " $want" | sed 's/ /, /g; s/^,//')"
    diff -u "$ROOT/labs/$lab/cases.generated.h" "$B/cases.h" >"$TMP/$lab.diff" 2>&1
    rc=$?
    [ $rc = 0 ] || { echo "# run: python3 labs/common/gen-cases.py labs/$lab/lab.json > labs/$lab/cases.generated.h"; sed 's/^/# /' "$TMP/$lab.diff" | head -10; }
    check $rc "$lab: labs/$lab/cases.generated.h matches lab.json"
    # A student's helper named like a harness function must not collide:
    # main, and the --wrap targets of the student's CUDA allocators (the
    # harness's allocation ledger, runner/grade/compile.c), nothing else.
    exported=$(nm -g --defined-only "$B/harness.o" | awk '$2 ~ /[TDBR]/ {print $3}' | tr '\n' ' ')
    ledger="__wrap_cudaFree __wrap_cudaFreeAsync __wrap_cudaMalloc __wrap_cudaMallocAsync __wrap_cudaMallocManaged __wrap_cudaMallocPitch main "
    check "$([ "$exported" = "$ledger" ]; echo $?)" "$lab: harness.o exports only main and the allocation ledger's __wrap_ functions (got: $exported)"

    "$NVCC" -c -O3 -lineinfo -arch="$ARCH" "$ROOT/labs/$lab/starter.cu" -o "$B/starter.o" >"$B/starter.log" 2>&1 &&
        "$NVCC" -arch="$ARCH" -cudart static "$B/harness.o" "$B/starter.o" -o "$B/starter" >>"$B/starter.log" 2>&1
    rc=$?
    [ $rc = 0 ] || sed 's/^/# /' "$B/starter.log" | tail -5
    check $rc "$lab: starter.cu compiles and links with the harness"

    # The test solutions are not compiled here: client/local_test.t's
    # `cugrade test` compiles every one with the same command, inspects it
    # and links it with the lab's harness (compile_error and rejected where
    # their headers say), and make test-gpu grades each through the runner.
done

# The judge on hostile channels: no GPU is touched, no crash, valid JSON.
J="$TMP/reduction/judge"
judge_json() { # judge_json NAME CHANNEL-FILE EXPECTED-SUBSTRING [extra judge args]
    name=$1 chan=$2 want=$3
    shift 3
    "$J" --seed 1f "$@" --channel "$chan" >"$TMP/j.out" 2>"$TMP/j.err"
    rc=$?
    if [ $rc = 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/j.out" 2>/dev/null &&
        grep -qF -- "$want" "$TMP/j.out"; then
        ok "judge: $name"
    else
        echo "# rc=$rc out: $(head -c 400 "$TMP/j.out") err: $(head -c 200 "$TMP/j.err")"
        notok "judge: $name"
    fi
}
dev='{"type":"device","name":"G","cc":"9.0","sms":132,"copy_gbs":3000,"peak_fp32_gflops":60000}'
printf '%s\n{"type":"case","name":"1000","status":"launch_error","error":"invalid configuration argument","cause":"a block may have at most 1024 threads","fatal":false}\n{"type":"done"}\n' "$dev" >"$TMP/c1"
judge_json "a CUDA error fails the case with its cause" "$TMP/c1" 'CUDA error: invalid configuration argument. a block may have at most 1024 threads' --cases 1000
printf '{"type":"case","name":"1","status":"runtime_error","error":"x.cu:1: cudaMemcpy: invalid argument","error_name":"harness","cause":"after your code ran, the harness could not use its own buffers","fatal":true}\n' >"$TMP/c13"
judge_json "a harness failure after student code is blamed with its cause" "$TMP/c13" 'after your code ran, the harness could not use its own buffers (x.cu:1'
judge_json "a requested case with no record fails" "$TMP/c1" 'no result: the program stopped before this case' --cases 1,1000
printf '%s\n{"type":"case","name":"1000","status":"ok","dtype":"f32","count":5,"bytes":20}\n0123456789abcdefghij{"type":"done"}\n' "$dev" >"$TMP/c2"
judge_json "a wrong output size fails the case" "$TMP/c2" 'wrong size'
printf '%s\n{"type":"case","name":"1000","status":"ok","dtype":"f32","count":1,"bytes":4}\nab' "$dev" >"$TMP/c3"
judge_json "a truncated payload fails the case" "$TMP/c3" 'stopped while its outputs were being written'
printf '{"type":"case","name":"../../etc/passwd","status":"ok","count":1,"bytes":4}\nabcd{"type":"done"}\n' >"$TMP/c4"
judge_json "an unknown case name is an error, not a case" "$TMP/c4" 'a record for a case this lab does not have'
head -c 3000000 /dev/zero | tr '\0' 'x' >"$TMP/c5"
judge_json "a 3 MB line without a newline" "$TMP/c5" 'the channel ends in the middle of a record'
head -c 100000 /dev/urandom >"$TMP/c6"
judge_json "random bytes" "$TMP/c6" '"complete":false'
printf '{"type":"case","name":"1000","name":"1","status":"ok"}\n' >"$TMP/c7"
judge_json "duplicate keys are malformed" "$TMP/c7" 'a malformed record'
printf '{"type":"case","name":"1000","status":{"ok":1}}\n' >"$TMP/c8"
judge_json "nested objects are malformed" "$TMP/c8" 'a malformed record'
printf '{"type":"timing","name":"2^28","samples_ms":[1.0,-5,1e300]}\n{"type":"done"}\n' >"$TMP/c9"
judge_json "impossible timing samples are refused" "$TMP/c9" 'a timing record with impossible samples'
printf '{"type":"timing","name":"2^28","samples_ms":[1.0,1.1,0.9],"seed2":"0"}\n{"type":"done"}\n' >"$TMP/c10"
judge_json "a timing record without its re-check is flagged" "$TMP/c10" '"recheck_passed":false,"flagged":true'
printf '%s\n{"type":"done"}\n{"type":"case","name":"1","status":"launch_error"}\n' "$dev" >"$TMP/c11"
judge_json "records after done are an error" "$TMP/c11" 'records after'
printf '{"type":"case","name":"1\\u0000x","status":"ok","count":1,"bytes":4}\nabcd' >"$TMP/c12"
judge_json "a NUL smuggled into a name is malformed" "$TMP/c12" 'a malformed record'
ln -s "$TMP/c1" "$TMP/link"
"$J" --seed 1 --channel "$TMP/link" >/dev/null 2>&1
check "$([ $? = 2 ]; echo $?)" "judge: refuses a channel that is a symlink (exit 2)"
"$J" --seed zz --channel "$TMP/c1" >/dev/null 2>&1
check "$([ $? = 2 ]; echo $?)" "judge: refuses a bad seed (exit 2)"

# Seeds: the server's 32 hex digits are taken whole, 33 are refused.
"$J" --seed 0123456789abcdef0123456789abcdef --channel "$TMP/c1" >/dev/null 2>&1
check "$([ $? = 0 ]; echo $?)" "judge: takes a 32-digit seed"
"$J" --seed 0123456789abcdef0123456789abcdef0 --channel "$TMP/c1" >/dev/null 2>&1
check "$([ $? = 2 ]; echo $?)" "judge: refuses a 33-digit seed (exit 2)"
C="$TMP/reduction/cpu-baseline"
s1=$("$C" --case 1000 --reps 1 --seed 00000000000000000000000000000001 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sum"])')
s2=$("$C" --case 1000 --reps 1 --seed ffffffffffffffff0000000000000001 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sum"])')
s3=$("$C" --case 1000 --reps 1 --seed 1 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sum"])')
s4=$("$C" --case 1000 --reps 1 --seed 0000000000000001 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sum"])')
check "$([ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" != "$s2" ] && [ "$s3" = "$s4" ]; echo $?)" \
    "seeds: the high 64 bits of a 32-digit seed change the inputs; up to 16 digits the value is the seed ($s1 / $s2 / $s3)"
printf '%s\n{"type":"harness_error","message":"x"}\n' "$dev" >"$TMP/c14"
judge_json "a harness_error record is skipped, not an error" "$TMP/c14" '"errors":[]'

# The harness refuses to run without its channel (before any student code).
H="$TMP/reduction/baseline-naive"
"$H" check --seed 1 --cases 1000 3>&- >/dev/null 2>"$TMP/h.err"
rc=$?
check "$([ $rc = 2 ] && grep -q 'fd 3' "$TMP/h.err"; echo $?)" "harness: exits 2 when fd 3 is not open"
"$H" check --seed 1 --cases 1000,bogus 3>/dev/null 2>"$TMP/h.err"
check "$([ $? = 2 ] && grep -q 'unknown case "bogus"' "$TMP/h.err"; echo $?)" "harness: refuses an unknown case before running anything"
"$H" check --seed 1 --cases 1000,bogus 3>"$TMP/h.chan" >/dev/null 2>"$TMP/h.err"
check "$([ $? = 2 ] && grep -q '^{"type":"harness_error","message":"unknown case \\"bogus\\""}$' "$TMP/h.chan"; echo $?)" \
    "harness: claims its own failure with a harness_error record before exit 2"
"$H" check --seed 0123456789abcdef0123456789abcdef --cases 1000 3>"$TMP/h.chan" >/dev/null 2>"$TMP/h.err"
check "$(! grep -q -- '--seed' "$TMP/h.err"; echo $?)" "harness: takes a 32-digit seed"
"$H" check --seed 0123456789abcdef0123456789abcdef0 --cases 1000 3>"$TMP/h.chan" >/dev/null 2>"$TMP/h.err"
check "$([ $? = 2 ] && grep -q -- '--seed: 1 to 32' "$TMP/h.err" && grep -q harness_error "$TMP/h.chan"; echo $?)" "harness: refuses a 33-digit seed (exit 2, harness_error)"
[ $fails = 0 ]

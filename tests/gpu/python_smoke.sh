#!/bin/sh
# A quick look at the Python path on a GPU host, without the server: each
# tests/gpu/solutions-py/reduction/<name>.py graded by `cugrade-runner grade`
# (from dist/: run `make dist` first), one summary per file. Results and
# stderr go to $OUT (or /tmp).
#   FILES="syntax_error fast_numba cupy_sum cached no_bounds" sh tests/gpu/python_smoke.sh
# LAB=matmul for another lab's solutions; RUBRIC=path for another rubric
# (e.g. one without speed lines, to skip the timing run).
OUT=${OUT:-/tmp}; FILES=${FILES:-"syntax_error fast_numba cupy_sum"}; LAB=${LAB:-reduction}
set -u
echo "== env"; command -v python3; readlink -f "$(command -v python3)"; python3 -c "import sys,numpy,cupy;print(sys.version.split()[0],'numpy',numpy.__version__,'cupy',cupy.__version__)" 2>&1 | tail -1
python3 -c "import numpy as np; np.row_stack=np.vstack; import numba, numba.cuda; print('numba', numba.__version__)" 2>&1 | tail -1
P=$(command -v python3); V=$(dirname "$(dirname "$P")")
# a venv's python3 outside /usr is bound with its venv (CUGRADE_PYTHON's
# prefix); another python3 outside /usr is not one the sandbox can run
if [ -f "$V/pyvenv.cfg" ]; then export CUGRADE_PYTHON=$P
else case $P in /usr/*) export CUGRADE_PYTHON=$P ;; esac; fi
D=/tmp/cgd; R=/tmp/cgroot; W=/tmp/cgw; mkdir -p $D $R $W; cp -r dist/. $D/; cp -r labs reference rubrics tests $R/; chmod -R go+rX $D $R; chmod 755 $D $R $W
export LD_LIBRARY_PATH=$D/lib CUGRADE_BWRAP=$D/bwrap PATH=/usr/local/cuda/bin:$PATH
for f in ${FILES}; do
  s=$(date +%s.%N)
  timeout 300 $D/cugrade-runner grade --root $R --lab $LAB ${RUBRIC:+--rubric $RUBRIC} --file $R/tests/gpu/solutions-py/$LAB/$f.py --gpu 0 --cache $W/cache --work $W/work > $OUT/$f.json 2>$OUT/$f.err
  echo "== $f rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s"
  python3 - $OUT/$f.json <<'PY'
import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception as e: print("unparsable", e); sys.exit()
r=d["result"]; cg=r.get("cugrade",{})
print(d["status"], r.get("score"), "/", r.get("max_score"), "|", r.get("output","")[:200])
for c in cg.get("cases",[]): print("  case", c["name"], c["passed"], (c.get("message") or "")[:160])
t=cg.get("timing") or {}
print("  timing", {k:t.get(k) for k in ("student_ms","speedup","samples","rel_err","flagged","flag_reason","recheck_passed","floor_ms")})
print("  speed", [(s.get("metric"), s.get("value"), s.get("tier")) for s in cg.get("speed",[])])
for s in cg.get("sanitizer", []):
    print("  sanitizer", s.get("tool"), "clean" if s.get("clean") else "ran" if s.get("ran") else "not run",
          "runner_problem" if s.get("runner_problem") else "", (s.get("note") or "")[:200],
          [(f.get("file"), f.get("line"), (f.get("message") or "")[:120]) for f in s.get("findings", [])[:3]])
print("  phases", {k: round(v,2) for k,v in (cg.get("phases") or {}).items()})
print("  log", (cg.get("compile_log") or "")[:300].replace("\n"," / "))
print("  out", (cg.get("program_output") or "")[:400].replace("\n"," / "))
PY
  grep -v "checking\|nvidia-smi" $OUT/$f.err | tail -4
done

#!/bin/sh
# The pipeline lab (Lab 1.3.4) on a GPU host, without the server: each
# tests/gpu/solutions-py/pipeline/<name>.py graded by `cugrade-runner grade`
# (from dist/: run `make dist` first), all at once (the runner's GPU lock
# serialises the timing runs), one summary per file: status, score, cases,
# the owner's NumPy median, the port's median, the speedup and its tier,
# against the file's `# expect:` line. Results and stderr go to $OUT (or /tmp).
#   sh tests/gpu/python_pipeline_smoke.sh
#   FILES="cupy_port float32" sh tests/gpu/python_pipeline_smoke.sh
OUT=${OUT:-/tmp}; FILES=${FILES:-"cupy_port cupy_numba_groupby float32 groupby_minlength host_roundtrip row_loop"}
set -u
echo "== env"; command -v python3; python3 -c "import sys,numpy,cupy;print(sys.version.split()[0],'numpy',numpy.__version__,'cupy',cupy.__version__)" 2>&1 | tail -1
P=$(command -v python3); V=$(dirname "$(dirname "$P")")
# a venv's python3 outside /usr is bound with its venv (CUGRADE_PYTHON's
# prefix); another python3 outside /usr is not one the sandbox can run
if [ -f "$V/pyvenv.cfg" ]; then export CUGRADE_PYTHON=$P
else case $P in /usr/*) export CUGRADE_PYTHON=$P ;; esac; fi
D=/tmp/cgpd; R=/tmp/cgproot; W=/tmp/cgpw; mkdir -p $D $R $W; cp -r dist/. $D/; cp -r labs reference rubrics tests $R/; chmod -R go+rX $D $R; chmod 755 $D $R $W
export LD_LIBRARY_PATH=$D/lib CUGRADE_BWRAP=$D/bwrap PATH=/usr/local/cuda/bin:$PATH
# The lab's build first (a judge script, no nvcc), so the parallel grades share it.
sh $R/labs/build-lab.sh pipeline $W/build-check sm_90 2>&1 | tail -1
for f in ${FILES}; do
  ( s=$(date +%s.%N)
    timeout ${GRADE_TIMEOUT:-600} $D/cugrade-runner grade --root $R --lab pipeline --file $R/tests/gpu/solutions-py/pipeline/$f.py --gpu 0 --cache $W/cache --work $W/work > $OUT/$f.json 2>$OUT/$f.err
    echo "$? $(python3 -c "import time;print(round(time.time()-$s,1))")" > $OUT/$f.rc ) &
done
wait
for f in ${FILES}; do
  echo "== $f rc/wall_s $(cat $OUT/$f.rc)"
  python3 - $OUT/$f.json $R/tests/gpu/solutions-py/pipeline/$f.py <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2].rsplit("/tests/", 1)[0] + "/tests/gpu")
from e2e import matches, observe, parse_expect
try: d = json.load(open(sys.argv[1]))
except Exception as e: print("unparsable", e); sys.exit()
r = d["result"]; cg = r.get("cugrade", {})
print(d["status"], r.get("score"), "/", r.get("max_score"), "|", (r.get("output") or "")[:200].replace("\n", " / "))
for c in cg.get("cases", []): print("  case", c["name"], c["passed"], (c.get("message") or "")[:200])
t = cg.get("timing") or {}
print("  numpy_ms", t.get("cpu_ms"), "port_ms", t.get("student_ms"), "samples", t.get("samples"), "flagged", t.get("flagged"), t.get("flag_reason") or "")
print("  speed", [(s.get("metric"), s.get("value"), s.get("tier")) for s in cg.get("speed", [])])
print("  phases", {k: round(v, 2) for k, v in (cg.get("phases") or {}).items()})
print("  log", (cg.get("compile_log") or "")[:300].replace("\n", " / "))
exp, obs = parse_expect(sys.argv[2]), observe(d)
print("  expect", "MATCH" if matches(exp, obs) else "MISMATCH", {k: v for k, v in exp.items() if k != "note"}, "observed", obs)
PY
  grep -v "checking\|nvidia-smi" $OUT/$f.err | tail -3
done

#!/bin/sh
# The profiling lab on a GPU host, without the server (run `make dist`
# first): tests/gpu/solutions-py/profiling/<name>.py graded by
# `cugrade-runner grade` (the owner, the trainers, the sandbox, the judge),
# then the owner alone on a few of them with the profiler's raw event counts
# dumped (what torch.profiler names the syncs and copies on this PyTorch).
# Everything goes to $OUT (or /tmp); stops starting new work after
# $BUDGET seconds (default 150).
#   GRADE="fast" DIRECT="item_only changed_results" sh tests/gpu/profiling_smoke.sh
OUT=${OUT:-/tmp}; GRADE=${GRADE:-fast}; DIRECT=${DIRECT:-"item_only changed_results"}
BUDGET=${BUDGET:-150}
set -u
T0=$(date +%s)
left() { [ $(( $(date +%s) - T0 )) -lt "$BUDGET" ]; }
echo "== env"; command -v python3
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name())" 2>&1 | tail -1
P=$(command -v python3); V=$(dirname "$(dirname "$P")")
# a venv's python3 outside /usr is bound with its venv (CUGRADE_PYTHON's
# prefix); another python3 outside /usr is not one the sandbox can run
if [ -f "$V/pyvenv.cfg" ]; then export CUGRADE_PYTHON=$P
else case $P in /usr/*) export CUGRADE_PYTHON=$P ;; esac; fi
D=/tmp/cgd; R=/tmp/cgroot; W=/tmp/cgw; mkdir -p $D $R $W; cp -r dist/. $D/; cp -r labs reference rubrics tests $R/; chmod -R go+rX $D $R; chmod 755 $D $R $W
export LD_LIBRARY_PATH=$D/lib CUGRADE_BWRAP=$D/bwrap PATH=/usr/local/cuda/bin:$PATH
for f in $GRADE; do
  left || { echo "== $f: skipped (budget)"; continue; }
  s=$(date +%s.%N)
  timeout 120 $D/cugrade-runner grade --root $R --lab profiling --file $R/tests/gpu/solutions-py/profiling/$f.py --gpu 0 --cache $W/cache --work $W/work > $OUT/$f.json 2>$OUT/$f.err
  echo "== grade $f rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s"
  python3 - $OUT/$f.json <<'PY'
import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception as e: print("unparsable", e); sys.exit()
r=d["result"]; cg=r.get("cugrade",{})
print(d["status"], r.get("score"), "/", r.get("max_score"))
for c in cg.get("cases",[]): print("  case", c["name"], c["passed"], (c.get("message") or "")[:400])
t=cg.get("timing") or {}
print("  timing", json.dumps(t)[:700])
print("  speed", [(s.get("metric"), s.get("value"), s.get("tier")) for s in cg.get("speed",[])])
print("  phases", {k: round(v,2) for k,v in (cg.get("phases") or {}).items()})
print("  out", (cg.get("program_output") or "")[:300].replace("\n"," / "))
PY
  grep -v "checking\|nvidia-smi" $OUT/$f.err | tail -4
done
for f in $DIRECT; do
  for mode in check time; do
    left || { echo "== $f $mode: skipped (budget)"; continue; }
    if [ $mode = check ]; then A="--cases results,syncs,copies --dump $OUT/$f.counts"; else A="--case results"; fi
    s=$(date +%s.%N)
    CUGRADE_SEED=0123456789abcdef timeout 60 python3 -I -B labs/profiling/lab.py profiling $mode $A \
      --file $PWD/tests/gpu/solutions-py/profiling/$f.py 3>$OUT/$f.$mode.chan >$OUT/$f.$mode.log 2>&1
    echo "== owner $mode $f rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s"
    cut -c1-600 $OUT/$f.$mode.chan; tail -3 $OUT/$f.$mode.log
  done
done
[ -f "$OUT/item_only.counts" ] && python3 - "$OUT/item_only.counts" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); c = d["counts"] or {}
    pick = lambda m: {k: v for k, v in m.items() if "ync" in k or "emcpy" in k or "item" in k or "scalar" in k or k == "aten::to"}
    print("==", d["what"], "cpu:", pick(c.get("cpu", {})), "dev:", pick(c.get("dev", {})))
PY
exit 0

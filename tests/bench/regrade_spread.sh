#!/bin/sh
# Regrade spread near a tier threshold (GPU host; docs/runner.md, "Noise and
# re-timing"). The naive reduction (tests/gpu/solutions/reduction/naive.cu)
# sits on the 100x-over-one-CPU-thread threshold on an H100. It is graded
# BENCH_N times (default 10) as the runner grades (the CPU baseline timed in
# the job or taken from the host's record, re-timing near a threshold up to
# 2 more rounds). The "before" mode without re-timing went with its switch,
# its question answered (docs/log/2026-11-28-history-runner.md, "Noise and
# re-timing"; docs/log/2026-12-01-switches.md).
# Prints one row per grade (value, 95% CI, tier, rounds, the timing phase's
# seconds, the student's and the CPU baseline's medians, the CPU batches
# behind the latter: 0 = the cached median) and a summary per mode: median, min-max spread, tiers seen and
# tier flips, and the latency the timing phase costs.
#   sh tests/bench/regrade_spread.sh [BUILD]
# Env: BENCH_N, BENCH_FILE (another .cu of the reduction lab), BENCH_LAB,
# BENCH_TIMEOUT (seconds for the whole bench; rows measured by then are
# printed). `cugrade-runner grade` with a rubric of the timed case alone and
# no sanitizers (what is measured is the timing, not the check).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 2
if [ "${BENCH_FORCE:-0}" != 1 ] && ! (env -u LD_LIBRARY_PATH nvidia-smi -L 2>/dev/null | grep -q '^GPU'); then
    echo "regrade_spread: no GPU on this host (nvidia-smi -L): skipped (run it through the device tool)"
    exit 0
fi
. "$ROOT/tests/tools/dist_env.sh"
exec python3 - "$ROOT" <<'EOF'
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = sys.argv[1]
RUNNER = os.environ["CUGRADE_RUNNER_BIN"]
N = int(os.environ.get("BENCH_N", "10"))
LAB = os.environ.get("BENCH_LAB", "reduction")
FILE = os.environ.get("BENCH_FILE", os.path.join(ROOT, "tests/gpu/solutions", LAB, "naive.cu"))
DEADLINE = time.time() + float(os.environ.get("BENCH_TIMEOUT", "1e9"))
OUT = os.environ.get("OUT")
MODES = {"now": {}}
TIMING_PHASES = ("sanitize_wait", "hold_wait", "time_run", "time_baselines", "time_judge", "baselines", "retime")

env = dict(os.environ)
for kv in filter(None, os.environ.get("CUGRADE_BIN_ENV", "").split(";")):
    k, _, v = kv.partition("=")
    env[k] = v

tmp = tempfile.mkdtemp(prefix="cugrade-spread-")
os.chmod(tmp, 0o755)
rub = json.load(open(os.path.join(ROOT, "rubrics", LAB + ".json")))
tcase = json.load(open(os.path.join(ROOT, "labs", LAB, "lab.json")))["timing_case"]
rub["correctness"] = [c for c in rub["correctness"] if c["case"] == tcase]
rub["sanitizer"] = {"points": 0, "tools": []}
rpath = os.path.join(tmp, "rubric.json")
json.dump(rub, open(rpath, "w"))
for d in ("cache", "work"):
    os.makedirs(os.path.join(tmp, d))
    os.chmod(os.path.join(tmp, d), 0o755)
log = open(os.path.join(OUT or tmp, "regrade_spread.log"), "w")


def grade(extra):
    e = dict(env)
    e.update(extra)
    t0 = time.time()
    p = subprocess.run([RUNNER, "grade", "--lab", LAB, "--file", FILE, "--rubric", rpath, "--root", ROOT,
                        "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work")],
                       env=e, capture_output=True, text=True, timeout=300)
    wall = time.time() - t0
    log.write(p.stderr[-4000:] + "\n")
    try:
        d = json.loads(p.stdout)
    except ValueError:
        log.write("unparsable: " + p.stdout[-2000:] + "\n")
        return None
    log.write(json.dumps(d)[:6000] + "\n")
    log.flush()
    cg = (d.get("result") or {}).get("cugrade") or {}
    sp = (cg.get("speed") or [{}])[0]
    tm = cg.get("timing") or {}
    ph = cg.get("phases") or {}
    return {"status": d.get("status"), "value": sp.get("value"), "lo": sp.get("ci_low"),
            "hi": sp.get("ci_high"), "tier": sp.get("tier"), "retimed": tm.get("retimed", 0),
            "timing_s": sum(ph.get(k, 0) for k in TIMING_PHASES), "total": ph.get("total", wall),
            "student_ms": tm.get("student_ms"), "cpu_ms": tm.get("cpu_ms"), "samples": tm.get("samples"),
            "reason": tm.get("retime_reason"),
            "cpu_n": next((x.get("samples") for x in tm.get("timings") or [] if x.get("name") == "cpu"), 0)}


print(f"== regrade spread: {os.path.relpath(FILE, ROOT)}, lab {LAB}, case {tcase}, "
      f"metric {rub['speed'][0]['metric']}, {N} grades")
w = grade({})   # builds the lab, measures the device record, limits and cached baselines
print(f"warm-up grade: {w and w['status']}, {w and w['total']:.1f} s (lab build, caches)")
rows = {m: [] for m in MODES}
print(f"{'run':>3} {'mode':6} {'value':>8} {'95% CI':>17} {'rounds':>6} {'student ms':>10} {'cpu ms':>7} "
      f"{'cpu n':>5} {'timing s':>8} {'total s':>7}  tier")
for i in range(N):
    for m, extra in MODES.items():
        if time.time() > DEADLINE:
            break
        r = grade(extra)
        if not r or r["value"] is None:
            print(f"{i + 1:>3} {m:6} failed ({r and r['status']})")
            continue
        rows[m].append(r)
        ci = f"{r['lo']:.2f}-{r['hi']:.2f}" if r["lo"] is not None else "-"
        print(f"{i + 1:>3} {m:6} {r['value']:8.2f} {ci:>17} {1 + r['retimed']:>6} {r['student_ms']:10.4f} "
              f"{r['cpu_ms']:7.1f} {r['cpu_n'] or 0:>5} {r['timing_s']:8.2f} "
              f"{r['total']:7.2f}  {r['tier']}", flush=True)

print()
print(f"| mode | grades | median | min | max | spread | tiers seen | tier flips | timing phase median s | grade median s |")
print(f"|---|---|---|---|---|---|---|---|---|---|")
for m, rs in rows.items():
    if not rs:
        print(f"| {m} | 0 | | | | | | | | |")
        continue
    v = [r["value"] for r in rs]
    tiers = [str(r["tier"]) for r in rs]
    major = max(set(tiers), key=tiers.count)
    flips = sum(1 for a, b in zip(tiers, tiers[1:]) if a != b)
    med = statistics.median(v)
    seen = "; ".join(f"{t} x{tiers.count(t)}" for t in sorted(set(tiers)))
    print(f"| {m} | {len(rs)} | {med:.2f} | {min(v):.2f} | {max(v):.2f} | {(max(v) - min(v)) / med * 100:.1f}% | "
          f"{seen} | {flips} (off the majority: {sum(t != major for t in tiers)}) | "
          f"{statistics.median(r['timing_s'] for r in rs):.2f} | {statistics.median(r['total'] for r in rs):.2f} |")
ra = [r for r in rows["after"] if r["retimed"]]
print(f"after: re-timed in {len(ra)} of {len(rows['after'])} grades "
      f"(rounds: {[1 + r['retimed'] for r in rows['after']]})")
for r in ra[:3]:
    print(f"  e.g. {r['reason']}")
EOF

#!/usr/bin/env python3
# suite: alone  (tests/run.sh: it needs a quiet host, then takes every core)
"""CI (no GPU, real sandbox): no sanitizer `time limit` from a busy host's
CPUs (runner/grade/sanitizer.h: a sanitizer run's limit counts from its go
on the wall clock less the time the host's CPUs kept it waiting, its
cgroup's "full" CPU pressure, as a check run's share clock does; cpu_load.t
shows it for the check run). On the wall clock alone, a loaded host (a
burst's interpreters and tools on every core) could end a correct
program's memcheck or racecheck run as "it ran past the time limit under
the tool" and take the sanitizer points.

A stand-in compute-sanitizer (CI has none, as in pipeline.t) runs the
program, then does 8 s of CPU work of its own (the tool's analysis) for a
file named work8.cu. The fake lab's limits: run_seconds 40, the check's
limit 2 s (limits.derive floor 1 s + start-up 1 s), so each sanitizer run
gets max(30, 3 x 2) = 30 s from its go (runner/run/limit.c). While busy
loops, four sessions a core, take the host's CPUs, the two runs get about
a fifth of a core each and take about 40 s of wall: graded, both clean,
full marks (before: both "ran past the time limit (30 s) under the tool",
10 points lost). That a run which never ends is still cut at its limit
is pipeline.t's (a tool that sleeps, not stalled: its limit is the wall).
Needs CPU pressure accounting (PSI) in the run's cgroup, as cpu_load.t.
Prints TAP lines."""
import json, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, link_cuda, ok, require_nvcc_root  # noqa: E402
from suite import GOOD_FILL, fake_course, grade_fakelab  # noqa: E402

require_nvcc_root()

tmp, root, cache = fake_course("cugrade-sanload-",
                               {"run_seconds": 40, "derive": {"floor_seconds": 1, "startup_seconds": 1}})
fake = os.path.join(tmp, "cuda")
cs = os.path.join(link_cuda(fake, own=("compute-sanitizer",)), "compute-sanitizer")
with open(cs, "w") as f:
    f.write("""#!/bin/sh
echo "========= COMPUTE-SANITIZER"
while [ "$1" != /lab/launch ]; do shift; done
"$@" >/dev/null
rc=$?
# The tool's own work after its program: 8 s of CPU.
[ -f /work/work8.cu ] && python3 -c 'import time
while time.process_time() < 8: pass'
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
""")
os.chmod(cs, 0o755)
os.environ["CUDA_HOME"] = fake
rp = os.path.join(root, "rubrics", "fakelab.json")
with open(rp) as f:
    rub = json.load(f)
rub["sanitizer"] = {"points": 10, "tools": ["memcheck", "racecheck"]}
with open(rp, "w") as f:
    json.dump(rub, f)
AFTER_LINK = ("gpu_wait", "check_run", "device_record", "judge", "sanitize_wait", "hold_wait",
              "time_run", "time_judge", "baselines", "sanitize")


def busy_host():
    """Four busy loops a core, each a session of its own (the scheduler's
    autogroups share a CPU between sessions, not processes)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(4 * (os.cpu_count() or 1))]


hogs = []
try:
    hogs = busy_host()
    d, log, wall = grade_fakelab(tmp, root, cache, "work8.cu", GOOD_FILL,
                                 "0123456789abcdef0123456789abcdef")
    for h in hogs:
        h.kill()
        h.wait()
    hogs = []
    r = d.get("result") or {}
    san = (r.get("cugrade") or {}).get("sanitizer") or []
    ph = (r.get("cugrade") or {}).get("phases") or {}
    after = sum(ph.get(k, 0) for k in AFTER_LINK)
    ok(d.get("status") == "graded" and len(san) == 2 and all(x.get("clean") for x in san) and
       r.get("score") == r.get("max_score") and after > 30,
       "8 s of the tool's own work while the host's CPUs are taken by others: both runs clean, "
       "full marks, though the job waited %.1f s after its link, past the runs' 30 s limit "
       "(%.1f s in all)" % (after, wall),
       json.dumps({"status": d.get("status"), "score": r.get("score"), "sanitizer": san,
                   "phases": ph})[:2500] + "\n" + log)
finally:
    for h in hogs:
        h.kill()
        h.wait()
    subprocess.run(["rm", "-rf", tmp])

sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): the first timing run starts beside the check run
(job_time_prestart, runner/grade/job_time_gate.c; docs/runner.md "The timing gate").
Its start-up (an interpreter and CuPy, or CUDA's context, and the timed
case's inputs) overlaps the check, and it waits at its gate, its wall clock
stopped, until the job reaches its timing; nothing of the student's runs in
it before the gate opens. A job that ends at its check ends it at once.

The fake lab's harness plays both phases' lengths from the seed:
"de1a" SS CC, a set-up of SS seconds before the timing gate and a check
run of CC seconds.
- a 3 s set-up beside a 5 s check: the timing starts with its set-up done
  (time_start well under 3 s; before, it was the whole 3 s after the check);
- a wrong file with a 9 s set-up beside its check: the verdict does not wait
  for the set-up, and no process of that run is left.
Prints TAP."""
import json, os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import GOOD_FILL, fake_course, grade_fakelab  # noqa: E402  (a starved compile retried)

require_nvcc_root()

# run_seconds: room for a 5 s check and a 9 s set-up; floor_seconds: the
# check's derived limit too
tmp, root, cache = fake_course("cugrade-pre-", {"run_seconds": 30, "derive": {"floor_seconds": 15}})
GOOD = GOOD_FILL
WRONG = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 3.0f * i; }\n'


def grade(name, src, seed):
    d, log, wall = grade_fakelab(tmp, root, cache, name, src, seed)
    ph = (d.get("result", {}).get("cugrade") or {}).get("phases") or {}
    return d, ph, wall, log


def leftover():
    """Processes of the fake harness's timing run still alive (a run that
    was not ended). Each sits in its run's cgroup, cugrade-PID-N, PID the
    runner that made it (runner/sandbox/cgroup.c): one whose runner is
    still alive is another suite's job in progress beside this one (the
    pool runs the runner suites side by side), not ours; ours ended with
    its `cugrade-runner grade`."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    left = []
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if "/work/prog" not in args or " time " not in args:
            continue
        try:
            maker = re.search(r"cugrade-(\d+)-\d+", open("/proc/%s/cgroup" % pid).read())
        except OSError:
            continue  # gone meanwhile
        if maker and os.path.isdir("/proc/" + maker.group(1)):
            continue
        left.append(line)
    return left


try:
    d, ph, _, log = grade("warm.cu", GOOD, "0123456789abcdef0123456789abcdef")
    ok(d.get("status") == "graded", "a correct file is graded (the lab built, its limits measured)",
       json.dumps(ph) + log)

    d, ph, _, log = grade("good.cu", GOOD, "de1a0305" + "0" * 24)
    ok(d.get("status") == "graded" and ph.get("check_run", 0) >= 4.5 and
       ph.get("time_start", 99) < 1.5,
       "a 3 s set-up beside a 5 s check run: the timing starts with its set-up done "
       "(check_run %.1f s, time_start %.1f s)" % (ph.get("check_run", -1), ph.get("time_start", -1)),
       json.dumps(ph) + log)

    d, ph, wall, log = grade("wrong.cu", WRONG, "de1a0901" + "0" * 24)
    after = sum(v for k, v in ph.items() if k not in ("total", "front", "compile", "link", "inspect",
                                                      "prestart", "admit_wait", "gpu_wait",
                                                      "check_run"))
    ok(d.get("status") == "graded" and d.get("result", {}).get("score") == 0 and after < 4,
       "a wrong file's verdict does not wait for the 9 s set-up of the timing run it will not "
       "use (%.1f s after its check)" % after, json.dumps(ph) + log)
    ok(not leftover(), "no process of that timing run is left", "\n".join(leftover()))
finally:
    subprocess.run(["rm", "-rf", tmp])

print("1..4")
sys.exit(1 if failures() else 0)

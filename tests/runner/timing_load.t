#!/usr/bin/env python3
# suite: alone  (tests/run.sh: its bounds are seconds of a spinning run, which a busy host stretches)
"""CI (no GPU): no `timeout` from load (docs/runner.md, the discipline's
item 6). A timing run's start-up, before its gate, runs under the job's
shared GPU lock beside other jobs' check runs; on a GPU time-sliced between
many contexts it takes many times as long as alone (an H200 burst charged
correct matmul kernels `timeout` after a 17 s start-up). Its limit counts
its share of the GPU there (the share clock, runner/gpu/share.c), nothing while
it waits at its gate, and the wall clock once it holds the GPU alone.

The fake GPU lane: the GPU's users ledger (CACHE/gpu-0.active) holds the
lines of eleven live processes, as eleven other jobs' check runs would, and
the fake lab's harness (tests/runner/fakelab/harness.cpp) plays a slow
set-up before its gate when its seed starts "de1a<seconds>". With the lab's
ceiling raised to 30 s the timing run's limit is a few seconds (the check
limit + 2 x 3 s):
- a 12 s set-up beside the eleven is graded, not timed out;
- the same set-up alone on the GPU is `timeout` (a hang before the gate);
- a start-up too slow for its share beside one other job is timed again,
  once: graded when the second is quick, `timeout` when it is slow again;
- a kernel that hangs in its timed samples is `timeout` at about its limit
  even with the eleven in the ledger (alone on the GPU the clock is the
  wall's: the ledger's lines are not stretching it).
Prints TAP."""
import json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import grade_fakelab  # noqa: E402  (a starved compile retried)
import tree  # noqa: E402  (the fake lab laid out as a course tree)

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-tload-")
os.chmod(tmp, 0o755)
# run_seconds, the ceiling: room for the share clock to stretch
root = tree.lay_out(os.path.join(tmp, "root"), limits={"run_seconds": 30})
cache = os.path.join(tmp, "cache")
os.makedirs(cache)

SOURCES = {
    "good.cu": 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n',
    # Correct in the check run (two calls), hangs from the third call on:
    # in the timing run's samples, after the gate.
    "hang_timed.cu": 'static int calls;\nextern "C" void fill(float* o, int n) { if (++calls > 2) { volatile int x = 1; while (x) { } }'
                     ' for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n',
}
SLOW = "de1a12" + "0" * 26  # the harness's set-up takes 12 s before its gate
SLOW_ALWAYS = "de1a24" + "0" * 26  # 24 s before the gate, on every timing run
SLOW_ONCE = "de1b24" + "0" * 26  # 24 s before the gate, on the job's first timing run only
PLAIN = "0123456789abcdef0123456789abcdef"


def grade(name, seed):
    return grade_fakelab(tmp, root, cache, name, SOURCES[name], seed)


def summary(d, log):
    r = d.get("result", {})
    return json.dumps({"status": d.get("status"), "message": r.get("status_message") or r.get("message"),
                       "phases": (r.get("cugrade") or {}).get("phases")}) + "\n" + log


def load(n):
    """n live processes in the GPU's users ledger, as n jobs' check runs."""
    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(n)]
    with open(os.path.join(cache, "gpu-0.active"), "w") as f:
        f.writelines(f"{p.pid} {i + 1} 0\n" for i, p in enumerate(procs))
    return procs


def unload(procs):
    for p in procs:
        p.kill()
        p.wait()
    open(os.path.join(cache, "gpu-0.active"), "w").close()


def grade_beside(n, name, seed):
    """grade(name, seed) with n other jobs' lines in the users ledger."""
    others = load(n)
    try:
        return grade(name, seed)
    finally:
        unload(others)


try:
    # First, alone and quick: the lab is built and its naive limit measured.
    d, log, _ = grade("good.cu", PLAIN)
    ok(d["status"] == "graded", "a correct file is graded (the lab built, its limits measured)",
       summary(d, log))

    d, log, wall = grade_beside(11, "good.cu", SLOW)
    ph = (d.get("result", {}).get("cugrade") or {}).get("phases") or {}
    t = (d.get("result", {}).get("cugrade") or {}).get("timing") or {}
    ok(d["status"] == "graded" and (t.get("samples") or 0) > 0 and ph.get("time_start", 0) >= 11,
       "a 12 s start-up before the gate beside 11 other jobs on the GPU is graded with its "
       "samples (time_start %.1f s), not charged `timeout`" % ph.get("time_start", 0),
       summary(d, log))

    d, log, wall = grade("good.cu", SLOW)
    msg = json.dumps(d.get("result", {}))
    ok(d["status"] == "timeout" and "Timing failed" in msg,
       "the same 12 s start-up alone on the GPU is `timeout`: a hang before the gate is still one",
       summary(d, log))

    # A start-up slowed by a passing load (the host-wide driver queue of
    # a burst's start, which the ledger's count does not see): 24 s on the
    # job's first timing run beside one other job, too long for its share;
    # the run is timed again and the second start-up is quick.
    d, log, wall = grade_beside(1, "good.cu", SLOW_ONCE)
    t = (d.get("result", {}).get("cugrade") or {}).get("timing") or {}
    ok(d["status"] == "graded" and (t.get("samples") or 0) > 0 and "timing it again" in log,
       "a timing run that timed out beside another job is run again, and a correct kernel "
       "is graded, not charged `timeout`", summary(d, log))

    # The same start-up slow on every run (a hang before the gate): timed
    # twice, then charged, and the message says why it took that long.
    d, log, wall = grade_beside(1, "good.cu", SLOW_ALWAYS)
    msg = json.dumps(d.get("result", {}))
    ok(d["status"] == "timeout" and "timed twice" in msg and "timing it again" in log,
       "a start-up that is too slow again on its second run is `timeout`, timed twice",
       summary(d, log))

    d, log, wall = grade_beside(11, "hang_timed.cu", PLAIN)
    ph = (d.get("result", {}).get("cugrade") or {}).get("phases") or {}
    msg = json.dumps(d.get("result", {}))
    ok("timing run ran past its time limit of" in msg and "ran past the time limit (" not in msg,
       "its message names the timing run's limit, not the run's wall time (which holds the "
       "wait for the GPU)", summary(d, log))
    # About its limit (a few seconds), or twice that when its run is timed
    # again; stretched by the ledger's 12 users it would run to the wall
    # ceiling (twice the 30 s run_seconds set above). Alone in tests/run.sh:
    # in the pool, two cores shared four ways, the spinning run waited for
    # a CPU, the share clock rightly left that out (the CPU-stall clock),
    # and the run went to 41 s (a CI run of this session, c. 4590 checks).
    ok(d["status"] == "timeout" and 0 < ph.get("time_run", 99) < 40,
       "a kernel that hangs in its timed samples is `timeout` at about its limit (time_run %.1f s) "
       "even with 11 lines in the users ledger: alone on the GPU the limit is the wall clock"
       % ph.get("time_run", -1), summary(d, log))
finally:
    subprocess.run(["rm", "-rf", tmp])

print("1..7")
sys.exit(1 if failures() else 0)

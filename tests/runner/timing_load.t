#!/usr/bin/env python3
"""CI (no GPU): no `timeout` from load (docs/runner.md, the discipline's
item 6). A timing run's start-up, before its gate, runs under the job's
shared GPU lock beside other jobs' check runs; on a GPU time-sliced between
many contexts it takes many times as long as alone (an H200 burst charged
correct matmul kernels `timeout` after a 17 s start-up). Its limit counts
its share of the GPU there (the share clock, runner/gpu/share.c), nothing while
it waits at its gate, and the wall clock once it holds the GPU alone.

The fake GPU lane (tests/runner/fakelab/gpu_load.py): the GPU's users ledger (CACHE/gpu-0.active) holds the
lines of eleven live processes, as eleven other jobs' check runs would, and
the fake lab's harness (tests/runner/fakelab/harness.cpp) plays a slow
set-up before its gate when its seed starts "de1a<seconds>". With the lab's
ceiling raised to 30 s the timing run's limit is a few seconds (the check
limit + 2 x 3 s):
- a 12 s set-up beside the eleven is graded, not timed out;
- the same set-up alone on the GPU is `timeout` (a hang before the gate);
- a start-up too slow for its share beside one other job is timed again,
  once: graded when the second is quick, `timeout` when it is slow again.
A kernel that hangs in its timed samples: tests/runner/timing_hang.t (its
bound is seconds of a spinning run: a quiet suite). Prints TAP."""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from gpu_load import Lane, phases, summary, timing  # noqa: E402  (the fake GPU lane)

require_nvcc_root()

SLOW = "de1a12" + "0" * 26  # the harness's set-up takes 12 s before its gate
SLOW_ALWAYS = "de1a24" + "0" * 26  # 24 s before the gate, on every timing run
SLOW_ONCE = "de1b24" + "0" * 26  # 24 s before the gate, on the job's first timing run only

lane = Lane("cugrade-tload-")
try:
    lane.built(ok)

    d, log, wall = lane.grade_beside(11, "good.cu", SLOW)
    ph, t = phases(d), timing(d)
    ok(d["status"] == "graded" and (t.get("samples") or 0) > 0 and ph.get("time_start", 0) >= 11,
       "a 12 s start-up before the gate beside 11 other jobs on the GPU is graded with its "
       "samples (time_start %.1f s), not charged `timeout`" % ph.get("time_start", 0),
       summary(d, log))

    d, log, wall = lane.grade("good.cu", SLOW)
    msg = json.dumps(d.get("result", {}))
    ok(d["status"] == "timeout" and "Timing failed" in msg,
       "the same 12 s start-up alone on the GPU is `timeout`: a hang before the gate is still one",
       summary(d, log))

    # A start-up slowed by a passing load (the host-wide driver queue of
    # a burst's start, which the ledger's count does not see): 24 s on the
    # job's first timing run beside one other job, too long for its share;
    # the run is timed again and the second start-up is quick.
    d, log, wall = lane.grade_beside(1, "good.cu", SLOW_ONCE)
    t = timing(d)
    ok(d["status"] == "graded" and (t.get("samples") or 0) > 0 and "timing it again" in log,
       "a timing run that timed out beside another job is run again, and a correct kernel "
       "is graded, not charged `timeout`", summary(d, log))

    # The same start-up slow on every run (a hang before the gate): timed
    # twice, then charged, and the message says why it took that long.
    d, log, wall = lane.grade_beside(1, "good.cu", SLOW_ALWAYS)
    msg = json.dumps(d.get("result", {}))
    ok(d["status"] == "timeout" and "timed twice" in msg and "timing it again" in log,
       "a start-up that is too slow again on its second run is `timeout`, timed twice",
       summary(d, log))
finally:
    lane.remove()

print("1..5")
sys.exit(1 if failures() else 0)

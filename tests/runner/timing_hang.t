#!/usr/bin/env python3
# suite: quiet  (tests/run.sh: its bound is seconds of a spinning run, which another suite's CPU work stretches)
"""CI (no GPU): a kernel that hangs in its timed samples is `timeout` at
about its limit even with eleven other jobs' lines in the GPU's users
ledger (tests/runner/fakelab/gpu_load.py): alone on the GPU a timing run's
clock is the wall's, the ledger's lines do not stretch it (docs/runner.md,
the discipline's item 6; the start-ups before the gate:
tests/runner/timing_load.t). Prints TAP."""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from gpu_load import PLAIN, Lane, phases, summary  # noqa: E402  (the fake GPU lane)

require_nvcc_root()

lane = Lane("cugrade-thang-")
try:
    lane.built(ok)

    d, log, wall = lane.grade_beside(11, "hang_timed.cu", PLAIN)
    ph = phases(d)
    msg = json.dumps(d.get("result", {}))
    ok("timing run ran past its time limit of" in msg and "ran past the time limit (" not in msg,
       "its message names the timing run's limit, not the run's wall time (which holds the "
       "wait for the GPU)", summary(d, log))
    # About its limit (a few seconds), or twice that when its run is timed
    # again; stretched by the ledger's 12 users it would run to the wall
    # ceiling (twice the 30 s run_seconds). A quiet suite in tests/run.sh:
    # in the pool, two cores shared four ways, the spinning run waited for
    # a CPU, the share clock rightly left that out (the CPU-stall clock),
    # and the run went to 41 s (a CI run of 2026-11-30, c. 4590 checks).
    ok(d["status"] == "timeout" and 0 < ph.get("time_run", 99) < 40,
       "a kernel that hangs in its timed samples is `timeout` at about its limit (time_run %.1f s) "
       "even with 11 lines in the users ledger: alone on the GPU the limit is the wall clock"
       % ph.get("time_run", -1), summary(d, log))
finally:
    lane.remove()

print("1..3")
sys.exit(1 if failures() else 0)

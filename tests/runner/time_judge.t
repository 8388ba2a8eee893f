#!/usr/bin/env python3
"""CI (no GPU): the timing's judge runs inside the job's own exclusive hold
(runner/grade/job_time.c, job_time_round; docs/runner.md "The GPU lock").

Before, the job let go of the exclusive lock after its timing run and took
a shared one for the judge; a shared holder waits while any timing run
waits or runs (lock.c, timing_yield), so in a burst, where another job's
timing run nearly always waits, a timed job sat 34 s on average (2 x H200,
100 Python jobs) holding its after-check reservation for a judge of a
fraction of a second.

Here the fake lab's timing run holds the lock 2 s past its gate (seed
"de1c02"); while it does, this test puts a live process in the GPU's
timing ledger (CACHE/gpu-0.timing: another job's timing run waiting) for
12 s. The job's `time_judge` must not wait for it. Prints TAP."""
import fcntl, json, os, subprocess, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import GOOD_FILL, fake_course, grade_fakelab  # noqa: E402  (a starved compile retried)
from ledger import live_lines  # noqa: E402  (tests/runner/ledger.py)

require_nvcc_root()

# run_seconds: room for the 2 s hold
tmp, root, cache = fake_course("cugrade-tjudge-", {"run_seconds": 30, "derive": {"floor_seconds": 15}})
timing = os.path.join(cache, "gpu-0.timing")
GOOD = GOOD_FILL
WAITER_S = 12


def grade(name, seed):
    d, log, _ = grade_fakelab(tmp, root, cache, name, GOOD, seed)
    return d, (d.get("result", {}).get("cugrade") or {}).get("phases") or {}, log


def live_pids(path):
    """The pids of the ledger's lines whose process lives."""
    return [int(line.split()[0]) for line in live_lines(path)]


def inject(stop, seen):
    """Once the runner is in the timing ledger (its timing run waits for
    or holds the exclusive lock), add a live waiter of ours for WAITER_S
    seconds; seen gets whether the runner was still there after."""
    waiter = None
    while not stop.is_set() and waiter is None:
        if live_pids(timing):
            waiter = subprocess.Popen(["sleep", str(WAITER_S)])
            with open(timing, "a+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)  # as admit.c's ledger_open
                f.write("%d 77 0\n" % waiter.pid)
                f.flush()
                fcntl.flock(f, fcntl.LOCK_UN)
            seen["inside"] = [p for p in live_pids(timing) if p != waiter.pid] != []
        time.sleep(0.005)
    if waiter:
        waiter.wait()


try:
    d, ph, log = grade("warm.cu", "0123456789abcdef0123456789abcdef")
    ok(d.get("status") == "graded", "a correct file is graded (the lab built, its limits measured)",
       json.dumps(ph) + log)

    stop, seen = threading.Event(), {}
    th = threading.Thread(target=inject, args=(stop, seen))
    th.start()
    d, ph, log = grade("good.cu", "de1c02" + "0" * 26)
    stop.set()
    ok(seen.get("inside") is True,
       "another job's timing run came to wait while this job's timing run held the GPU", seen)
    ok(d.get("status") == "graded" and d.get("result", {}).get("score") == d.get("result", {}).get("max_score"),
       "the file is graded with full marks", json.dumps(d)[:2000] + log)
    ok(0 < ph.get("time_judge", 99) < 5,
       "the timing's judge runs in the job's own hold: it does not wait %d s behind the other job's "
       "timing run (time_judge %.1f s)" % (WAITER_S, ph.get("time_judge", -1)), json.dumps(ph))
    th.join()
finally:
    subprocess.run(["rm", "-rf", tmp])

print("1..4")
sys.exit(1 if failures() else 0)

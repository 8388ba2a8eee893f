#!/usr/bin/env python3
"""CI (no GPU): a Python run's owner (labs/common/py/owner.py) that raises
from a mistake of ours is a failure of ours, not the student's crash
(owner.py guarded). On an H200 a CudaBackend attribute that shadowed its
own method raised TypeError in every check run, and the runner charged
each student `runtime_error` ("your program exited with status 1"). Now:
TypeError, AttributeError, KeyError and the like end the owner with a
harness_error record on the channel and exit 2 (runner/run/run.c
run_harness_failed: system_error, retried), even after the student's code
ran; MemoryError (the run's memory, which the student's process shares)
still ends it as before: exit 1, no record. Prints TAP lines."""
import os
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import failures, ok  # noqa: E402  (TAP)
from owner_proc import run_owner  # noqa: E402  (the owner in a process of its own)


def owner_raising(what):
    """An owner whose main raises what, after the student's code ran: its
    exit status, stderr and the records on its channel."""
    return run_owner("def main():\n    %s\nowner.guarded(main)\n" % what)


rc, err, recs = owner_raising("'sync'()   # a str called: the shadowed method")
ok(rc == 2 and recs and recs[0]["type"] == "harness_error" and "TypeError" in recs[0]["message"],
   "a TypeError of the owner's own after the student's code ran: a harness_error record and exit 2 "
   "(ours: system_error)", (rc, err[-800:], recs))
rc, err, recs = owner_raising("{}['case']")
ok(rc == 2 and recs and "KeyError" in recs[0]["message"], "a KeyError: the same", (rc, err[-800:], recs))
rc, err, recs = owner_raising("raise MemoryError()")
ok(rc == 1 and not recs, "a MemoryError (the run's memory, shared with the student's process): exit 1 "
   "and no record, as before", (rc, err[-800:], recs))
rc, err, recs = owner_raising("sys.exit(3)")
ok(rc == 3 and not recs, "the owner's own exits pass through unchanged (3: a case failed fatally)",
   (rc, err[-800:], recs))
sys.exit(1 if failures() else 0)

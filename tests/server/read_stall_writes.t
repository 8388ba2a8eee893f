#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on SQLite locks held for seconds; its CPU is under 1% of its wall time)
# Issue 29 item 4, the runner's claims and the writes: while every SQLite
# read of the server waits (as on a stalled disk), /healthz is answered: a
# runner's claim, a regrade request, late days, a replace check, the staff's
# writes and a new token wait off the loop, and each completes once reads
# go again. The pages and exports: read_stall.t. The cases and how the stall
# is taken: read_stall_cases.py, wal_stall.py.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, require_binary, kernel  # noqa: E402
from read_stall_cases import (graded_server, runner_claims, regrade_requests,  # noqa: E402
                              late_days, replace_check, staff_writes, new_token)


def main(t):
    # a graded submission: regrade requests and the staff's writes name it
    s, sid = graded_server(t, "a graded submission")
    # What the cases read that read_stall.t's left behind: alice's queued
    # submission (claimed first, ahead of bob's) and her open regrade request.
    t.status(s.submit("vadd", kernel("poll")), 202, "alice's queued submission")
    t.status(s.post("/api/submissions/%s/regrade-requests" % sid, token="alice_q7",
                    json_body={"reason": "test 2 looks right to me"}), 201,
             "alice asks for a regrade (a request to answer)")
    runner_claims(t, s)
    regrade_requests(t, s, sid)
    late_days(t, s)
    replace_check(t, s)
    staff_writes(t, s, sid)
    new_token(t, s)
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

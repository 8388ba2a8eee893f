#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on SQLite locks held for seconds; its CPU is under 1% of its wall time)
# Issue 29 item 4, the sign-in form and the API: while every SQLite read of
# the server waits (as on a stalled disk), /healthz is answered: a sign-in,
# the API's reads, its scoreboard and a submission's status poll, a form's
# POST answered with its page, and a client that hangs up meanwhile wait
# off the loop, and each completes once reads go again. The pages and
# exports: read_stall.t; the runner's claims and the writes:
# read_stall_writes.t. The cases and how the stall is taken:
# read_stall_cases.py, wal_stall.py.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, require_binary  # noqa: E402
from read_stall_cases import (graded_server, login_stalled, api_reads,  # noqa: E402
                              api_scoreboard, api_poll, post_pages, hang_up)


def main(t):
    # a graded submission: the API's reads, its poll and the forms name it
    s, sid = graded_server(t, "a graded submission")
    login_stalled(t, s, "bob_z3")
    api_reads(t, s, sid)
    api_scoreboard(t, s)
    api_poll(t, s, sid)
    post_pages(t, s, sid)
    hang_up(t, s)
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on SQLite locks held for seconds; its CPU is under 1% of its wall time)
# Issue 29 item 4: the event loop never waits for a read. While every SQLite
# read of the server waits (as on a stalled disk), /healthz is answered: a
# credential lookup, an export, a page of each family and the sign-in form
# wait off the loop, and each completes once reads go again. The sign-in
# form and the API's reads: read_stall_api.t; the runner's claims and the
# writes: read_stall_writes.t. The cases and how the stall is
# taken: read_stall_cases.py, wal_stall.py.
import os
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, require_binary  # noqa: E402
from wal_stall import stalled  # noqa: E402
from read_stall_cases import graded_server, token_at_admission, pages  # noqa: E402


def main(t):
    # a graded submission: the exports read its row and its result
    s, sid = graded_server(t, "a graded submission to export")
    time.sleep(2.5)  # no token looked up so far is still in the 2 s cache
    token_at_admission(t, s, "bob_z3")
    stalled(t, s, "an uncached token", "/healthz", token="alice_q7")
    cookie, _ = s.login("admin")
    t.ok(cookie, "the admin signs in (a session cookie: never cached)")
    session = {"Cookie": "cugrade_session=%s" % cookie}
    r = stalled(t, s, "grades.csv (API)", "/api/admin/export/grades.csv", token="admin",
                warm="/api/me")
    t.ok(r is not None and (r.body or b"").startswith(b"user,display_name,lab,score"),
         "grades.csv (API): a CSV export", r and r.brief())
    stalled(t, s, "a session", "/healthz", headers=session)
    # the pages take the token too: cached first, so that the export's own
    # reads are what waits
    r = stalled(t, s, "grades.csv (page)", "/admin/export/grades.csv", token="admin",
                warm="/api/me")
    t.ok(r is not None and (r.body or b"").startswith(b"user,display_name,lab,score"),
         "grades.csv (page): a CSV export", r and r.brief())
    r = stalled(t, s, "results.json (page)", "/admin/export/results.json?lab=vadd",
                token="admin", warm="/api/me")
    students = (r.json() or {}).get("students") if r is not None else None
    t.ok(students and students[0].get("submission") == sid and
         students[0].get("results", {}).get("score") == 50,
         "results.json (page): the graded submission's results", r and r.brief())
    pages(t, s, sid)
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

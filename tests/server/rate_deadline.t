#!/usr/bin/env python3
# Rate limits and deadlines from the rubric (fixture rubrics with past dates):
# a second submission while one is in flight is 429 with Retry-After; the
# hourly cap is 429; a late submission is accepted and marked late; after the
# hard deadline (or after `due` with policy refuse) it is refused with a clear
# message; a lab that has not opened is refused.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402


def check_429(t, r, what):
    t.error(r, 429, "rate_limited", what)
    ra = r.header("retry-after")
    t.ok(ra is not None and ra.isdigit() and int(ra) >= 1,
         "%s: Retry-After header is a positive number of seconds" % what, ra)
    err = r.error() or {}
    t.ok(isinstance(err.get("retry_after"), (int, float)) and err["retry_after"] >= 1
         and (ra is None or not ra.isdigit() or abs(err["retry_after"] - int(ra)) <= 1),
         "%s: error.retry_after matches Retry-After" % what, (err, ra))


def main(t):
    s = Server(labs=["inflight", "hourly", "late", "closed", "refuse", "notyet"], tap=t)
    run = s.runner()

    # --- one job being graded per lab; a queued one is superseded
    r = s.submit("inflight", kernel("1"))
    old = (r.json() or {}).get("id")
    t.status(r, 202, "inflight: first submission accepted")
    t.eq((r.json() or {}).get("superseded"), 0, "inflight: the first supersedes nothing")
    r = s.submit("inflight", kernel("2"))
    first = (r.json() or {}).get("id")
    t.status(r, 202, "inflight: a second submission while the first is still queued is accepted")
    t.eq((r.json() or {}).get("superseded"), 1, "inflight: ...and says it superseded one")
    o = s.submission(old, token="alice_q7") or {}
    t.eq(o.get("status"), "superseded", "inflight: the older queued one is superseded")
    t.ok("%s" % first in o.get("detail", ""), "inflight: ...naming the one that replaced it", o)
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), first, "runner claims alice's newer job, never the superseded one")
    run.progress(first, "compiling")
    r = s.submit("inflight", kernel("3"))
    check_429(t, r, "inflight: second submission while the first is compiling")
    # Only a job being graded counts (a queued one is superseded): bob
    # submits while alice's is compiling, the one moment a count over the
    # whole lab instead of per student would refuse him.
    r = s.submit("inflight", kernel("2"), token="bob_z3")
    t.status(r, 202, "inflight: another student is not limited by alice's job being graded")
    run.result(first, "graded")
    r = s.submit("inflight", kernel("4"))
    t.status(r, 202, "inflight: accepted again once the first is graded")

    # --- N per hour; superseded submissions do not count
    codes = []
    for i in range(2):
        r = s.submit("hourly", kernel("h%d" % i))
        codes.append(r.status)
        job = run.claim(wait=2) or {}
        while job and job.get("lab") != "hourly":   # other labs' jobs: finish them
            run.result(job["id"], "graded")
            job = run.claim(wait=2) or {}
        if job:
            run.result(job["id"], "graded")
    t.eq(codes, [202, 202], "hourly: two graded submissions within the hour accepted")
    r = s.submit("hourly", kernel("h3"))
    check_429(t, r, "hourly: the third within the hour")
    codes = [s.submit("hourly", kernel("b%d" % i), token="bob_z3").status for i in range(8)]
    t.eq(codes, [202] * 8,
         "hourly (limit 2): 8 submissions that supersede each other are all accepted")
    r = s.submit("hourly", kernel("b9"), token="bob_z3")
    check_429(t, r, "hourly: the 9th stored in the hour (4 x the limit, mostly superseded)")

    # --- late, accepted and marked
    r = s.submit("late", kernel("late"))
    j = r.json() or {}
    t.status(r, 202, "late: a submission after due (before hard deadline) is accepted")
    t.eq(j.get("late"), True, "late: the 202 says late:true")
    o = s.submission(j.get("id"), token="alice_q7") or {}
    t.eq(o.get("late"), True, "late: the submission object says late:true")
    r = s.get("/api/labs", token="alice_q7")
    row = [x for x in (r.json() or {}).get("labs", []) if x.get("lab") == "late"]
    t.ok(row and row[0].get("open") is True, "late: GET /api/labs shows the lab still open", row)

    # --- past the hard deadline
    r = s.submit("closed", kernel("too late"))
    t.error(r, 403, "deadline_passed", "closed: a submission after the hard deadline")
    msg = (r.error() or {}).get("message", "")
    t.ok("2020-02-03" in msg or "deadline" in msg.lower(),
         "closed: the message names the deadline", msg)
    r = s.get("/api/submissions?lab=closed", token="admin")
    t.eq((r.json() or {}).get("submissions"), [], "closed: nothing was stored")
    r = s.get("/api/labs", token="alice_q7")
    row = [x for x in (r.json() or {}).get("labs", []) if x.get("lab") == "closed"]
    t.ok(row and row[0].get("open") is False, "closed: GET /api/labs shows open:false", row)

    # --- policy refuse: after due
    r = s.submit("refuse", kernel("refused"))
    t.error(r, 403, "deadline_passed", "refuse: a submission after due with policy refuse")

    # --- not yet open
    r = s.submit("notyet", kernel("early"))
    t.error(r, 403, "lab_closed", "notyet: a submission before the lab opens")
    r = s.get("/api/labs", token="alice_q7")
    opened = {x.get("lab"): x.get("open") for x in (r.json() or {}).get("labs", [])}
    t.eq(opened, {"inflight": True, "hourly": True, "late": True, "closed": False,
                  "refuse": False, "notyet": False}, "GET /api/labs: open for each lab")

    # --- a 429 stored nothing
    r = s.get("/api/submissions?lab=inflight&user=alice_q7", token="admin")
    n = len((r.json() or {}).get("submissions", []))
    t.eq(n, 3, "inflight: only the three accepted submissions of alice were stored")


t = Tap()
require_binary(t)
t.run(main)
t.exit()

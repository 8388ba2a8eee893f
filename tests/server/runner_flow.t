#!/usr/bin/env python3
# The runner protocol end to end with tests/tools/fake_runner.py: claim
# (long-poll), progress (visible in GET submission), result (visible in the
# submission, the scoreboard JSON and CSV, the grades export); students see
# pseudonyms and never another student's submission, source or hidden tests.
import csv
import io
import os
import subprocess
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, ROOT  # noqa: E402
from fake_runner import canned_result  # noqa: E402

CSV_HEADER = "rank,user,display_name,score,max_score,speedup,submission,submitted_at"
CSV_HEADER_STUDENT = "rank,user,display_name,score,max_score,speedup,submitted_on"


def main(t):
    s = Server(labs=["vadd"], tap=t)
    run = s.runner()

    # Long-poll: an empty queue holds the claim, then answers 204. Asserted
    # by events, not a wall-clock window: the claim is still open while its
    # wait runs, and it ends with 204 and no job.
    empty = {}
    th0 = threading.Thread(target=lambda: empty.update(job=run.claim(wait=2), status=run.last.status))
    th0.start()
    th0.join(0.5)
    t.ok(th0.is_alive() and "status" not in empty, "the empty claim is held open (long-poll)")
    th0.join()
    t.ok(empty.get("job") is None and empty.get("status") == 204, "then it answers 204, no job", empty)

    # A waiting claim is answered as soon as a submission arrives.
    got = {}

    def waiter():
        t1 = time.time()
        got["job"] = run.claim(wait=10)
        got["at"] = time.time()
        got["t1"] = t1
    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(1.0)
    src = kernel("alice graded")
    r = s.submit("vadd", src, token="alice_q7")
    posted = time.time()
    sid = (r.json() or {}).get("id")
    th.join(15)
    job = got.get("job")
    t.ok(job is not None and job.get("id") == sid,
         "a waiting claim gets the new submission", job and job.get("id"))
    t.ok(job is not None and got["at"] - posted < 1.0,
         "...within 1 s of the 202 (%.2f s)" % (got.get("at", 99) - posted))
    job = job or {"id": sid}

    # Progress: each phase shows in GET /api/submissions/ID (as staff see it:
    # vadd has a hidden case, so its student sees no "3/6", see hidden.t).
    seen = []

    def on_phase(phase, detail, resp):
        o = s.submission(sid, token="tina_ta") or {}
        seen.append((phase, detail, resp.status, o.get("status"), o.get("phase"),
                     o.get("detail")))
    phases = [("compiling", ""), ("checking", "3/6"), ("running", "memcheck"), ("timing", "")]
    r = run.grade(job, score=72.5, max_score=100, speedup=1.37, phases=phases,
                  on_phase=on_phase)
    for phase, detail, code, status, ph, det in seen:
        t.ok(code == 200 and status == phase and det == detail,
             "progress %s %r -> 200 and the submission shows status %s, detail %r"
             % (phase, detail, phase, detail),
             "progress HTTP %s; submission status=%r phase=%r detail=%r"
             % (code, status, ph, det))
    t.status(r, 200, "result posted: 200")

    # The result in the submission.
    o = s.submission(sid, token="alice_q7") or {}
    t.eq(o.get("status"), "graded", "owner sees status graded")
    t.eq(o.get("score"), 72.5, "owner sees score 72.5")
    t.eq(o.get("max_score"), 100, "owner sees max_score 100")
    t.ok("queue_position" in o and o["queue_position"] is None,
         "queue_position is null once graded", o.get("queue_position"))
    t.ok(isinstance(o.get("updated_at"), str) and o["updated_at"] >= o.get("created_at", ""),
         "updated_at is set and not before created_at", (o.get("created_at"), o.get("updated_at")))
    t.ok(isinstance(o.get("rubric_version"), int), "the submission records a rubric_version",
         o.get("rubric_version"))
    res = o.get("result") or {}
    names = [x.get("name") for x in res.get("tests", [])]
    t.ok("correctness: small" in names, "owner sees the visible test in result.tests", names)
    t.ok("hidden: big case" not in names and b"SECRET-HIDDEN-OUTPUT" not in
         s.get("/api/submissions/%d" % sid, token="alice_q7").body,
         "owner does NOT see the hidden test (filtered for students)", names)
    t.eq(((res.get("cugrade") or {}).get("timing") or {}).get("speedup"), 1.37,
         "result.cugrade.timing.speedup stored")
    r = s.get("/api/submissions?lab=vadd", token="alice_q7")
    t.ok(r.status == 200 and b"SECRET-HIDDEN-OUTPUT" not in r.body,
         "owner's listing does not leak the hidden test either", r.brief())
    r = s.get("/api/labs/vadd/scoreboard", token="alice_q7")
    t.ok(b"SECRET-HIDDEN-OUTPUT" not in r.body, "nor does the scoreboard")
    ot = s.submission(sid, token="tina_ta") or {}
    names = [x.get("name") for x in (ot.get("result") or {}).get("tests", [])]
    t.ok("hidden: big case" in names, "a TA sees the hidden test", names)
    r = run.progress(sid, "timing")
    t.eq(r.status, 409, "progress on a finished job is 409")

    # Bob: a compile error.
    r = s.submit("vadd", kernel("bob"), token="bob_z3")
    bid = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), bid, "runner claims bob's submission")
    r = run.result(bid, "compile_error", canned_result(job, score=0, status="compile_error"))
    t.status(r, 200, "compile_error result posted")
    ob = s.submission(bid, token="bob_z3") or {}
    t.ok(ob.get("status") == "compile_error" and "error" in
         ((ob.get("result") or {}).get("cugrade") or {}).get("compile_log", ""),
         "bob sees compile_error with the compile log", ob)
    # and a graded one for bob, lower than alice's
    r = s.submit("vadd", kernel("bob 2"), token="bob_z3")
    bid2 = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    if job:
        run.grade(job, score=40, speedup=0.5, phases=[])

    # A result with an after_due_date test (vadd is due in 2099): hidden from
    # the student until then, shown to staff.
    r = s.submit("vadd", kernel("bob 3"), token="bob_z3")
    bid3 = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    doc = canned_result(job, score=35, speedup=0.4)
    doc["tests"].append({"name": "after due: big timing", "score": 0, "max_score": 5,
                         "status": "failed", "output": "AFTER-DUE-OUTPUT",
                         "visibility": "after_due_date"})
    if job:
        run.result(bid3, "graded", doc)
    r = s.get("/api/submissions/%d" % bid3, token="bob_z3")
    t.ok(r.status == 200 and b"AFTER-DUE-OUTPUT" not in r.body,
         "an after_due_date test is hidden from the student before the due date", r.brief())
    r = s.get("/api/submissions/%d" % bid3, token="tina_ta")
    t.ok(b"AFTER-DUE-OUTPUT" in r.body, "...and shown to a TA", r.brief())

    # Privacy between students.
    r = s.get("/api/submissions/%d" % sid, token="bob_z3")
    t.ok(r.status in (403, 404) and b"72.5" not in r.body and b"alice" not in r.body.lower(),
         "bob cannot read alice's submission", r.brief())
    r = s.get("/api/submissions/%d/source" % sid, token="bob_z3")
    t.ok(r.status in (403, 404) and b"alice graded" not in r.body,
         "bob cannot read alice's source", r.brief())
    r = s.get("/api/submissions?lab=vadd", token="bob_z3")
    ids = {x.get("id") for x in (r.json() or {}).get("submissions", [])}
    t.ok(r.status == 200 and ids == {bid, bid2, bid3}, "bob's listing has only his own", ids)
    r = s.get("/api/submissions?lab=vadd&user=alice_q7", token="bob_z3")
    t.eq(r.status, 403, "bob asking for user=alice_q7 is 403")

    # Scoreboard, staff view: real names, alice first.
    r = s.get("/api/labs/vadd/scoreboard", token="tina_ta")
    j = r.json() or {}
    rows = j.get("rows") or []
    t.ok(r.status == 200 and j.get("lab") == "vadd" and len(rows) == 2,
         "TA scoreboard has lab and one row per student (2)", r.brief())
    if len(rows) == 2:
        t.ok(rows[0].get("user") == "alice_q7" and rows[0].get("rank") == 1
             and rows[0].get("score") == 72.5 and rows[0].get("max_score") == 100
             and rows[0].get("speedup") == 1.37 and rows[0].get("submission") == sid
             and rows[0].get("display_name") == "Alice Quartermaine",
             "TA scoreboard row 1: alice, rank 1, 72.5/100, speedup 1.37, her submission",
             rows[0])
        t.eq(sorted(rows[0]), sorted(["rank", "user", "display_name", "score", "max_score",
                                      "speedup", "submission", "submitted_at"]),
             "a scoreboard row has exactly the documented fields")
        t.ok(rows[1].get("user") == "bob_z3" and rows[1].get("score") == 40
             and rows[1].get("submission") == bid2 and rows[1].get("rank") == 2,
             "TA scoreboard row 2: bob's best (graded 40), not the compile error", rows[1])
    r = s.get("/api/labs/vadd/scoreboard?format=csv", token="tina_ta")
    lines = r.body.decode("utf-8", "replace").splitlines()
    t.ok(r.status == 200 and (r.header("content-type") or "").startswith("text/csv"),
         "CSV scoreboard is text/csv", r.brief())
    t.eq(lines[:1], [CSV_HEADER], "CSV scoreboard header")
    recs = list(csv.DictReader(io.StringIO(r.body.decode("utf-8", "replace"))))
    t.ok(len(recs) == 2 and recs[0].get("user") == "alice_q7"
         and float(recs[0].get("score") or -1) == 72.5
         and recs[0].get("submission") == str(sid),
         "CSV row 1 is alice with 72.5", recs[:2])

    # Student view: pseudonyms.
    r = s.get("/api/labs/vadd/scoreboard", token="bob_z3")
    rows = (r.json() or {}).get("rows") or []
    body = r.body.decode("utf-8", "replace")
    t.ok(r.status == 200 and len(rows) == 2, "student scoreboard has 2 rows", r.brief())
    t.ok("alice_q7" not in body and "Alice Quartermaine" not in body,
         "bob's scoreboard shows neither alice's login nor her name", body[:400])
    t.ok(rows and rows[0].get("display_name") and rows[0].get("score") == 72.5,
         "bob's scoreboard row 1 has a pseudonym and alice's score", rows[:1])
    r2 = s.get("/api/labs/vadd/scoreboard", token="demo")
    rows2 = (r2.json() or {}).get("rows") or []
    t.ok(rows and rows2 and rows[0].get("display_name") == rows2[0].get("display_name"),
         "the pseudonym is stable across viewers",
         (rows[:1], rows2[:1]))
    r = s.get("/api/labs/vadd/scoreboard?format=csv", token="bob_z3")
    body = r.body.decode("utf-8", "replace")
    t.ok(r.status == 200 and body.startswith(CSV_HEADER_STUDENT) and "alice_q7" not in body
         and "Alice Quartermaine" not in body,
         "bob's CSV scoreboard has the header and no real names of others", body[:400])

    # Grades export.
    r = s.get("/api/admin/export/grades.csv", token="admin")
    body = r.body.decode("utf-8", "replace")
    recs = list(csv.DictReader(io.StringIO(body)))
    t.ok(r.status == 200 and body.startswith("user,display_name,lab,score,max_score,late,submission")
         and any(x.get("user") == "alice_q7" and x.get("lab") == "vadd"
                 and float(x.get("score") or -1) == 72.5 for x in recs),
         "grades.csv has the header and alice's 72.5 in vadd", body[:400])

    # Regrade: back to queued, claimable again, with the new result replacing the old.
    r = s.post("/api/admin/submissions/%d/regrade" % sid, token="admin")
    t.ok(r.status == 202 and (r.json() or {}).get("status") == "queued",
         "regrade answers 202 queued", r.brief())
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), sid, "the regraded submission is claimed again")
    if job:
        run.grade(job, score=90, phases=[])
    t.eq((s.submission(sid) or {}).get("score"), 90, "the regrade's score replaces the old one")

    # The fake runner's CLI works (the web UI tests use it).
    s.submit("vadd", kernel("cli"), token="alice_q7")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests/tools/fake_runner.py"),
                        "--url", s.url, "--token", s.tok["runner1"], "--jobs", "1",
                        "--wait", "2", "--score", "55"], capture_output=True, text=True,
                       timeout=60)
    t.ok(p.returncode == 0 and '"http": 200' in p.stdout,
         "tests/tools/fake_runner.py --jobs 1 grades one job", p.stdout + p.stderr)

    # An override answers with the score it stored, and replaces the score.
    r = s.post("/api/admin/submissions/%d/override" % sid, token="tina_ta",
               json_body={"score": 95.5, "reason": "regrade request: tolerance"})
    t.ok(r.status == 200 and (r.json() or {}) == {"id": sid, "score": 95.5},
         "a TA's override answers {id, score: 95.5}", r.brief())
    t.eq((s.submission(sid, token="alice_q7") or {}).get("score"), 95.5,
         "the student sees the overridden score")


t = Tap()
require_binary(t)
t.run(main)
t.exit()

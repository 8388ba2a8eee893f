#!/usr/bin/env python3
# Admin work through the API: a CSV roster (with quoting), token format and
# storage (only hashes in the database), no silent re-creation of an existing
# user, versioned rubric edits that reach the runner and the submission,
# deadlines moved by a rubric edit, the scoreboard's order (best score, then
# speedup, then earliest), the late penalty, and CSV quoting in exports.
import csv
import io
import json
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, FIXTURES  # noqa: E402
from fake_runner import canned_result  # noqa: E402

PREFIX = {"student": "cgs_", "ta": "cgt_", "admin": "cga_", "runner": "cgr_"}


def main(t):
    s = Server(labs=["vadd", "late"], tap=t)
    run = s.runner()

    # --- CSV roster
    roster = ('name,role,display_name\r\ncarol,student,"Doe, Carol"\r\n'
              'dave,ta,"Dave ""the TA"" Jones"\r\nerin,student,Érin Ünïcode\r\n'
              'rita,runner,\r\n').encode()
    r = s.post("/api/admin/users", token="admin", body=roster,
               headers={"Content-Type": "text/csv"})
    t.status(r, 201, "POST /api/admin/users with a text/csv roster: 201")
    users = {u.get("name"): u for u in (r.json() or {}).get("users", [])}
    t.eq(sorted(users), ["carol", "dave", "erin", "rita"], "the roster created four users")
    for name, role in [("carol", "student"), ("dave", "ta"), ("erin", "student"),
                       ("rita", "runner")]:
        tok = (users.get(name) or {}).get("token") or ""
        t.ok(re.fullmatch(re.escape(PREFIX[role]) + r"[0-9a-f]{64}", tok),
             "%s's token is %s + 64 hex" % (name, PREFIX[role]), tok)
        s.tok[name] = tok
    me = s.get("/api/me", token="carol").json() or {}
    t.eq(me.get("display_name"), "Doe, Carol", "a quoted CSV field with a comma is kept whole")
    me = s.get("/api/me", token="erin").json() or {}
    t.eq(me.get("display_name"), "Érin Ünïcode", "UTF-8 display names survive")
    me = s.get("/api/me", token="dave").json() or {}
    t.ok(me.get("role") == "ta" and me.get("display_name") == 'Dave "the TA" Jones',
         "dave is a ta; a doubled quote in a quoted field is one quote", me)

    # --- tokens are stored hashed only
    with open(s.db, "rb") as f:
        blob = f.read()
    wal = s.db + "-wal"
    if os.path.exists(wal):
        with open(wal, "rb") as f:
            blob += f.read()
    leaked = [n for n, tk in s.tok.items() if len(tk) > 20 and tk[4:].encode() in blob]
    t.eq(leaked, [], "no clear token appears in the database file or its WAL")

    # --- an existing name is not re-created or promoted
    r = s.post("/api/admin/users", token="admin",
               json_body={"users": [{"name": "alice_q7", "role": "admin"}]})
    t.ok(400 <= r.status < 500 and r.error() is not None,
         "adding an existing user name again is a 4xx JSON error (409 expected)", r.brief())
    me = s.get("/api/me", token="alice_q7")
    t.ok(me.status == 200 and (me.json() or {}).get("role") == "student",
         "...and alice keeps her role and her token still works", me.brief())

    # --- rubric versions
    r = s.get("/api/admin/labs/vadd/rubric", token="admin")
    j = r.json() or {}
    t.ok(r.status == 200 and j.get("version") == 1 and (j.get("rubric") or {}).get("lab") == "vadd",
         "GET rubric: version 1, the file's document", r.brief())
    with open(os.path.join(FIXTURES, "rubrics", "vadd.json")) as f:
        rub = json.load(f)
    rub["correctness"][0]["points"] = 15
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=rub)
    t.ok(r.status == 200 and (r.json() or {}).get("version") == 2,
         "PUT an edited rubric: 200 {version: 2}", r.brief())
    j = s.get("/api/admin/labs/vadd/rubric", token="admin").json() or {}
    t.ok(j.get("version") == 2 and j["rubric"]["correctness"][0]["points"] == 15,
         "GET rubric now returns version 2 with the edit", j)
    bad = json.loads(json.dumps(rub))
    bad["lab"] = "other"
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=bad)
    t.error(r, 400, None, "PUT a rubric whose lab field names another lab")
    bad = json.loads(json.dumps(rub))
    bad["correctness"][0]["case"] = "no-such-case"
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=bad)
    t.error(r, 400, None, "PUT a rubric naming a case the lab does not have")
    t.ok("no-such-case" in ((r.error() or {}).get("message") or "")
         or "case" in ((r.error() or {}).get("message") or ""),
         "...and the message names the case", r.brief())
    r = s.put("/api/admin/labs/nosuch/rubric", token="admin", json_body=rub)
    t.error(r, 404, "not_found", "PUT a rubric for an unknown lab")
    j = s.get("/api/admin/labs/vadd/rubric", token="admin").json() or {}
    t.eq(j.get("version"), 2, "refused PUTs did not create versions")

    r = s.submit("vadd", kernel("v2"), token="carol")
    cid = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    t.ok(job.get("id") == cid and job.get("rubric_version") == 2
         and ((job.get("rubric") or {}).get("correctness") or [{}])[0].get("points") == 15,
         "a claim after the edit carries rubric_version 2 and the edited rubric",
         {k: job.get(k) for k in ("id", "rubric_version")})
    run.result(cid, "graded", canned_result(job, score=50, speedup=1.0))
    t.eq((s.submission(cid) or {}).get("rubric_version"), 2,
         "the graded submission records rubric_version 2")

    # --- a rubric edit moves the deadline
    closed = json.loads(json.dumps(rub))
    closed["due"] = "2020-02-01T23:59:00Z"
    closed["late"] = {"policy": "accept", "hard_deadline": "2020-02-03T23:59:00Z",
                      "penalty_percent_per_day": 10}
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=closed)
    t.status(r, 200, "PUT a rubric whose hard deadline has passed")
    r = s.submit("vadd", kernel("after edit"), token="erin")
    t.error(r, 403, "deadline_passed", "submissions are refused after that edit")
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=rub)
    r = s.submit("vadd", kernel("reopened"), token="erin")
    t.status(r, 202, "and accepted again after the deadline is moved back")
    eid_first = (r.json() or {}).get("id")

    # --- scoreboard order: best per student, then speedup, then earliest
    # carol: 50 @ 1.0 (graded above).  erin: 50 @ 2.0.  bob: 30 then 50 @ 2.0
    # (later than erin).  alice: 50 @ 0.5 then 20 @ 9.9.
    def grade_next(expect_id, score, speedup):
        jb = run.claim(wait=2) or {}
        t.eq(jb.get("id"), expect_id, "runner claims submission %s" % expect_id)
        if jb:
            run.result(jb["id"], "graded", canned_result(jb, score=score, speedup=speedup))
    grade_next(eid_first, 50, 2.0)
    ids = {}
    # Each graded before the next: a second one queued beside the first
    # would supersede it.
    for who, tag, score, speedup in [("bob_z3", "b1", 30, 5.0), ("bob_z3", "b2", 50, 2.0),
                                     ("alice_q7", "a1", 50, 0.5), ("alice_q7", "a2", 20, 9.9)]:
        r = s.submit("vadd", kernel(tag), token=who)
        ids[tag] = (r.json() or {}).get("id")
        t.status(r, 202, "submission %s by %s accepted" % (tag, who))
        grade_next(ids[tag], score, speedup)
    r = s.get("/api/labs/vadd/scoreboard", token="tina_ta")
    rows = (r.json() or {}).get("rows") or []
    order = [(x.get("user"), x.get("score"), x.get("speedup"), x.get("submission"))
             for x in rows]
    want = [("erin", 50, 2.0, eid_first), ("bob_z3", 50, 2.0, ids["b2"]),
            ("carol", 50, 1.0, cid), ("alice_q7", 50, 0.5, ids["a1"])]
    t.eq(order, want, "scoreboard: best score per student, ties by speedup then earliest")
    t.eq([x.get("rank") for x in rows], [1, 2, 3, 4], "ranks are 1..4")

    r = s.get("/api/labs/vadd/scoreboard?format=csv", token="tina_ta")
    recs = list(csv.DictReader(io.StringIO(r.body.decode("utf-8", "replace"))))
    names = {x.get("user"): x.get("display_name") for x in recs}
    t.ok(names.get("carol") == "Doe, Carol" and names.get("erin") == "Érin Ünïcode",
         "scoreboard CSV quotes a display name with a comma and keeps UTF-8", names)

    # --- late penalty: far past due, the stored score is penalised, never negative
    r = s.submit("late", kernel("late"), token="carol")
    lid = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), lid, "runner claims the late submission")
    if job:
        run.result(lid, "graded", canned_result(job, score=72.5))
    o = s.submission(lid) or {}
    sc = o.get("score")
    t.ok(o.get("late") is True and isinstance(sc, (int, float)) and 0 <= sc < 72.5,
         "a late submission's stored score is penalised (0 <= score < 72.5)",
         {k: o.get(k) for k in ("late", "score", "max_score")})

    # --- grades export
    r = s.get("/api/admin/export/grades.csv", token="admin")
    body = r.body.decode("utf-8", "replace")
    recs = list(csv.DictReader(io.StringIO(body)))
    carol = [x for x in recs if x.get("user") == "carol" and x.get("lab") == "vadd"]
    t.ok(carol and carol[0].get("display_name") == "Doe, Carol"
         and float(carol[0].get("score") or -1) == 50 and carol[0].get("submission") == str(cid),
         "grades.csv: carol's vadd row, quoted name, score 50, her submission", body[:600])
    late = [x for x in recs if x.get("user") == "carol" and x.get("lab") == "late"]
    t.ok(late and late[0].get("late") in ("1", "true", "yes"),
         "grades.csv marks the late lab row late", late)
    t.ok((r.header("content-type") or "").startswith("text/csv"), "grades.csv is text/csv",
         r.header("content-type"))

    # --- regrade of an unknown submission
    r = s.post("/api/admin/submissions/999999/regrade", token="admin")
    t.error(r, 404, "not_found", "regrade of an unknown submission")


t = Tap()
require_binary(t)
t.run(main)
t.exit()

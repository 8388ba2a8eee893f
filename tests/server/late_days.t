#!/usr/bin/env python3
# Pooled late days (docs/late-days.md): the admin sets the course default and
# grants more days (audited, admins only); a late submission spends whole
# days (rounded up, from the student's own deadline, an extension included)
# before any penalty; a lab is charged once, not per submission; the preview
# (GET /api/labs/{lab}/late-days) and the 202 say what it costs; days past the
# pool are penalised; a superseded submission gives its days back; the grades
# export carries lab_late_days, late_days_used and late_days_remaining.
import csv
import io
import os
import sqlite3
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402
from fake_runner import canned_result  # noqa: E402

DAY = 86400


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def extend(s, t, user, lab, due):
    r = s.post("/api/admin/extensions", token="admin",
               json_body={"user": user, "lab": lab, "due": iso(due)})
    t.status(r, 200, "extension for %s in %s: due %s" % (user, lab, iso(due)))


def grade(s, run, sid, score=72.5):
    """Claim jobs until sid comes, grade it with score."""
    for _ in range(10):
        job = run.claim(wait=2) or {}
        if not job:
            break
        run.result(job["id"], "graded", canned_result(job, score=score))
        if job["id"] == sid:
            return s.wait_status(sid, "graded")
    return None


def audit_rows(s, action):
    db = sqlite3.connect(s.db)
    try:
        return db.execute("SELECT actor_user_id, target, detail FROM audit_log WHERE action = ?",
                          (action,)).fetchall()
    finally:
        db.close()


def main(t):
    s = Server(labs=["vadd", "late"], tap=t)
    run = s.runner()
    now = time.time()

    # --- the budget: default 0, set by admins only, audited
    r = s.get("/api/me/late-days", token="alice_q7")
    t.status(r, 200, "a student reads their own pool")
    t.eq((r.json() or {}).get("budget"), 0, "the default budget is 0 until an admin sets one")
    r = s.put("/api/admin/late-days", token="alice_q7", json_body={"default_days": 9})
    t.error(r, 403, "forbidden", "a student cannot set the default budget")
    r = s.put("/api/admin/late-days", token="tina_ta", json_body={"default_days": 9})
    t.error(r, 403, "forbidden", "a TA cannot set the default budget")
    r = s.put("/api/admin/late-days", token="admin", json_body={"default_days": -1})
    t.error(r, 400, "bad_request", "a negative default is refused")
    r = s.put("/api/admin/late-days", token="admin", json_body={"default_days": 3})
    t.status(r, 200, "the admin sets the default to 3")
    t.eq((r.json() or {}).get("default_days"), 3, "the answer shows the new default")
    t.ok(any("default_days=3" in (d or "") for _, _, d in audit_rows(s, "late_days_default")),
         "the default is in the audit log", audit_rows(s, "late_days_default"))
    r = s.get("/api/admin/late-days")
    t.error(r, 401, "unauthorized", "anonymous cannot list late days")
    r = s.get("/api/admin/late-days", token="alice_q7")
    t.error(r, 403, "forbidden", "a student cannot list everyone's late days")
    r = s.get("/api/admin/late-days", token="tina_ta")
    bob = [x for x in (r.json() or {}).get("students", []) if x.get("user") == "bob_z3"]
    t.ok(r.status == 200 and bob and bob[0].get("remaining") == 3,
         "a TA lists every student's pool (bob has 3 left)", r.brief())

    # --- grants: admins only, with a reason, audited
    r = s.post("/api/admin/late-days/grants", token="tina_ta",
               json_body={"user": "bob_z3", "days": 2, "reason": "illness"})
    t.error(r, 403, "forbidden", "a TA cannot grant late days")
    r = s.post("/api/admin/late-days/grants", token="admin",
               json_body={"user": "bob_z3", "days": 2})
    t.error(r, 400, "bad_request", "a grant without a reason is refused")
    r = s.post("/api/admin/late-days/grants", token="admin",
               json_body={"user": "nobody", "days": 2, "reason": "x"})
    t.error(r, 404, "not_found", "a grant to an unknown user is 404")
    r = s.post("/api/admin/late-days/grants", token="admin",
               json_body={"user": "bob_z3", "days": 2, "reason": "doctor's note, week 5"})
    t.status(r, 201, "the admin grants bob 2 more days")
    t.eq(((r.json() or {}).get("budget"), (r.json() or {}).get("remaining")), (5, 5),
         "bob's budget is now 3 + 2 = 5")
    g = audit_rows(s, "late_days_grant")
    t.ok(any(tg == "bob_z3" and "days=2" in d and "doctor" in d for _, tg, d in g),
         "the grant is in the audit log with its reason", g)
    r = s.get("/api/me/late-days?user=bob_z3", token="alice_q7")
    t.error(r, 404, "not_found", "a student cannot read another student's pool")

    # --- preview before submitting late: 1.5 days after alice's own due = 2 days
    extend(s, t, "alice_q7", "vadd", now - 1.5 * DAY)
    r = s.get("/api/labs/vadd/late-days", token="alice_q7")
    q = r.json() or {}
    t.status(r, 200, "the preview answers")
    t.eq((q.get("late"), q.get("days_late"), q.get("late_days_used"), q.get("late_days_remaining"),
          q.get("late_penalty_days")), (True, 2, 2, 1, 0),
         "preview: 1.5 days late counts as 2 whole days, all covered by the pool", q)
    t.ok("will use 2 of your 3 remaining late days" in q.get("message", ""),
         "preview message: 'will use 2 of your 3 remaining late days'", q.get("message"))
    r = s.get("/api/labs/vadd/late-days", token="bob_z3")
    t.eq((r.json() or {}).get("late"), False, "bob (no extension, due in 2099) is not late")

    # --- the submission spends them; the 202 says so
    r = s.submit("vadd", kernel("late-1"))
    j = r.json() or {}
    t.status(r, 202, "alice's late submission is accepted")
    t.eq((j.get("late"), j.get("late_days_used"), j.get("late_days_remaining"),
          j.get("late_penalty_days")), (True, 2, 1, 0),
         "the 202 says: late, 2 days used, 1 left, no penalty days", j)
    first = j.get("id")
    # A second one while the first is still queued supersedes it: the
    # superseded one's days come back, and the new one spends them.
    r = s.submit("vadd", kernel("late-2"))
    j = r.json() or {}
    second = j.get("id")
    t.eq((j.get("superseded"), j.get("late_days_used"), j.get("late_days_remaining")), (1, 2, 1),
         "a resubmission that supersedes the queued one spends the same 2 days, not 4", j)
    o = s.submission(first) or {}
    t.eq(o.get("status"), "superseded", "the first (still queued) was superseded")
    o = grade(s, run, second) or {}
    t.eq(o.get("score"), 72.5, "the covered submission is graded with no late penalty", o)
    t.eq((o.get("late_days_pooled"), o.get("late_penalty_percent")), (2, 0),
         "its JSON says 2 pooled days, 0% penalty", o)
    # Another late submission to the same lab after a graded one: the lab is
    # charged once.
    r = s.submit("vadd", kernel("late-3"))
    j = r.json() or {}
    third = j.get("id")
    t.eq((j.get("late_days_used"), j.get("late_days_remaining"), j.get("late_penalty_days")),
         (0, 1, 0), "a third late submission to the same lab spends nothing more", j)
    r = s.get("/api/me/late-days", token="alice_q7")
    me = r.json() or {}
    t.eq((me.get("used"), me.get("remaining"), me.get("labs")), (2, 1, {"vadd": 2}),
         "alice's pool: 2 used on vadd (once), 1 left", me)
    o = grade(s, run, third) or {}
    t.eq(o.get("score"), 72.5, "the third is covered by the lab's charge too", o)

    # --- past the pool: 4 days late with 1 left -> 1 covered, 3 penalised (30%)
    extend(s, t, "alice_q7", "late", now - 3.2 * DAY)
    r = s.get("/api/labs/late/late-days", token="alice_q7")
    q = r.json() or {}
    t.eq((q.get("days_late"), q.get("late_days_used"), q.get("late_penalty_days")), (4, 1, 3),
         "preview: 4 days late, the last day of the pool, 3 penalised", q)
    t.ok("last 1 late day" in q.get("message", "") and "30%" in q.get("message", ""),
         "the preview names the last day and the 30% penalty", q.get("message"))
    r = s.submit("late", kernel("late-3"))
    j = r.json() or {}
    t.eq((j.get("late_days_used"), j.get("late_days_remaining"), j.get("late_penalty_days")),
         (1, 0, 3), "the 202: 1 used, 0 left, 3 penalty days", j)
    o = grade(s, run, j.get("id")) or {}
    t.ok(abs((o.get("score") or 0) - 72.5 * 0.7) < 1e-6,
         "its score is 72.5 less 30%% (3 uncovered days at 10%%/day): %s" % o.get("score"), o)
    spent = audit_rows(s, "late_days_spent")
    t.ok(len(spent) == 3 and all(a for a, _, _ in spent)
         and "spent=1 remaining=0" in spent[-1][2],
         "each spend of new days is in the audit log under the student", spent)

    # --- an extension moves the point days count from
    extend(s, t, "alice_q7", "late", now + 2 * DAY)
    r = s.get("/api/labs/late/late-days", token="alice_q7")
    t.eq((r.json() or {}).get("late"), False, "after a later extension the lab is not late")

    # --- the grades export
    r = s.get("/api/admin/export/grades.csv", token="admin")
    body = r.body.decode()
    t.ok(body.startswith("user,display_name,lab,score,max_score,late,submission,lab_late_days,"
                         "late_days_used,late_days_remaining"),
         "grades.csv has the late-day columns", body[:200])
    recs = {(x["user"], x["lab"]): x for x in csv.DictReader(io.StringIO(body))}
    a = recs.get(("alice_q7", "vadd")) or {}
    b = recs.get(("alice_q7", "late")) or {}
    t.eq((a.get("lab_late_days"), a.get("late_days_used"), a.get("late_days_remaining")),
         ("2", "3", "0"), "alice's vadd row: 2 days on vadd, 3 used in all, 0 left", a)
    t.eq(b.get("lab_late_days"), "1", "alice's late-lab row: 1 day charged there", b)


if __name__ == "__main__":
    t = Tap()
    require_binary(t)
    t.run(main)
    t.exit()

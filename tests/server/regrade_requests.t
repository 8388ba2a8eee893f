#!/usr/bin/env python3
# Regrade requests (docs/api-course.md): a student asks about their own graded
# submission with a reason (required, at most 2000 characters), one open
# request per submission; another student, an anonymous client and a runner
# can neither read nor answer it; a TA lists the inbox (open first, filters),
# answers, and regrades (requeue) or overrides in the same step; the student
# reads the answer in the request and in the submission's JSON; every step is
# in the audit log.
import os
import sqlite3
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402
from fake_runner import canned_result  # noqa: E402


def graded(s, run, token, tag, score=60.0):
    r = s.submit("vadd", kernel(tag), token=token)
    sid = (r.json() or {}).get("id")
    job = run.claim(wait=2) or {}
    run.result(job.get("id"), "graded", canned_result(job, score=score))
    s.wait_status(sid, "graded")
    return sid


def audit(s, action):
    db = sqlite3.connect(s.db)
    try:
        return db.execute("SELECT actor_user_id, target, detail FROM audit_log WHERE action = ?"
                          " ORDER BY id", (action,)).fetchall()
    finally:
        db.close()


def main(t):
    s = Server(labs=["vadd"], tap=t)
    run = s.runner()
    a1 = graded(s, run, "alice_q7", "a1")
    a2 = graded(s, run, "alice_q7", "a2", score=40.0)
    b1 = graded(s, run, "bob_z3", "b1")
    path = "/api/submissions/%d/regrade-requests"

    # --- asking
    r = s.post(path % a1, token="alice_q7", json_body={"reason": "   "})
    t.error(r, 400, "bad_request", "a blank reason is refused")
    t.ok("say what you think" in ((r.error() or {}).get("message") or ""),
         "...with a sentence saying what to write", r.brief())
    r = s.post(path % a1, token="alice_q7", json_body={"reason": "é" * 2001})
    t.error(r, 400, "bad_request", "a reason over 2000 characters is refused")
    r = s.post(path % b1, token="alice_q7", json_body={"reason": "mine now"})
    t.error(r, 404, "not_found", "a student cannot ask about another student's submission")
    r = s.post(path % a1, token="tina_ta", json_body={"reason": "x"})
    t.error(r, 403, "forbidden", "staff do not open requests")
    r = s.post(path % a1, json_body={"reason": "x"})
    t.error(r, 401, "unauthorized", "anonymous cannot ask")
    reason = "The big case <script>alert(1)</script> failed on a tolerance of 1e-6; " + "é" * 100
    r = s.post(path % a1, token="alice_q7", json_body={"reason": reason})
    t.status(r, 201, "alice asks about her graded submission")
    req = r.json() or {}
    rid = req.get("id")
    t.eq((req.get("status"), req.get("reason"), req.get("submission"), req.get("answer")),
         ("open", reason, a1, None), "the request is open, with her reason verbatim", req)
    r = s.post(path % a1, token="alice_q7", json_body={"reason": "again"})
    t.error(r, 409, "conflict", "a second open request for the same submission is refused")
    r = s.post(path % a2, token="alice_q7", json_body={"reason": "this one too"})
    t.status(r, 201, "another submission may have its own request")
    rid2 = (r.json() or {}).get("id")
    # The limit counts characters, not bytes: 2000 two-byte characters
    # (4000 bytes) are within it, where 2001 were refused above.
    r = s.post(path % b1, token="bob_z3", json_body={"reason": "é" * 2000})
    rid_b = (r.json() or {}).get("id")
    t.status(r, 201, "bob asks about his, with a reason of exactly 2000 characters (4000 bytes)")
    got = (r.json() or {}).get("reason") or ""
    t.ok(got == "é" * 2000, "...kept whole", "%d characters back" % len(got))
    r = s.submit("vadd", kernel("queued"), token="bob_z3")
    r = s.post(path % (r.json() or {}).get("id"), token="bob_z3", json_body={"reason": "x"})
    t.error(r, 409, "not_graded", "a request about a submission that is not graded is refused")
    t.ok(any(str(rid) in tg and "reason=" in d for _, tg, d in audit(s, "regrade_request")),
         "opening a request is in the audit log", audit(s, "regrade_request"))

    # --- who may read
    r = s.get("/api/regrade-requests/%d" % rid, token="bob_z3")
    t.error(r, 404, "not_found", "another student cannot read alice's request")
    r = s.get("/api/regrade-requests/%d" % rid)
    t.error(r, 401, "unauthorized", "anonymous cannot read a request")
    r = s.get("/api/regrade-requests/%d" % rid, token="runner1")
    t.error(r, 403, "forbidden", "a runner token cannot read a request")
    r = s.get("/api/regrade-requests", token="bob_z3")
    ids = [x.get("id") for x in (r.json() or {}).get("requests", [])]
    t.eq(ids, [rid_b], "a student's list holds only their own requests")
    r = s.get(path % a1, token="bob_z3")
    t.ok(r.status in (403, 404), "another student cannot list a submission's requests", r.brief())
    r = s.get("/api/regrade-requests/%d" % rid, token="tina_ta")
    t.eq((r.json() or {}).get("reason"), reason, "a TA reads the request")

    # --- ids: one rule on every route (api_parse_id): plain digits, no sign,
    # no leading zero, at most 18 digits; anything else names no row (404)
    t.status(s.get("/api/submissions/%d" % a1, token="alice_q7"), 200,
             "GET /api/submissions/<id>: the plain spelling of an id")
    t.status(s.get(path % a1, token="alice_q7"), 200,
             "GET /api/submissions/<id>/regrade-requests: the plain spelling of an id")
    t.status(s.get("/api/regrade-requests/%d" % rid, token="alice_q7"), 200,
             "GET /api/regrade-requests/<rid>: the plain spelling of an id")
    for bad in ["0%d", "00%d", "+%d", "%d ", "-%d"]:
        for url in ["/api/submissions/" + bad, "/api/submissions/" + bad + "/regrade-requests",
                    "/api/regrade-requests/" + bad.replace("%d", str(rid)).replace("%", "%%")]:
            u = url % a1 if "%d" in url else url
            r = s.get(u.replace(" ", "%20"), token="alice_q7")
            t.error(r, 404, "not_found", "GET %r as the owner: not an id, 404" % u)
    for u in ["/api/submissions/0", "/api/regrade-requests/0",
              "/api/submissions/1000000000000000000", "/api/regrade-requests/1000000000000000000"]:
        t.error(s.get(u, token="alice_q7"), 404, "not_found", "GET %s: not an id, 404" % u)
    r = s.post(("/api/regrade-requests/0%d/answer" % rid), token="tina_ta",
               json_body={"answer": "x", "action": "none"})
    t.error(r, 404, "not_found", "answering /api/regrade-requests/0<rid>: not an id, 404")
    r = s.post("/api/submissions/0%d/regrade-requests" % a1, token="alice_q7",
               json_body={"reason": "x"})
    t.error(r, 404, "not_found", "asking at /api/submissions/0<id>/regrade-requests: 404")

    # --- who may answer
    ans = "/api/regrade-requests/%d/answer"
    r = s.post(ans % rid, token="alice_q7", json_body={"answer": "granted!", "action": "none"})
    t.error(r, 403, "forbidden", "a student cannot answer (not even their own)")
    r = s.post(ans % rid, token="bob_z3", json_body={"answer": "granted!", "action": "none"})
    t.error(r, 403, "forbidden", "another student cannot answer")
    r = s.post(ans % rid, json_body={"answer": "granted!"})
    t.error(r, 401, "unauthorized", "anonymous cannot answer")
    r = s.post(ans % rid, token="tina_ta", json_body={"answer": "", "action": "none"})
    t.error(r, 400, "bad_request", "an empty answer is refused")
    r = s.post(ans % rid, token="tina_ta", json_body={"answer": "ok", "action": "override"})
    t.error(r, 400, "bad_request", "an override without a score is refused")
    r = s.post(ans % rid, token="tina_ta", json_body={"answer": "ok", "action": "delete"})
    t.error(r, 400, "bad_request", "an unknown action is refused")

    # --- the inbox: open first, filters
    r = s.get("/api/regrade-requests?status=open", token="tina_ta")
    got = [x.get("id") for x in (r.json() or {}).get("requests", [])]
    t.eq(sorted(got), sorted([rid, rid2, rid_b]), "the TA's inbox holds all three open requests")
    r = s.get("/api/regrade-requests?user=bob_z3", token="tina_ta")
    t.eq([x.get("id") for x in (r.json() or {}).get("requests", [])], [rid_b],
         "the inbox filters by student")
    r = s.get("/api/regrade-requests?status=bogus", token="tina_ta")
    t.error(r, 400, "bad_request", "an unknown status filter is refused")

    # --- answer with an override
    r = s.post(ans % rid, token="tina_ta",
               json_body={"answer": "You are right: <b>85</b>.", "action": "override",
                          "score": 85})
    t.status(r, 200, "the TA answers with an override")
    j = r.json() or {}
    t.eq((j.get("status"), j.get("action"), j.get("new_score"), j.get("answered_by")),
         ("answered", "override", 85.0, "tina_ta"), "the request is answered by tina, score 85", j)
    o = s.submission(a1, token="alice_q7") or {}
    t.eq((o.get("score"), o.get("overridden")), (85.0, True), "alice's score is now 85")
    rr = o.get("regrade_requests") or [{}]
    t.eq((rr[0].get("answer"), rr[0].get("status")), ("You are right: <b>85</b>.", "answered"),
         "the submission's JSON carries the answer for the student", o.get("regrade_requests"))
    r = s.post(ans % rid, token="tina_ta", json_body={"answer": "again", "action": "none"})
    t.error(r, 409, "conflict", "an answered request cannot be answered twice")
    r = s.post(path % a1, token="alice_q7", json_body={"reason": "one more thing"})
    t.status(r, 201, "after the answer, the student may open a new request")
    r = s.get("/api/regrade-requests?status=all", token="tina_ta")
    st = [x.get("status") for x in (r.json() or {}).get("requests", [])]
    t.ok(st and st.index("answered") > max(i for i, x in enumerate(st) if x == "open"),
         "in the full list open requests come first", st)

    # --- answer with a regrade (requeue)
    r = s.post(ans % rid2, token="tina_ta",
               json_body={"answer": "Requeued with the fixed tolerance.", "action": "regrade"})
    t.status(r, 200, "the TA answers with a regrade")
    o = s.submission(a2) or {}
    t.eq(o.get("status"), "queued", "the submission is back in the queue")
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), a2, "the runner claims it again")
    r = s.post(ans % rid_b, token="admin", json_body={"answer": "The grade stands."})
    t.status(r, 200, "an admin answers too (no action: the score stays)")
    ans_log = audit(s, "regrade_answer")
    t.ok(len(ans_log) == 3 and any("action=override" in d for _, _, d in ans_log)
         and any("action=regrade" in d for _, _, d in ans_log),
         "each answer is in the audit log with its action", ans_log)
    t.ok(any("regrade request #%d" % rid in d for _, _, d in audit(s, "override")),
         "the override names the request it answers", audit(s, "override"))
    t.ok(audit(s, "regrade"), "the requeue is in the audit log")


if __name__ == "__main__":
    t = Tap()
    require_binary(t)
    t.run(main)
    t.exit()

#!/usr/bin/env python3
# Staff forms keep what was typed when they fail (issue 27): an override
# without a reason, and a late-day grant to an unknown student, come back as
# their page (400 / 404) with the problem above the form and the typed
# values still in it, not a dead-end error page; so does a regrade answer
# the API refuses (an override without a score). The regrade pages show one
# date format (UTC with "ago") and scores without trailing zeros. A TA's
# nav links every page a TA may open (the queue, late days). A similarity
# check still running says so, not "No similar pairs.".
import os
import re
import sqlite3
import sys
import time
import urllib.parse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fake_runner import canned_result  # noqa: E402

CU = b"__global__ void k(float* x) { x[0] = 1; }\n"


def form_post(s, ck, page, action, fields):
    html = s.get(page, headers=ck).body.decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    body = urllib.parse.urlencode(dict(fields, csrf=csrf)).encode()
    return s.post(action, body=body, headers=dict(ck, **{
        "Content-Type": "application/x-www-form-urlencoded"}))


def main(t):
    s = Server(labs=["vadd"], tap=t)
    sid = (s.submit("vadd", CU, filename="k.cu").json() or {}).get("id")
    sess, _ = s.login("tina_ta")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    r = form_post(s, ck, "/submissions/%s" % sid, "/submissions/%s/override" % sid,
                  {"score": "87.5", "reason": "  "})
    page = r.body.decode()
    t.eq(r.status, 400, "an override without a reason: 400")
    t.ok('id="override-problem"' in page and "needs a reason" in page,
         "...the submission page again, the problem above the form", page[-3000:])
    t.ok(re.search(r'id="ov-score"[^>]*value="87\.5"', page),
         "...with the typed score still in the form")

    run = s.runner()
    sid2 = (s.submit("vadd", CU + b"// 2\n", filename="k2.cu").json() or {}).get("id")
    job = run.claim(wait=2) or {}      # sid2 superseded the queued first one
    run.result(job.get("id"), "graded", canned_result(job, score=20.0, max_score=20.0))
    s.wait_status(sid2, "graded")
    r = s.post("/api/submissions/%s/regrade-requests" % sid2, token="alice_q7",
               json_body={"reason": "the big case"})
    rid = (r.json() or {}).get("id")
    r = form_post(s, ck, "/regrades/%s" % rid, "/regrades/%s/answer" % rid,
                  {"answer": "You are right, see <here>", "action": "override", "score": ""})
    page = r.body.decode()
    t.eq(r.status, 400, "a regrade answer 'override' without a score: 400", page[:2000])
    t.ok('id="problem"' in page and "You are right, see &lt;here&gt;</textarea>" in page
         and re.search(r'value="override" checked', page),
         "...the request page again with the typed answer and action kept", page[-3000:])
    t.ok("score 20 / 20" in page and "20.00" not in page, "...its score without trailing zeros")
    t.ok(re.search(r"asked <time datetime=\"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\"", page)
         and not re.search(r">[^<]*\d{4}-\d\d-\d\dT\d\d:", page),
         "...and its date in the pages' one format (ISO only in the datetime attribute), "
         "not raw ISO", page[:3000])

    r = form_post(s, ck, "/submissions/%s" % sid2, "/submissions/%s/override" % sid2,
                  {"score": "18", "reason": "late grace"})
    page = s.get("/submissions/%s" % sid2, headers=ck).body.decode()
    t.ok(re.search(r'<table class="overrides">.*?<td class="num">18</td>', page, re.S)
         and "18.00" not in page, "the override history shows 18, not 18.00", page[-3000:])

    html = s.get("/labs", headers=ck).body.decode()
    nav = re.search(r"<nav.*?</nav>", html, re.S)
    nav = nav.group(0) if nav else ""
    t.ok('href="/admin/queue"' in nav and 'href="/admin/late-days"' in nav,
         "a TA's nav links the queue and late-days pages", nav)
    t.eq([s.get(u, headers=ck).status for u in ("/admin/queue", "/admin/late-days")], [200, 200],
         "...which a TA may open")

    db = sqlite3.connect(s.db, timeout=10)
    db.execute("INSERT INTO similarity_runs(lab, status, tool, files, started_at)"
               " VALUES('vadd', 'running', 'sim_c', 2, ?)", (time.time(),))
    db.commit()
    db.close()
    page = s.get("/labs/vadd/similarity", headers=ck).body.decode()
    t.ok('id="sim-running"' in page and "No similar pairs" not in page,
         "similarity: a running check says so, not 'No similar pairs.'", page[-2000:])
    t.ok(not re.search(r"started \d{4}-\d\d-\d\dT", page), "...and its start in the pages' date format")

    sess, _ = s.login("admin")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    r = form_post(s, ck, "/admin/late-days", "/admin/late-days/grant",
                  {"user": "nobody_here", "days": "3", "reason": "doctor's note <b>"})
    page = r.body.decode()
    t.ok(r.status in (400, 404), "a grant to an unknown student: 400/404 (%d)" % r.status)
    t.ok('id="problem"' in page and "Grant more days" in page,
         "...the late-days page again with the problem, not a dead end", page[:3000])
    t.ok('value="nobody_here"' in page and 'value="3"' in page
         and "value=\"doctor&#39;s note &lt;b&gt;\"" in page,
         "...with the typed student, days and reason (escaped) kept", page[-4000:])
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

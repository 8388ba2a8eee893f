#!/usr/bin/env python3
# Score first, the profile after (docs/api.md "Runner protocol"): a runner
# posts the verdict with cugrade.profile {"status": "pending"} and a
# profile_key, then POST /api/runner/jobs/ID/profile with the same lease and
# key merges the profile and its hints into the stored result; the score
# never moves. A stale profile (another lease, a wrong key, a regraded
# submission) is refused with 409; posting the same profile twice is fine.
# The result page shows "Profile pending", then the hints.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402
from fake_runner import canned_result  # noqa: E402

KEY = "0123456789abcdef0123456789abcdef"
PROFILE = {"status": "ok", "seconds": 2.5,
           "kernels": [{"name": "fill", "metrics": {"gpu__time_duration.sum": 1000.0}}],
           "hints": [{"id": "uncoalesced_global", "kernel": "fill", "value": 32.0,
                      "text": "PROFILE-HINT-UNCOALESCED: 32 sectors per request"}]}


def post_profile(run, sid, key=KEY, attempt=None, profile=None, extra=None):
    """POST /api/runner/jobs/SID/profile as run (the lease of its claim)."""
    body = {"runner": run.name, "attempt": attempt or run.attempts.get(sid, 1),
            "profile_key": key, "profile": profile or PROFILE,
            "hints": ["CATALOGUE-PROFILE-HINT"]}
    body.update(extra or {})
    return SRV[0].post("/api/runner/jobs/%d/profile" % sid, token=run.token, json_body=body)


SRV = []


SESSION = {}


def page(s, sid):
    if "alice" not in SESSION:
        SESSION["alice"], _ = s.login("alice_q7")
    r = s.get("/submissions/%d" % sid, headers={"Cookie": "cugrade_session=%s" % SESSION["alice"]})
    return r.status, r.body.decode("utf-8", "replace")


def main(t):
    s = Server(labs=["vadd"], tap=t)
    SRV.append(s)
    run = s.runner()
    sid = (s.submit("vadd", kernel("profile later"), token="alice_q7").json() or {}).get("id")
    job = run.claim(wait=2) or {}
    t.eq(job.get("id"), sid, "the runner claims the submission")

    # The verdict first: the profile is pending.
    doc = canned_result(job, score=72.5, max_score=100, speedup=1.37)
    doc["cugrade"]["profile"] = {"status": "pending"}
    r = run.request("POST", "/api/runner/jobs/%d/result" % sid,
                    {"status": "graded", "runner": run.name, "attempt": job.get("attempt", 1),
                     "profile_key": KEY, "result": doc})
    t.status(r, 200, "the verdict is posted with a profile_key: 200")
    o = s.submission(sid, token="alice_q7") or {}
    cg = (o.get("result") or {}).get("cugrade") or {}
    t.ok(o.get("status") == "graded" and o.get("score") == 72.5 and
         (cg.get("profile") or {}).get("status") == "pending",
         "the student sees the score at once, the profile pending", o)
    st, html = page(s, sid)
    t.ok(st == 200 and "Profile pending" in html and "PROFILE-HINT-UNCOALESCED" not in html,
         "the page says the profile is pending", html[-1500:])

    # Refused: another attempt, another key, another runner, a bad body.
    r = post_profile(run, sid, attempt=2)
    t.error(r, 409, "conflict", "a profile naming another attempt is refused (409)")
    r = post_profile(run, sid, key="ffffffffffffffff")
    t.error(r, 409, "conflict", "a profile with another key is refused (409)")
    other = s.runner(runner_name="other-gpu0")
    other.attempts[sid] = 1
    r = post_profile(other, sid)
    t.error(r, 409, "conflict", "another runner's profile is refused (409)")
    r = post_profile(run, sid, key="xyz")
    t.error(r, 400, "bad_request", "a malformed key is refused (400)")
    r = s.post("/api/runner/jobs/%d/profile" % sid, token=run.token,
               json_body={"runner": run.name, "attempt": 1, "profile_key": KEY})
    t.error(r, 400, "bad_request", "a profile update without its profile is refused (400)")
    r = s.post("/api/runner/jobs/%d/profile" % sid, token="alice_q7",
               json_body={"runner": run.name, "attempt": 1, "profile_key": KEY,
                          "profile": PROFILE})
    t.ok(r.status in (401, 403), "a student cannot post a profile", r.brief())
    o = s.submission(sid, token="alice_q7") or {}
    t.eq(((o.get("result") or {}).get("cugrade") or {}).get("profile", {}).get("status"),
         "pending", "...and none of them was stored")

    # The profile: merged into the result; the score stays.
    r = post_profile(run, sid, extra={"score": 0, "max_score": 1})
    t.status(r, 200, "the profile of the verdict's lease and key: 200")
    o = s.submission(sid, token="alice_q7") or {}
    res = o.get("result") or {}
    cg = res.get("cugrade") or {}
    t.ok((cg.get("profile") or {}).get("status") == "ok" and
         cg.get("hints") == ["CATALOGUE-PROFILE-HINT"],
         "the profile and its hints are merged into the stored result", cg)
    t.ok(o.get("score") == 72.5 and res.get("score") == 72.5 and o.get("status") == "graded" and
         (cg.get("timing") or {}).get("speedup") == 1.37,
         "the profile never changes the grade", o)
    st, html = page(s, sid)
    t.ok(st == 200 and "PROFILE-HINT-UNCOALESCED" in html and "Profile pending" not in html,
         "the page shows the profile's hints", html[-1500:])
    r = post_profile(run, sid)
    t.status(r, 200, "the same profile posted again (a retry): 200, idempotent")
    o2 = s.submission(sid, token="alice_q7") or {}
    t.ok(o2.get("result") == res, "...and the stored result is the same", o2.get("result"))

    # A regrade: the old verdict's profile can no longer land.
    r = s.post("/api/admin/submissions/%d/regrade" % sid, token="admin")
    t.status(r, 202, "regrade: 202")
    r = post_profile(run, sid)
    t.error(r, 409, "conflict", "a profile for a regraded (queued) submission is refused (409)")
    job = run.claim(wait=2) or {}
    doc = canned_result(job, score=90)
    doc["cugrade"]["profile"] = {"status": "pending"}
    r = run.request("POST", "/api/runner/jobs/%d/result" % sid,
                    {"status": "graded", "runner": run.name, "attempt": job.get("attempt", 1),
                     "profile_key": "abcdef0123456789", "result": doc})
    t.status(r, 200, "the regrade's verdict, with a key of its own: 200")
    r = post_profile(run, sid)
    t.error(r, 409, "conflict",
            "the first grading's late profile (same runner and attempt, old key) is refused (409)")
    o = s.submission(sid, token="alice_q7") or {}
    t.ok(o.get("score") == 90 and
         (((o.get("result") or {}).get("cugrade") or {}).get("profile") or {}).get("status")
         == "pending", "the regrade's result stays as posted", o)
    r = post_profile(run, sid, key="abcdef0123456789", profile={"status": "skipped",
                     "message": "profile skipped: the GPU stayed busy"})
    t.status(r, 200, "the regrade's own update (a skipped profile): 200")
    st, html = page(s, sid)
    t.ok("profile skipped: the GPU stayed busy" in html and "Profile pending" not in html,
         "the page says why the profile was skipped", html[-1500:])

    # A verdict without a key waits for no profile.
    sid2 = (s.submit("vadd", kernel("no profile"), token="alice_q7").json() or {}).get("id")
    job = run.claim(wait=2) or {}
    run.grade(job, score=50, phases=[])
    r = post_profile(run, sid2)
    t.error(r, 409, "conflict", "a profile for a verdict that named no key is refused (409)")
    r = post_profile(run, 999999)
    t.error(r, 404, "not_found", "a profile for no job: 404")


t = Tap()
require_binary(t)
t.run(main)
t.exit()

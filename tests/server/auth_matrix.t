#!/usr/bin/env python3
# The auth matrix: every endpoint of docs/api.md against every role (the
# owning student, another student, a TA, an admin, a runner), no token, and a
# wrong token.  One check per cell: the status, and for 401/403 the error code.
import json
import http.client
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, FIXTURES  # noqa: E402

COLS = ["owner", "other", "ta", "admin", "runner", "none", "wrong"]
WRONG = "cgs_" + "0123456789abcdef" * 4     # well formed, never issued
HUMANS_OK = lambda ok: [ok, ok, ok, ok, 403, 401, 401]       # noqa: E731
ADMIN_ONLY = lambda ok: [403, 403, 403, ok, 403, 401, 401]   # noqa: E731
STAFF_ONLY = lambda ok: [403, 403, ok, ok, 403, 401, 401]   # noqa: E731
RUNNER_ONLY = lambda ok: [403, 403, 403, 403, ok, 401, 401]  # noqa: E731
OWNER_TA_ADMIN = [200, (403, 404), 200, 200, 403, 401, 401]
PUBLIC = [200] * 7


def main(t):
    s = Server(labs=["vadd"], tap=t)
    token_of = {"owner": s.tok["alice_q7"], "other": s.tok["bob_z3"], "ta": s.tok["tina_ta"],
                "admin": s.tok["admin"], "runner": s.tok["runner1"], "none": None,
                "wrong": WRONG}

    # B: a graded submission (for regrade); A: a queued one (never leased).
    r = s.submit("vadd", kernel("B"))
    b = (r.json() or {}).get("id")
    run = s.runner()
    job = run.claim(wait=2)
    t.ok(job is not None and job.get("id") == b, "setup: the fake runner claims submission B",
         run.last)
    if job:
        t.status(run.grade(job), 200, "setup: the fake runner posts B's result")
    r = s.submit("vadd", kernel("A"))
    a = (r.json() or {}).get("id")
    t.ok(isinstance(a, int) and isinstance(b, int), "setup: two submissions accepted", r.brief())
    s.add_users([("matrix_victim", "student", "Revoked Repeatedly")])
    with open(os.path.join(FIXTURES, "rubrics", "vadd.json")) as f:
        rubric = json.load(f)

    counter = [0]

    def new_user(_col):
        counter[0] += 1
        return {"users": [{"name": "matrix_%d" % counter[0], "role": "student"}]}

    # (method, path, body or a function of the column, expected per column)
    rows = [
        ("GET", "/healthz", None, PUBLIC),
        ("GET", "/metrics", None, [403, 403, 403, 200, 200, 401, 401]),
        ("GET", "/api/me", None, HUMANS_OK(200)),
        ("GET", "/api/labs", None, HUMANS_OK(200)),
        ("GET", "/api/labs/vadd", None, HUMANS_OK(200)),
        ("POST", "/api/labs/vadd/submissions", kernel("matrix"), HUMANS_OK(202)),
        ("GET", "/api/submissions/%d" % a, None, OWNER_TA_ADMIN),
        ("GET", "/api/submissions/%d/source" % a, None, OWNER_TA_ADMIN),
        ("GET", "/api/submissions?lab=vadd", None, HUMANS_OK(200)),
        ("GET", "/api/submissions?lab=vadd&user=alice_q7", None,
         [200, 403, 200, 200, 403, 401, 401]),
        ("GET", "/api/labs/vadd/scoreboard", None, HUMANS_OK(200)),
        ("GET", "/api/labs/vadd/scoreboard?format=csv", None, HUMANS_OK(200)),
        ("POST", "/api/admin/users", new_user, ADMIN_ONLY(201)),
        ("GET", "/api/admin/labs/vadd/rubric", None, ADMIN_ONLY(200)),
        ("PUT", "/api/admin/labs/vadd/rubric", rubric, ADMIN_ONLY(200)),
        ("POST", "/api/admin/submissions/%d/regrade" % b, None, STAFF_ONLY(202)),
        ("GET", "/api/admin/export/grades.csv", None, ADMIN_ONLY(200)),
        ("POST", "/api/admin/users/matrix_victim/revoke", None, ADMIN_ONLY(200)),
        # A is queued and leased by nobody: a runner gets 409 conflict.
        ("POST", "/api/runner/jobs/%d/progress" % a, {"phase": "compiling", "detail": "",
                                                      "runner": "matrix-gpu0", "attempt": 1},
         RUNNER_ONLY(409)),
        ("POST", "/api/runner/jobs/%d/release" % a, {"runner": "matrix-gpu0", "attempt": 1},
         RUNNER_ONLY(409)),
        ("POST", "/api/runner/jobs/%d/result" % a, {"status": "graded", "runner": "matrix-gpu0",
                                                    "attempt": 1, "result": {
            "score": 1, "max_score": 100, "tests": []}}, RUNNER_ONLY(409)),
        ("POST", "/api/runner/claim", {"runner": "matrix-gpu0", "gpu": "fake", "wait": 0},
         RUNNER_ONLY((200, 204))),
    ]
    for method, path, body, want in rows:
        for col, exp in zip(COLS, want):
            b_ = body(col) if callable(body) else body
            headers = {}
            if isinstance(b_, (dict, list)):
                data = json.dumps(b_).encode()
                headers["Content-Type"] = "application/json"
            else:
                data = b_
                if data is not None:
                    headers["Content-Type"] = "application/octet-stream"
            r = s.request(method, path, token=token_of[col], body=data, headers=headers)
            exps = exp if isinstance(exp, tuple) else (exp,)
            good = r.status in exps
            if good and r.status in (401, 403):
                err = r.error() or {}
                good = err.get("code") == ("unauthorized" if r.status == 401 else "forbidden")
            t.ok(good, "%-6s %-45s as %-6s -> %s" % (
                method, path, col, "/".join(map(str, exps))),
                "got %s\n%s" % (r.status, r.brief()))


def cookies(t):
    """The API with the pages' session cookie: reads work; a state change
    without the page's X-CSRF-Token is refused (a cross-site form would
    otherwise submit as the student)."""
    s = Server(labs=["vadd"], tap=t)
    sess, r = s.login(s.tok["alice_q7"])
    t.ok(sess is not None, "a student signs in through POST /login and gets cugrade_session",
         r.brief())
    sc = " | ".join(x for x in r.header_all("set-cookie") if "cugrade_session=" in x)
    t.ok("HttpOnly" in sc and "SameSite=Strict" in sc, "the session cookie is HttpOnly and "
         "SameSite=Strict", sc)
    ck = {"Cookie": "cugrade_session=%s" % sess}
    r = s.get("/api/me", headers=ck)
    t.ok(r.status == 200 and (r.json() or {}).get("name") == "alice_q7",
         "GET /api/me with the session cookie: 200 alice", r.brief())
    r = s.post("/api/labs/vadd/submissions", body=kernel("csrf"),
               headers=dict(ck, **{"Content-Type": "text/plain",
                                   "Origin": "http://evil.example"}))
    t.error(r, 403, "forbidden", "POST a submission with only the session cookie (CSRF)")
    r = s.post("/api/labs/vadd/submissions", body=kernel("csrf"),
               headers=dict(ck, **{"Content-Type": "text/plain", "X-CSRF-Token": "0" * 64}))
    t.error(r, 403, "forbidden", "POST a submission with the cookie and a wrong X-CSRF-Token")
    r = s.get("/api/submissions?lab=vadd", token="admin")
    t.eq((r.json() or {}).get("submissions"), [], "nothing was submitted by the forged requests")
    asess, _ = s.login(s.tok["admin"])
    r = s.post("/api/admin/users", body=b'{"users":[{"name":"mallory","role":"admin"}]}',
               headers={"Cookie": "cugrade_session=%s" % asess,
                        "Content-Type": "application/json"})
    t.error(r, 403, "forbidden", "an admin's cookie alone cannot create users (CSRF)")
    rsess, r = s.login(s.tok["runner1"])
    t.ok(rsess is None, "a runner token cannot sign in to the pages", r.brief())
    r = s.get("/api/me", headers={"Cookie": "cugrade_session=" + "ab" * 32})
    t.error(r, 401, "unauthorized", "a made-up session cookie")
    session_cookie_names(t, s, sess)
    s.cleanup()


def session_cookie_names(t, s, sess):
    """One session cookie is honoured: two of them (whichever comes first,
    in one Cookie header or two) are no session at all. Behind HTTPS the
    cookie is __Host-cugrade_session (Secure, Path=/, no Domain: no sibling
    host or plain-HTTP page can plant one), and only that name counts."""
    bsess, _ = s.login(s.tok["bob_z3"])
    for ck, what in (("cugrade_session=%s; cugrade_session=%s" % (sess, bsess), "alice's then bob's"),
                     ("cugrade_session=%s; cugrade_session=%s" % ("ab" * 32, sess), "a made-up one then alice's"),
                     ("cugrade_session=%s; cugrade_session=%s" % (sess, "ab" * 32), "alice's then a made-up one")):
        r = s.get("/api/me", headers={"Cookie": ck})
        t.error(r, 401, "unauthorized", "two session cookies (%s): no session" % what)
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    c.putrequest("GET", "/api/me")
    c.putheader("Cookie", "cugrade_session=" + sess)
    c.putheader("Cookie", "cugrade_session=" + bsess)
    c.endheaders()
    t.eq(c.getresponse().status, 401, "two session cookies in two Cookie headers: 401")
    c.close()

    https = {"X-Forwarded-Proto": "https"}
    hsess, r = s.login(s.tok["alice_q7"], headers=https)
    sc = " | ".join(r.header_all("set-cookie"))
    t.ok(hsess is not None and re.search(r"(^|\| )__Host-cugrade_session=[0-9a-f]{64}; Path=/;", sc)
         and "Secure" in sc and "Domain" not in sc,
         "behind HTTPS the session cookie is __Host-cugrade_session, Secure, Path=/, no Domain", sc)
    r = s.get("/api/me", headers=dict(https, Cookie="__Host-cugrade_session=%s" % hsess))
    t.ok(r.status == 200 and (r.json() or {}).get("name") == "alice_q7",
         "behind HTTPS, __Host-cugrade_session signs alice in", r.brief())
    r = s.get("/api/me", headers=dict(https, Cookie="cugrade_session=%s" % hsess))
    t.error(r, 401, "unauthorized", "behind HTTPS a plain cugrade_session (planted) is not honoured")
    r = s.get("/api/me", headers=dict(https, Cookie="cugrade_session=%s; __Host-cugrade_session=%s"
                                      % (bsess, hsess)))
    t.eq((r.json() or {}).get("name"), "alice_q7",
         "behind HTTPS, beside a plain cugrade_session, the __Host- one counts")
    ck = dict(https, Cookie="__Host-cugrade_session=%s" % hsess)
    page = s.get("/labs", headers=ck).body.decode("utf-8", "replace")
    m = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    r = s.post("/logout", body=("csrf=%s" % (m.group(1) if m else "")).encode(),
               headers=dict(ck, **{"Content-Type": "application/x-www-form-urlencoded"}))
    sc = " | ".join(r.header_all("set-cookie"))
    t.ok(r.status in (302, 303) and "__Host-cugrade_session=;" in sc,
         "behind HTTPS, sign-out clears __Host-cugrade_session", r.brief() + "\n" + sc)
    r = s.get("/api/me", headers=ck)
    t.error(r, 401, "unauthorized", "behind HTTPS, the signed-out session is over on the server")


t = Tap()
require_binary(t)
t.run(main)
t.run(cookies)
t.exit()

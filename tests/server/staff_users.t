#!/usr/bin/env python3
# Staff need no shell for users and grades (issue 27, item 9). On the Users
# page an admin gives a user a new token (every old one revoked, the new one
# shown once) or revokes every token, with the forms' CSRF check and an
# audit row each; new tokens come with a CSV download. A roster imported
# again updates or keeps the names that exist (role never changed, tokens
# kept) and reports each row, never failing the whole import, from the page
# and from the API. The LMS grades CSV has one row per student (also those
# who never submitted) and one column per lab with the best counted score:
# an override replaces a score, a system error is never a best of 0 / 0
# (nor on the scoreboard and the long CSV: it stores no score); its file is
# named for the day.
import csv
import io
import os
import re
import sqlite3
import sys
import time
import urllib.parse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, TOKEN_RE  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fake_runner import canned_result  # noqa: E402

FORM = "application/x-www-form-urlencoded"


def form_post(s, ck, page, action, fields, csrf=True):
    html = s.get(page, headers=ck).body.decode()
    if csrf:
        fields = dict(fields, csrf=re.search(r'name="csrf" value="([^"]+)"', html).group(1))
    body = urllib.parse.urlencode(fields).encode()
    return s.post(action, body=body, headers=dict(ck, **{"Content-Type": FORM}))


def audit(s, action, target):
    db = sqlite3.connect(s.db, timeout=10)
    try:
        return db.execute("SELECT COUNT(*) FROM audit_log WHERE action = ? AND target = ?",
                          (action, target)).fetchone()[0]
    finally:
        db.close()


def tokens(s, t, ck):
    old = s.tok["alice_q7"]
    page = s.get("/admin/users", headers=ck).body.decode()
    t.ok('action="/admin/users/alice_q7/token"' in page
         and 'action="/admin/users/alice_q7/revoke"' in page,
         "the Users page has a New token and a Revoke form on alice's row", page[-3000:])
    r = form_post(s, ck, "/admin/users", "/admin/users/alice_q7/token", {}, csrf=False)
    t.eq(r.status, 403, "a new token without the form's CSRF token: 403")
    t.status(s.get("/api/me", token=old), 200, "...and alice's token still works")
    r = form_post(s, ck, "/admin/users", "/admin/users/alice_q7/token", {})
    page = r.body.decode()
    t.status(r, 200, "New token for alice: 200")
    m = re.search(r'<span class="token">(cgs_[0-9a-f]{64})</span>', page)
    new = m.group(1) if m else ""
    t.ok(new and new != old, "...the page shows her new token once", page[:3000])
    t.status(s.get("/api/me", token=old), 401, "...her old token no longer works")
    t.status(s.get("/api/me", token=new), 200, "...the new one does")
    t.eq(audit(s, "token_regenerate", "alice_q7"), 1, "...audit-logged as token_regenerate")
    m = re.search(r'<a id="tokens-csv" download="tokens-(\d{4}-\d\d-\d\d)\.csv" '
                  r'href="data:text/csv;charset=utf-8,([^"]+)"', page)
    rows = list(csv.reader(io.StringIO(urllib.parse.unquote(m.group(2))))) if m else []
    t.ok(m and m.group(1) == time.strftime("%Y-%m-%d", time.gmtime()),
         "...with a link that downloads the new tokens as tokens-<today>.csv", page[:3000])
    t.eq(rows, [["name", "role", "token"], ["alice_q7", "student", new]],
         "...the CSV: a header and alice's row with her new token")
    r = form_post(s, ck, "/admin/users", "/admin/users/alice_q7/revoke", {})
    t.ok(r.status == 200 and 'id="done"' in r.body.decode(), "Revoke alice: 200, confirmed",
         r.body.decode()[:2000])
    t.status(s.get("/api/me", token=new), 401, "...her token no longer works")
    t.eq(audit(s, "token_revoke", "alice_q7"), 1, "...audit-logged as token_revoke")
    r = form_post(s, ck, "/admin/users", "/admin/users/nobody/token", {})
    t.ok(r.status == 404 and 'id="problem"' in r.body.decode(),
         "a new token for an unknown name: the Users page with the problem, 404 (%d)" % r.status)


def roster(s, t, ck):
    r = form_post(s, ck, "/admin/users", "/admin/users",
                  {"roster": "name,role,display_name\nada,student,Ada L\n"})
    t.status(r, 201, "a first roster import: 201")
    ada = TOKEN_RE.search(r.body.decode())
    ada = ada.group(0) if ada else ""
    again = ("name,role,display_name\nada,student,Ada Lovelace\nbob_z3,admin,Bob Zebulon\n"
             "zed,student,Zed Young\n")
    r = form_post(s, ck, "/admin/users", "/admin/users", {"roster": again})
    page = r.body.decode()
    t.status(r, 201, "the roster again with two existing names: 201, not a conflict")
    report = re.findall(r'<tr class="(\w+)"><td class="num">(\d+)</td><td>([^<]*)</td>'
                        r'<td>([^<]*)</td>', page)
    t.eq(report, [("updated", "2", "ada", "student"), ("unchanged", "3", "bob_z3", "student"),
                  ("created", "4", "zed", "student")],
         "...a report row per line: ada updated, bob unchanged (still a student), zed created",
         page[:4000])
    t.ok("the roster says admin" in page, "...which says why bob's role stays")
    toks = re.findall(r"<tr><td>([^<]*)</td><td>[^<]*</td><td><span class=\"token\">", page)
    t.eq(toks, ["zed"], "...a new token for zed only")
    me = s.get("/api/me", token=ada).json() or {}
    t.eq(me.get("display_name"), "Ada Lovelace", "...ada's first token still works, her new name")
    t.eq((s.get("/api/me", token="bob_z3").json() or {}).get("role"), "student",
         "...bob is still a student")
    r = s.post("/api/admin/users", token="admin", body=again.encode(),
               headers={"Content-Type": "text/csv"})
    j = r.json() or {}
    t.ok(r.status == 201 and j.get("users") == [] and j.get("unchanged") == 3
         and [x.get("result") for x in j.get("rows", [])] == ["unchanged"] * 3,
         "the API imports the same roster a third time: 201, three rows unchanged", r.brief())


def put_sub(db, user, lab, status, score, max_score, t0, name="k.cu"):
    uid = db.execute("SELECT id FROM users WHERE name = ?", (user,)).fetchone()[0]
    return db.execute(
        "INSERT INTO submissions(user_id, lab, filename, source, sha256, size, status, score,"
        " max_score, rubric_version, created_at, updated_at, graded_at)"
        " VALUES(?, ?, ?, X'00', ?, 1, ?, ?, ?, 1, ?, ?, ?)",
        (uid, lab, name, "%064x" % int(t0 * 1e6), status, score, max_score, t0, t0, t0)).lastrowid


def lms(s, t, ck):
    db = sqlite3.connect(s.db, timeout=10)
    now = time.time()
    a1 = put_sub(db, "alice_q7", "vadd", "graded", 72.5, 100, now)
    put_sub(db, "alice_q7", "vadd", "graded", 60, 100, now + 1)
    put_sub(db, "alice_q7", "pylab", "graded", 50, 100, now + 2, "k.py")
    put_sub(db, "bob_z3", "vadd", "system_error", 0, 0, now + 3)
    put_sub(db, "tina_ta", "vadd", "graded", 100, 100, now + 4)
    db.execute("INSERT INTO overrides(submission_id, score, reason, created_at)"
               " VALUES(?, 81, 'regrade', ?)", (a1, now))
    db.commit()
    db.close()
    page = s.get("/admin/exports", headers=ck).body.decode()
    t.ok('href="/admin/export/grades-lms.csv"' in page, "the exports page links the LMS CSV")
    t.ok('href="/admin/export/grades.csv"' in page, "...beside the long format")
    r = s.get("/admin/export/grades-lms.csv", headers=ck)
    t.status(r, 200, "GET /admin/export/grades-lms.csv: 200")
    t.eq(r.header("content-disposition"),
         'attachment; filename="grades-lms-%s.csv"' % time.strftime("%Y-%m-%d", time.gmtime()),
         "...a file named for today")
    rows = list(csv.reader(io.StringIO(r.body.decode())))
    head = rows[0] if rows else []
    t.ok(head[:2] == ["user", "display_name"] and sorted(head[2:]) == ["pylab", "vadd"],
         "...header: user, display_name, one column per lab", head)
    got = {x[0]: dict(zip(head[2:], x[2:])) for x in rows[1:]}
    t.eq(sorted(got), ["alice_q7", "bob_z3", "carol", "demo"] if "demo" in got
         else ["alice_q7", "bob_z3", "carol"],
         "...one row per student, carol (never submitted) too, no TA", rows)
    t.eq(got.get("alice_q7"), {"vadd": "81", "pylab": "50"},
         "...alice: her best (the override, 81) in vadd, 50 in pylab")
    t.eq(got.get("bob_z3"), {"vadd": "", "pylab": ""},
         "...bob's only vadd submission was a system error: no score, not 0")
    t.eq(got.get("carol"), {"vadd": "", "pylab": ""}, "...carol: empty cells")
    sess, _ = s.login("tina_ta")
    r = s.get("/admin/export/grades-lms.csv", headers={"Cookie": "cugrade_session=%s" % sess})
    t.eq(r.status, 403, "a TA may not export grades")


def system_error_board(t):
    """A submission whose last attempt ends in system_error (the runner's
    document says 0 / 0) is not the student's best of 0 / 0: not on the
    scoreboard, not in the long grades CSV."""
    s = Server(labs=["vadd"], tap=t)
    sid = (s.submit("vadd", b"__global__ void k() {}\n", token="bob_z3").json() or {}).get("id")
    run = s.runner()
    for _ in range(3):       # max_attempts 3: the third one is final
        job = run.claim(wait=2) or {}
        run.result(job.get("id"), "system_error", canned_result(job, score=0.0, max_score=0.0,
                                                                  status="system_error"))
    t.eq((s.wait_status(sid, "system_error") or {}).get("status"), "system_error",
         "bob's submission ends in system_error")
    rows = (s.get("/api/labs/vadd/scoreboard", token="admin").json() or {}).get("rows")
    t.eq(rows, [], "...the scoreboard has no row for him (no best of 0 / 0)")
    body = s.get("/api/admin/export/grades.csv", token="admin").body.decode()
    t.ok("bob_z3" not in body, "...nor the long grades CSV", body)
    s.cleanup()


def main(t):
    users = Server.DEFAULT_USERS + [("carol", "student", "Carol Young")]
    s = Server(labs=["vadd", "pylab"], users=users, tap=t)
    sess, _ = s.login("admin")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    lms(s, t, ck)
    tokens(s, t, ck)
    roster(s, t, ck)
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.run(system_error_board)
t.exit()

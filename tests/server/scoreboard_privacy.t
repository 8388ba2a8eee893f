#!/usr/bin/env python3
# Scoreboard rows a student reads cannot be linked: no submission ids, no
# submit times finer than the day, and a different pseudonym in each lab
# (never the user's global one), in the JSON, the CSV and the page. Staff
# still see names, ids and times. A student finds their own pseudonyms in
# GET /api/me and their own row on the page.
import csv
import io
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402

LABS = ("vadd", "secret")
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIME = re.compile(r"\d{2}:\d{2}")


def main(t):
    s = Server(labs=list(LABS), tap=t)
    run = s.runner()
    ids = {}
    for lab in LABS:
        for who, score in (("alice_q7", 90), ("bob_z3", 40)):
            sid = s.submit(lab, kernel(who + lab), token=who).json()["id"]
            job = run.claim(wait=2)
            run.grade(job, score=score, phases=[])
            ids[(lab, who)] = sid
    users = {u["name"]: u for u in
             (s.get("/api/admin/users", token="admin").json() or {}).get("users", [])}

    boards = {}
    for lab in LABS:
        r = s.get("/api/labs/%s/scoreboard" % lab, token="bob_z3")
        rows = (r.json() or {}).get("rows") or []
        boards[lab] = rows
        t.ok(r.status == 200 and len(rows) == 2, "%s: bob's board has both students" % lab,
             r.brief())
        t.eq(sorted({k for row in rows for k in row}),
             sorted(["rank", "user", "display_name", "score", "max_score", "speedup",
                     "submitted_on"]),
             "%s: a student's rows have no submission id and no submitted_at" % lab)
        t.ok(all(DAY.match(row.get("submitted_on", "")) for row in rows),
             "%s: submitted_on is a day, 2026-12-03, not a time" % lab, rows)
        body = r.body.decode()
        t.ok(not TIME.search(body), "%s: no clock time anywhere in bob's board" % lab, body)
        glob = users["alice_q7"]["pseudonym"]
        t.ok(glob not in body and "alice_q7" not in body,
             "%s: alice shows neither by login nor by her global pseudonym %s" % (lab, glob),
             body)
        staff = (s.get("/api/labs/%s/scoreboard" % lab, token="tina_ta").json() or {})["rows"]
        t.ok(staff[0]["user"] == "alice_q7" and staff[0]["submission"] == ids[(lab, "alice_q7")]
             and "T" in staff[0]["submitted_at"],
             "%s: staff still see names, submission ids and times" % lab, staff[:1])

    a_vadd, a_secret = boards["vadd"][0]["user"], boards["secret"][0]["user"]
    t.ok(a_vadd != a_secret, "alice has a different pseudonym in each lab (%s, %s)"
         % (a_vadd, a_secret))
    t.ok(boards["vadd"][1]["user"] != boards["secret"][1]["user"], "and so has bob")
    me = s.get("/api/me", token="alice_q7").json() or {}
    t.eq(me.get("pseudonyms"), {"vadd": a_vadd, "secret": a_secret},
         "GET /api/me lists alice's pseudonym per lab, the ones on the boards")
    t.ok("pseudonym" not in me, "GET /api/me no longer has a global pseudonym", me)

    # Stable: a new result rebuilds the board; the names stay.
    sid = s.submit("vadd", kernel("again"), token="bob_z3").json()["id"]
    run.grade(run.claim(wait=2), score=50, phases=[])
    rows = (s.get("/api/labs/vadd/scoreboard", token="demo").json() or {})["rows"]
    t.ok([x["user"] for x in rows] == [a_vadd, boards["vadd"][1]["user"]]
         and rows[1]["score"] == 50,
         "pseudonyms are stable across rebuilds and viewers", rows)

    r = s.get("/api/labs/vadd/scoreboard?format=csv", token="bob_z3")
    text = r.body.decode()
    recs = list(csv.DictReader(io.StringIO(text)))
    t.eq(text.splitlines()[0], "rank,user,display_name,score,max_score,speedup,submitted_on",
         "the student CSV's header has no submission and no submitted_at")
    t.ok(len(recs) == 2 and recs[0]["user"] == a_vadd and DAY.match(recs[0]["submitted_on"])
         and not TIME.search(text) and str(sid) not in [x.get("submission") for x in recs],
         "student CSV rows: the lab's pseudonym and the day", text)
    r = s.get("/api/labs/vadd/scoreboard?format=csv", token="tina_ta")
    t.ok(r.body.decode().startswith(
        "rank,user,display_name,score,max_score,speedup,submission,submitted_at"),
        "the staff CSV keeps submission and submitted_at")

    # The page: bob sees no links to others' submissions and no times; alice
    # finds her row (marked, linked to her submission) and her pseudonym.
    bob, _ = s.login("bob_z3")
    html = s.get("/labs/vadd/scoreboard", headers={"Cookie": "cugrade_session=" + bob}).body
    html = html.decode()
    t.ok("/submissions/%d\"" % ids[("vadd", "alice_q7")] not in html and a_vadd in html
         and not re.search(r"\d{2}:\d{2} UTC", html),
         "bob's scoreboard page: alice's pseudonym, no link to her submission, no time", html)
    alice, _ = s.login("alice_q7")
    html = s.get("/labs/vadd/scoreboard",
                 headers={"Cookie": "cugrade_session=" + alice}).body.decode()
    mine = re.search(r'<tr class="me">.*?</tr>', html, re.S)
    t.ok(mine and a_vadd in mine.group(0)
         and "/submissions/%d\"" % ids[("vadd", "alice_q7")] in mine.group(0),
         "alice's own row is marked and links to her best submission",
         mine.group(0) if mine else html)
    t.ok("see you as <strong>%s</strong>" % a_vadd in html,
         "the page tells alice her pseudonym in this lab")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

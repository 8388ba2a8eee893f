#!/usr/bin/env python3
# The repo's own labs/ and rubrics/ load: the server starts with them, lists
# every lab that has a lab.json, serves its handout, and accepts its starter
# file as a submission (when the lab is open).
import json
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, ROOT  # noqa: E402


def main(t):
    labs_dir = os.path.join(ROOT, "labs")
    names = sorted(n for n in os.listdir(labs_dir)
                   if os.path.exists(os.path.join(labs_dir, n, "lab.json")))
    if not names:
        t.skip("the repo's labs load", "labs/ has no lab.json yet")
        return
    s = Server(labs="repo", tap=t)
    r = s.get("/api/labs", token="alice_q7")
    listed = sorted(x.get("lab") for x in (r.json() or {}).get("labs", []))
    t.eq(listed, names, "GET /api/labs lists every lab in labs/ (%s)" % ", ".join(names))
    for n in names:
        with open(os.path.join(labs_dir, n, "lab.json")) as f:
            lab = json.load(f)
        r = s.get("/api/labs/%s" % n, token="alice_q7")
        j = r.json() or {}
        t.ok(r.status == 200 and j.get("title") == lab.get("title")
             and j.get("interface") == lab.get("interface"),
             "GET /api/labs/%s has the title and interface of its lab.json" % n, r.brief())
        readme = os.path.join(labs_dir, n, "README.md")
        if os.path.exists(readme):
            with open(readme, encoding="utf-8") as f:
                t.eq(j.get("handout"), f.read(), "GET /api/labs/%s handout is its README.md" % n)
        r = s.get("/api/admin/labs/%s/rubric" % n, token="admin")
        t.ok(r.status == 200 and (r.json() or {}).get("version") == 1
             and isinstance((r.json() or {}).get("rubric"), dict),
             "rubrics/%s.json is loaded as version 1" % n, r.brief())
        starter = os.path.join(labs_dir, n, "starter.cu")
        row = [x for x in (s.get("/api/labs", token="alice_q7").json() or {}).get("labs", [])
               if x.get("lab") == n]
        if os.path.exists(starter) and row and row[0].get("open"):
            with open(starter, "rb") as f:
                r = s.submit(n, f.read(), filename="starter.cu")
            t.status(r, 202, "the starter file of %s is accepted as a submission" % n)


t = Tap()
require_binary(t)
t.run(main)
t.exit()

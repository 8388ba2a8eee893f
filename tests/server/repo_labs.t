#!/usr/bin/env python3
# The repo's own labs/ and rubrics/ load: the server starts with them, lists
# every lab that has a lab.json, serves its handout, and accepts its starter
# file as a submission (when the lab is open).
import json
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, ROOT  # noqa: E402


def tiers_text(line):
    """common/rubric.c rubric_tiers_text, as the handout shows a line."""
    unit = "x"
    lower = line["metric"] in ("ratio_to_cublas", "ratio_to_optimized")   # common/metric.c
    out = []
    for k, tr in enumerate(sorted(line["tiers"], key=lambda x: -x["points"])):
        th = ("%g%%" % (tr["threshold"] * 100) if line["metric"] == "bandwidth_share" else
              "within %g%s" % (tr["threshold"], unit) if lower else "%g%s or more" % (tr["threshold"], unit))
        out.append(("**%s: %g points**" if k == 0 else "%s: %g") % (th, tr["points"]))
    return ", ".join(out)


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
        r = s.get("/api/admin/labs/%s/rubric" % n, token="admin")
        t.ok(r.status == 200 and (r.json() or {}).get("version") == 1
             and isinstance((r.json() or {}).get("rubric"), dict),
             "rubrics/%s.json is loaded as version 1" % n, r.brief())
        rubric = (r.json() or {}).get("rubric") or {}
        if os.path.exists(readme):
            with open(readme, encoding="utf-8") as f:
                text = f.read()
            want = text
            for line in rubric.get("speed", []):
                want = want.replace("{{tiers:%s}}" % line["metric"], tiers_text(line))
            t.eq(j.get("handout"), want, "GET /api/labs/%s handout is its README.md, the rubric's "
                 "tiers written in" % n)
            named = sorted(m for m in set(x.split("}}")[0] for x in text.split("{{tiers:")[1:]))
            t.eq(named, sorted(set(line["metric"] for line in rubric.get("speed", []))),
                 "%s's handout names every speed line of its rubric, and only those, as "
                 "{{tiers:METRIC}} (no copy of a tier to go stale)" % n)
            if n == "reduction" and rubric.get("speed"):
                changed = json.loads(json.dumps(rubric))
                changed["speed"][0]["tiers"][0]["threshold"] = 123
                r = s.put("/api/admin/labs/%s/rubric" % n, token="admin", json_body=changed)
                h = (s.get("/api/labs/%s" % n, token="alice_q7").json() or {}).get("handout", "")
                t.ok(r.status == 200 and "**123x or more: " in h,
                     "a rubric changed by PUT changes the tiers the handout says at once", (r.brief(), h[:200]))
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

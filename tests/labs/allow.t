#!/usr/bin/env python3
"""The symbol allow-lists live once (labs/common/allow.json, docs/formats.md):
no pattern of a lab.json's own "allow" is also in another lab's own list
(what two labs share belongs in a shared list they name by "base"), no lab
repeats a pattern of its base, and every "base" names a list of the file.
Prints TAP lines.

    tests/labs/allow.t [LABS]     check LABS (default: the tree's labs/)"""
import json
import os
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
LABS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "labs")
n, failed = 0, 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name))
    if not cond:
        failed += 1
        for line in str(detail).splitlines():
            print("#   " + line)


shared = json.load(open(os.path.join(LABS, "common", "allow.json")))
lists = {k: v for k, v in shared.items() if k != "about"}
ok(lists and all(isinstance(v.get("undefined"), list) for v in lists.values()),
   "labs/common/allow.json holds named lists (%s)" % ", ".join(sorted(lists)))

labs = sorted(d for d in os.listdir(LABS) if os.path.exists(os.path.join(LABS, d, "lab.json")))
own = {}        # pattern -> the labs whose lab.json lists it themselves
bad_base, repeats = [], []
for lab in labs:
    allow = json.load(open(os.path.join(LABS, lab, "lab.json"))).get("allow") or {}
    base = lists.get(allow.get("base"), {}) if "base" in allow else {}
    if "base" in allow and allow["base"] not in lists:
        bad_base.append("%s: base %r" % (lab, allow["base"]))
    for kind in ("undefined", "forbidden"):
        mine = allow.get(kind) or []
        theirs = base.get(kind) or []
        for p in mine:
            own.setdefault(p, set()).add(lab)
            if p in theirs:
                repeats.append("%s: %s %r is in its base already" % (lab, kind, p))
ok(len(labs) >= 3, "found the labs (%s)" % ", ".join(labs))
ok(not bad_base, "every base names a list of labs/common/allow.json", "\n".join(bad_base))
ok(not repeats, "no lab repeats a pattern of its base", "\n".join(repeats))
copies = sorted("%s in %s" % (p, ", ".join(sorted(ls))) for p, ls in own.items() if len(ls) > 1)
ok(not copies, "no two labs carry their own copy of an allow-list pattern (%d shared: "
   "move them to labs/common/allow.json)" % len(copies), "\n".join(copies[:20]))
print("1..%d" % n)
sys.exit(1 if failed else 0)

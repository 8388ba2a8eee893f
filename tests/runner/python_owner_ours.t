#!/usr/bin/env python3
"""CI (no GPU): a Python job's timing records come from one writer, our
owner (labs/common/py/owner.py; the student's code runs in its tenant and
never holds the channel). When the judge takes none of their samples, the
failure is ours: system_error, graded again and never charged -- not the
student's runtime_error. It was charged to students once: a record the
judges' flat parser refused cost every Python job of reduction, matmul and
embedding its speed points on an H200 (55/90 "the judge accepted no timing
samples"). Here the root's copy of the owner sends its hold record nested,
through the real runner, the real sandbox and CI's stand-in judge, which
refuses what the real parser refuses. Prints TAP lines."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, failures, grade, make_timed_root, need, ok  # noqa: E402

need()
tmp, root = make_timed_root("1000", 30, timing_device_mb=16)

own = os.path.join(root, "labs/common/py/owner.py")
src = open(own).read()
FLAT = 'send_record({"type": "hold", **HOLD})'
ok(FLAT in src, "the owner sends its hold steps as a flat record (the line this suite alters)")
with open(own, "w") as f:
    f.write(src.replace(FLAT, 'send_record({"type": "hold", "steps": dict(HOLD)})'))

doc, err = grade(tmp, root, "good.py", GOOD)
res = doc.get("result") or {}
ok(doc.get("status") == "system_error",
   "a correct file whose owner's records the judge refused is a system_error (ours, graded "
   "again), not a runtime_error charged to the student",
   json.dumps(doc)[:2000] + err[-1500:])
said = json.dumps(doc) + err
ok("our Python owner" in said and "malformed" in said,
   "the operator's message says whose records were refused, and the judge's reason", said[-1500:])
ok(not [t for t in res.get("tests", []) if t.get("status") == "failed"],
   "no test line of the student's is marked failed for it", res.get("tests"))
sys.exit(1 if failures() else 0)

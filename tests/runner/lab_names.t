#!/usr/bin/env python3
# The runner decides nothing from a lab's name: no .c/.h under runner/ holds a lab's
# name as a C string (a `strcmp(lab->name, "matmul")` branch). What differs
# between labs is data in labs/<lab>/lab.json (e.g. "work": the formulas of
# a case's bytes, flops and elements; docs/formats.md), read through
# common/lab.c.
#
#   tests/runner/lab_names.t [DIR]     check DIR (default: the tree's runner/)
import json
import functools
import os
import re
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "runner")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok as suite_ok  # noqa: E402  (TAP lines, counted)

ok = functools.partial(suite_ok, lines=None)   # every line of a failure's detail


labs = sorted(d for d in os.listdir(os.path.join(ROOT, "labs"))
              if os.path.isfile(os.path.join(ROOT, "labs", d, "lab.json")))
names = [json.load(open(os.path.join(ROOT, "labs", d, "lab.json")))["lab"] for d in labs]
ok(len(names) >= 5, "the labs are found (%s)" % ", ".join(names))
literal = re.compile(r'"(%s)"' % "|".join(re.escape(x) for x in names))
hits = []
files = sorted(os.path.relpath(os.path.join(d, f), DIR) for d, _, fs in os.walk(DIR)
               for f in fs if f.endswith((".c", ".h")))
for f in files:
    with open(os.path.join(DIR, f), encoding="utf-8", errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            m = literal.search(line)
            if m:
                hits.append("%s:%d: %s" % (f, i, line.strip()))
ok(files and not hits, "no lab's name is a string in %d files of %s/ (what differs between "
   "labs belongs in lab.json)" % (len(files), os.path.basename(DIR)), "\n".join(hits))
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI: a record field too long for the channel round-trips from the Python
owner (labs/common/py/owner.py send_record) through the judge's own parser
(labs/common/judge_parse.h, compiled here with the host's C compiler): every
field within the one limit of labs/common/channel_limits.h, a cut one ending
in its mark, and no record refused -- before, a ~900-character source line
in a failing case's "cause" made the judge's 512-byte strings refuse the
record as malformed, and every later case was "not run". Prints TAP lines."""
import os, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import ROOT, failures, ok  # noqa: E402
import simlab  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))
import owner  # noqa: E402

tmp = tempfile.mkdtemp(prefix="cugrade-chan-")
parse, cc_err = simlab.judge_parser(tmp)
ok(not cc_err, "the judge's parser compiles as plain C", cc_err)

LIM, MARK = owner.FIELD_MAX, owner.CUT_MARK
line900 = "assert np.allclose(" + "x" * 880 + ")"
recs = [
    {"type": "case", "name": "1", "status": "runtime_error", "error": "AssertionError",
     "error_name": "python_exception", "cause": "kernel.py line 7 in reduce_sum: " + line900,
     "fatal": False},
    {"type": "case", "name": "1000", "status": "runtime_error", "error": "E" * 50000,
     "error_name": "python_exception", "cause": "\U0001F600" * 5000, "fatal": False},
    {"type": "case", "name": "3", "status": "runtime_error", "error": "\u00e9\n\t" * 3000,
     "error_name": "python_exception", "cause": "c" * LIM, "fatal": False},
    {"type": "compile_error", "message": "TypingError: " + "m" * 9000},
    {"type": "done"},
]
fd, path = tempfile.mkstemp(dir=tmp)
owner.CHANNEL = fd
for r in recs:
    owner.send_record(r)
os.close(fd)
with open(path, "rb") as f:
    data = f.read()
parsed, out = parse(data)
ok(len(parsed) == len(recs) and all(p is not None for p in parsed),
   "every record the owner wrote is read by the judge (none malformed)", out[:1500])
if len(parsed) == len(recs) and all(parsed):
    c1 = parsed[0]["cause"]
    ok(c1[1].endswith(line900) and not c1[1].endswith(MARK),
       "a 900-character source line reaches the judge whole", c1[1][-200:])
    longest = max(v[0] for p in parsed for v in p.values())
    ok(longest <= LIM, "no field is longer than CHANNEL_FIELD_MAX (%d) after unescaping" % LIM,
       longest)
    ok(parsed[1]["error"][0] == LIM and parsed[1]["error"][1].endswith(MARK),
       "a 50000-character error is cut to the limit, ending in %r" % MARK, parsed[1]["error"][0])
    ok(parsed[1]["cause"][0] <= LIM and parsed[1]["cause"][1].endswith(MARK),
       "characters outside the BMP (two escapes each) are counted as the judge stores them",
       parsed[1]["cause"][0])
    ok(parsed[2]["cause"][0] == LIM and not parsed[2]["cause"][1].endswith(MARK),
       "a field of exactly the limit is kept whole", parsed[2]["cause"][0])
    ok(parsed[2]["error"][0] == LIM and parsed[2]["error"][1].endswith(MARK),
       "escaped newlines and accents count one byte each", parsed[2]["error"][0])
    ok(parsed[3]["message"][1].endswith(MARK), "a compile error's long message is cut with the mark")
    ok(parsed[4] == {"type": (4, "done")}, "the record after them all is read as usual", parsed[4])
sys.exit(1 if failures() else 0)

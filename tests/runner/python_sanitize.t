#!/usr/bin/env python3
"""CI (no GPU): compute-sanitizer on a Python submission, through the real
runner and sandbox, with the CUDA simulator and a stand-in compute-sanitizer
(tests/runner/python/simlab.py: it runs the Python harness it is given and,
for a file that names one, prints a real capture from an H100 under
tests/runner/fixtures/pysan-*.txt and exits 86 as the tool does). What is
checked: the runner starts `compute-sanitizer --tool T ... python3 tenant.py
--sanitize LAB CASE SEED /work/FILE` for memcheck and racecheck (the sanitize
case, a throwaway seed); a clean run earns the sanitizer line; the captured
findings become the student's lines with file:line of the .py, Numba's
mangled names and every host path cut, and the Python hints; an exception
in the student's code under the tool is charged; a tool that does not start,
or a harness that fails before the student's code, is ours (not charged).
Prints TAP lines."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, grade, make_root, need, ok  # noqa: E402
import simlab  # noqa: E402

# The lines of the captured findings (tests/gpu/solutions-py/reduction/
# oob_write.py and race.py, captured as /work/kernel.py on an H100).
OOB_LINE, RACE_LINE = 26, 22

need()
tmp, root = make_root()


def sans(doc):
    return {s["tool"]: s for s in doc["result"].get("cugrade", {}).get("sanitizer", [])}


def line(doc):
    for t in doc["result"].get("tests", []):
        if t.get("name") == "sanitizer (memcheck, racecheck)":
            return t
    return {}


# A log of the stand-in's command lines (the stand-in itself is in the sandbox:
# the log goes through its stderr, which the runner keeps as the run's output).
doc, err = grade(tmp, root, "good.py", GOOD)
s = sans(doc)
ok(doc["status"] == "graded" and set(s) == {"memcheck", "racecheck"} and
   all(x["ran"] and x["clean"] and not x.get("runner_problem") for x in s.values()),
   "a correct Numba reduction: memcheck and racecheck ran on the .py and were clean",
   json.dumps(doc)[:2000] + err[-1500:])
t = line(doc)
ok(t.get("score") == t.get("max_score") and t.get("max_score", 0) > 0 and
   doc["result"].get("score") == doc["result"].get("max_score"),
   "the rubric's sanitizer line is earned, every point given", t)

RACE = "# cugrade-fixture: pysan-racecheck.txt\n" + GOOD
doc, err = grade(tmp, root, "race.py", RACE)
s = sans(doc)
rc = s.get("racecheck", {})
f = (rc.get("findings") or [{}])[0]
ok(doc["status"] == "graded" and rc.get("ran") and not rc.get("clean") and
   not rc.get("runner_problem") and s.get("memcheck", {}).get("clean"),
   "racecheck exit 86 on a Python kernel: not clean, charged; memcheck clean", json.dumps(s)[:2000])
ok(f.get("file") == "race.py" and f.get("line") == RACE_LINE,
   "the race's position is the student's race.py:%d (lineinfo)" % RACE_LINE, f)
ok("cuda.syncthreads()" in (f.get("hint") or "") and "__syncthreads" not in (f.get("hint") or ""),
   "the hint is in Numba's words (cuda.syncthreads())", f)
blob = json.dumps(s)
ok("/work" not in blob and "/opt" not in blob and "/usr" not in blob and "[abi:" not in blob and
   "cudapy::" not in blob and "Array<" not in blob,
   "no host or sandbox path, no mangled Numba name in what the student sees", blob[:1500])
t = line(doc)
ok(t.get("score") == 0 and "race.py:%d" % RACE_LINE in t.get("output", "") and
   "racecheck" in t.get("output", ""),
   "the rubric line scores 0 and names racecheck and race.py:%d" % RACE_LINE, t)

# The capture above names the file as "kernel.py": the stand-in gives it this
# run's basename, so no sandbox path ever reached the runner there. The same
# capture with the position as the tool also prints it, the sandbox's full
# path (/work/FILE), must come out the same: the student's file, /work/ cut
# (runner/grade/sanitizer.c, source_position).
fx = os.path.join(simlab.FAKE_CUDA[tmp], "fixtures")
with open(os.path.join(fx, "pysan-racecheck.txt")) as src, \
        open(os.path.join(fx, "pysan-racecheck-fullpath.txt"), "w") as dst:
    dst.write(src.read().replace(" in kernel.py:", " in /work/kernel.py:"))
doc, err = grade(tmp, root, "racepath.py", "# cugrade-fixture: pysan-racecheck-fullpath.txt\n" + GOOD)
s = sans(doc)
rc = s.get("racecheck", {})
f = (rc.get("findings") or [{}])[0]
ok(rc.get("ran") and not rc.get("clean") and f.get("file") == "racepath.py" and
   f.get("line") == RACE_LINE and "/work" not in json.dumps(s),
   "a race the tool places at /work/racepath.py:%d is the student's racepath.py:%d, /work/ cut"
   % (RACE_LINE, RACE_LINE), json.dumps(rc)[:2000] + err[-800:])

OOB = "# cugrade-fixture: pysan-memcheck.txt\n" + GOOD
doc, err = grade(tmp, root, "oob.py", OOB)
s = sans(doc)
m = s.get("memcheck", {})
f = (m.get("findings") or [{}])[0]
ok(m.get("ran") and not m.get("clean") and f.get("file") == "oob.py" and f.get("line") == OOB_LINE and
   "Invalid __global__ write" in f.get("message", "") and "bounds" in (f.get("hint") or ""),
   "memcheck's out-of-bounds write: oob.py:%d, the message and the bounds-check hint" % OOB_LINE,
   json.dumps(m)[:2000])

# The simulator raises IndexError where the GPU writes out of bounds: an
# exception under the tool is the student's (the program failed under it).
BAD = GOOD.replace("    s[t] = x[i] if i < x.shape[0] else 0.0", "    s[t] = x[i]")
doc, err = grade(tmp, root, "raise.py", BAD)
s = sans(doc)
m = s.get("memcheck", {})
ok(BAD != GOOD and m.get("ran") and not m.get("clean") and not m.get("runner_problem") and
   "IndexError" in m.get("note", "") and "/work" not in m.get("note", ""),
   "an exception in the student's code under the tool: not clean, charged, the exception named",
   json.dumps(s)[:2000] + err[-800:])

NOSTART = "# cugrade-fixture: nostart\n" + GOOD
doc, err = grade(tmp, root, "nostart.py", NOSTART)
s = sans(doc)
ok(doc["status"] == "graded" and s and all(x.get("runner_problem") for x in s.values()) and
   doc["result"].get("score") == doc["result"].get("max_score") and
   all("our problem" in x.get("note", "") for x in s.values()),
   "the Python harness failing before the student's code under the tool is ours: not charged",
   json.dumps(s)[:2000])

NOBANNER = "# cugrade-fixture: nobanner\n" + GOOD
doc, err = grade(tmp, root, "nobanner.py", NOBANNER)
s = sans(doc)
ok(doc["status"] == "graded" and s and all(x.get("runner_problem") for x in s.values()) and
   doc["result"].get("score") == doc["result"].get("max_score"),
   "a compute-sanitizer that does not start is ours: not charged", json.dumps(s)[:2000])

# The student cannot claim our failure: printing the markers of one and
# exiting non-zero after its code ran is still its own failure.
CLAIM = GOOD.replace("def reduce_sum(d_in, d_out):\n",
                     "def reduce_sum(d_in, d_out):\n    import os, sys\n"
                     "    sys.stderr.write('cugrade-launch: harness: no\\n'); sys.stderr.flush()\n"
                     "    os._exit(2)\n")
doc, err = grade(tmp, root, "claim.py", CLAIM)
s = sans(doc)
ok(s and all(x.get("ran") and not x.get("clean") and not x.get("runner_problem") for x in s.values()),
   "a student's exit 2 with our failure's words after its code ran is charged", json.dumps(s)[:2000])

simlab.shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if simlab.failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): a Python (Numba) submission through the real runner and the
real sandbox, with Numba's CUDA simulator (CUGRADE_NO_GPU=1): the syntax
check in the compile sandbox, the trusted owner (labs/common/py/owner.py)
and the student's process beside it, the channel, the judge (CI's stand-in,
tests/runner/simjudge.py), scoring. A correct reduction gets every point; a
wrong one fails with the judge's feedback; a syntax error, an import error
and a missing function are compile errors whose log names the file and the
line and no host or sandbox path; an exception in the student's function
fails the case with its type and line. Prints TAP lines."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, cases, grade, make_root, need, ok  # noqa: E402
import simlab  # noqa: E402

need()
tmp, root = make_root()

doc, err = grade(tmp, root, "good.py", GOOD)
r = doc["result"]
ok(doc["status"] == "graded" and r.get("score") == 20 and r.get("max_score") == 20,
   "a correct Numba reduction is graded 20 of 20 (cases 1 and 1000, sanitizer line not charged)",
   str(doc)[:1500] + err[-1500:])
c = cases(doc)
ok(c.get("1000", {}).get("passed") and c["1000"]["max_abs_err"] < 1e-3,
   "the judge checked case 1000 against the sum of the seed's inputs", c)
ok(r.get("cugrade", {}).get("compile_log", "x") == "", "a clean file has an empty compile log",
   r.get("cugrade", {}).get("compile_log"))
san = r.get("cugrade", {}).get("sanitizer", [])
ok(len(san) == 2 and all(s.get("ran") and s.get("clean") and not s.get("runner_problem") for s in san),
   "memcheck and racecheck ran on the .py (a stand-in compute-sanitizer in CI) and were clean", san)

WRONG = GOOD.replace("blocks = (d_in.shape[0] + THREADS - 1) // THREADS",
                     "blocks = d_in.shape[0] // THREADS")
doc, err = grade(tmp, root, "wrong.py", WRONG)
c = cases(doc)
ok(doc["status"] == "graded" and doc["result"].get("score") == 10 and
   not c.get("1000", {}).get("passed") and not c.get("1", {}).get("passed"),
   "a reduction whose grid misses the tail is graded and fails cases 1 and 1000",
   str(doc)[:2000] + err[-1000:])
ok("of the sum of the 1000 elements is missing" in c.get("1000", {}).get("message", ""),
   "its feedback is the CUDA lab's: how much of the sum is missing", c.get("1000"))
hd = doc["result"].get("cugrade", {}).get("hint_details") or []
ok(any(h.get("id") == "grid-coverage" and h.get("case") == "1" and "grid-stride" in h.get("text", "")
       for h in hd),
   "the bug catalogue names it: a grid that does not cover the input (case 1: no block at all)", hd)
ok(c.get("1", {}).get("message", "").startswith("d_out[0] = 0 but expected"),
   "case 1 (no block launched): d_out holds the 0 it was set to, and the message says so",
   c.get("1"))

SYNTAX = GOOD.replace("def reduce_sum(d_in, d_out):", "def reduce_sum(d_in, d_out)")
doc, err = grade(tmp, root, "syntax.py", SYNTAX)
log = doc["result"].get("cugrade", {}).get("compile_log") or ""
ok(doc["status"] == "compile_error", "a syntax error is a compile_error", str(doc)[:1500] + err[-800:])
ok("SyntaxError" in log and "syntax.py" in log and "line 29" in log,
   "its log is Python's SyntaxError with the file's name and line", log)
ok("/work" not in log and "/tmp" not in log and "/lab" not in log and "/usr" not in log,
   "the log names no host or sandbox path", log)
ok(not doc["result"].get("cugrade", {}).get("cases"), "nothing ran: no case results",
   doc["result"].get("cugrade", {}).get("cases"))
ph = doc["result"].get("cugrade", {}).get("phases") or {}
ok("front" in ph and "compile" not in ph and "cpu_wait" not in ph,
   "it is answered by the front pass, before the job asks for a CPU lane slot (phases: front, "
   "no compile): a syntax error in a burst does not wait behind the lane", json.dumps(ph))

IMPORT = "import cugrade_no_such_module\n" + GOOD
doc, err = grade(tmp, root, "imports.py", IMPORT)
log = doc["result"].get("cugrade", {}).get("compile_log") or ""
ok(doc["status"] == "compile_error" and "ModuleNotFoundError" in log and
   "imports.py line 1" in log and "/work" not in log and "/lab" not in log and "/usr" not in log,
   "an import that fails is a compile_error with the traceback's line in the student's file",
   str(doc)[:1500] + err[-800:])

NOFN = GOOD.replace("def reduce_sum(", "def reduce_total(")
doc, err = grade(tmp, root, "nofn.py", NOFN)
log = doc["result"].get("cugrade", {}).get("compile_log") or ""
ok(doc["status"] == "compile_error" and "defines no function reduce_sum" in log,
   "a file without reduce_sum is a compile_error that names it", str(doc)[:1500] + err[-800:])
ph = doc["result"].get("cugrade", {}).get("phases") or {}
ok(doc["status"] == "compile_error" and not ph.get("check_run") and "front" in ph and
   "compile" not in ph,
   "... told by the front pass, before any GPU run started (no check_run phase) and before "
   "the CPU lane (no compile phase)", json.dumps(ph) + str(doc)[:800])

# The compile step's test is the name as a word of the source: a function
# bound by name from a string still reaches the tenant, which finds it.
BYNAME = GOOD.replace("def reduce_sum(", "def _impl(") + '\nglobals()["reduce_sum"] = _impl\n'
doc, err = grade(tmp, root, "byname.py", BYNAME)
# (its score is not the point: the simulator's atomics have been seen to
# lose a block under load)
ok(doc["status"] == "graded" and len(cases(doc)) == 2 and not doc["result"]["cugrade"].get("compile_log"),
   "a function bound by its name in a string is graded, not refused at compile",
   str(doc)[:1500] + err[-800:])

# A JIT compile error at the warm-up call (Numba's TypingError, from its CPU
# JIT here: the simulator compiles no kernels): a compile_error whose log has
# the student's file and line and no host or sandbox path (Numba's messages
# name files by path, its own included).
JITERR = GOOD.replace("def reduce_sum(d_in, d_out):\n",
                      "import numba\n\n\n@numba.njit\ndef helper(n):\n    return n + 'one'\n\n\n"
                      "def reduce_sum(d_in, d_out):\n    helper(d_in.shape[0])\n")
doc, err = grade(tmp, root, "jiterr.py", JITERR)
log = doc["result"].get("cugrade", {}).get("compile_log") or ""
ok(doc["status"] == "compile_error" and "TypingError" in log and "jiterr.py line" in log,
   "a Numba typing error in the first call is a compile_error with the student's line",
   str(doc)[:1500] + err[-800:])
ok("/work" not in log and "/tmp" not in log and "/lab" not in log and "/usr" not in log and
   "site-packages" not in log and "dist-packages" not in log,
   "its log names no host or sandbox path (Numba's own files cut too)", log)

# A library's warning (Numba's NumbaPerformanceWarning names its own file
# under the Python root) reaches the student's feedback without the path.
WARNS = GOOD.replace("def reduce_sum(d_in, d_out):\n",
                     "import warnings\nwarnings.warn_explicit('\\x1b[1mGrid size 1\\x1b[0m', UserWarning, "
                     "'/usr/lib/python3/dist-packages/numba/cuda/dispatcher.py', 748)\n\n\n"
                     "def reduce_sum(d_in, d_out):\n    import os\n"
                     "    if d_in.shape[0] > 1:\n        os._exit(7)\n")
doc, err = grade(tmp, root, "warns.py", WARNS)   # a runtime_error: its output is shown
out = doc["result"].get("cugrade", {}).get("program_output") or ""
ok(doc["status"] == "runtime_error" and "dispatcher.py:748: UserWarning: Grid size 1" in out and
   "/usr/lib" not in out and "\x1b" not in out,
   "a library's warning in the feedback: its file's name, no host path, no terminal colours",
   out[:800] + err[-500:])

# What the student prints is cleaned (runner/grade/score.c score_text_clean):
# no BEL or terminal escapes, and a cut at 2000 bytes that falls inside a
# 2-byte character keeps the output (it used to be invalid UTF-8, and the
# whole program_output was dropped).
PRINTS = GOOD.replace("def reduce_sum(d_in, d_out):\n",
                      "def reduce_sum(d_in, d_out):\n    import os, sys\n"
                      "    if d_in.shape[0] > 1:\n"
                      "        sys.stdout.write('x' * 1999 + '\\u00e9' * 50 + '\\n')\n"
                      "        sys.stderr.write('\\a\\x1b[31mred\\x1b[0m\\x1b]0;title\\x07 \\u00e9t\\u00e9\\tok\\n')\n"
                      "        sys.stdout.flush(); sys.stderr.flush()\n"
                      "        os._exit(5)\n")
doc, err = grade(tmp, root, "prints.py", PRINTS)
out = (doc["result"].get("cugrade", {}) or {}).get("program_output")
ok(doc["status"] == "runtime_error" and out is not None and ("x" * 1999 + "\n") in out,
   "program_output cut at 2000 bytes inside a 2-byte character: kept, cut before it",
   repr(out)[:300] + json.dumps(doc)[:1000] + err[-600:])
ok(out is not None and "red \u00e9t\u00e9\tok" in out and not any(c in out for c in "\a\x1b\x07"),
   "program_output: no BEL nor terminal escapes; tab, newline and UTF-8 kept", repr(out)[-300:])

RAISES = GOOD.replace("    zero[1, 1](d_out)\n", "    zero[1, 1](d_out)\n    if d_in.shape[0] > 1:\n        raise ValueError('too big for me')\n")
doc, err = grade(tmp, root, "raises.py", RAISES)
c = cases(doc)
ok(doc["status"] == "graded" and c.get("1", {}).get("passed") and not c.get("1000", {}).get("passed"),
   "an exception in one case fails that case only", str(doc)[:1500] + err[-800:])
m = c.get("1000", {}).get("message", "")
ok("your code raised ValueError: too big for me" in m and "raises.py line" in m and "/work" not in m,
   "its message names the exception and the line in the student's file, no path", m)

KILLS = GOOD.replace("def reduce_sum(d_in, d_out):\n", "def reduce_sum(d_in, d_out):\n    import os\n    if d_in.shape[0] > 1:\n        os._exit(7)\n")
doc, err = grade(tmp, root, "exits.py", KILLS)
c = cases(doc)
ok(doc["status"] == "runtime_error" and c.get("1", {}).get("passed") and
   not c.get("1000", {}).get("passed") and "status 7" in c.get("1000", {}).get("message", ""),
   "a student process that exits during a case is a runtime_error; the case before keeps its points",
   str(doc)[:2000] + err[-800:])

# A Python installed outside /usr (a venv, like /opt/torch/.venv on the GPU
# image): CUGRADE_PYTHON is PREFIX/bin/python3, and PREFIX is bound
# read-only at its own path in every Python run (a venv's python3 is a link
# to its base interpreter under /usr).
pyroot = os.path.join(tmp, "pyroot")
os.makedirs(os.path.join(pyroot, "bin"))
os.symlink("/usr/bin/python3", os.path.join(pyroot, "bin", "python3"))
with open(os.path.join(pyroot, "marker.txt"), "w") as f:
    f.write("the Python root is here\n")
for d in (tmp, pyroot, os.path.join(pyroot, "bin")):
    os.chmod(d, 0o755)
os.chmod(os.path.join(pyroot, "marker.txt"), 0o644)
SEES = GOOD.replace("def reduce_sum(d_in, d_out):\n", "def reduce_sum(d_in, d_out):\n"
                    "    import os, sys\n"
                    "    if d_in.shape[0] > 1:\n"
                    "        print('exe', sys.executable, open(%r).read().strip(), flush=True)\n"
                    "        os._exit(3)\n" % os.path.join(pyroot, "marker.txt"))
env_keep = dict(os.environ)
os.environ.update(CUGRADE_PYTHON=os.path.join(pyroot, "bin", "python3"))
doc, err = grade(tmp, root, "venv.py", SEES)
os.environ.clear()
os.environ.update(env_keep)
out = (doc["result"].get("cugrade", {}) or {}).get("program_output", "") or ""
ok(("exe " + os.path.join(pyroot, "bin", "python3") + " the Python root is here") in out and
   cases(doc).get("1", {}).get("passed"),
   "CUGRADE_PYTHON's venv is bound in the sandbox and its interpreter runs the owner and the student",
   out[-800:] + json.dumps(doc)[:1200] + err[-600:])

doc, err = grade(tmp, root, "good.py", GOOD)
ok(doc["status"] == "graded" and doc["result"].get("score") == 20, "the next job is graded as before",
   str(doc)[:800])
sys.exit(1 if simlab.failures() else 0)

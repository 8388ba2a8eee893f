#!/usr/bin/env python3
# suite: quiet  (part 2 bounds a run's wall time against a hold of its own)
"""CI (no GPU): a Python check run's big case, its memory reserved only
while it runs (runner/grade/memgate.h, docs/python.md "Memory for the big
case"), through the real runner, the real sandbox and the real owner in
Numba's CUDA simulator. The lab's case "1000" declares a device_mb of its
own (500 MiB past the lab's 64):
  1. the job is admitted with the other cases' memory and room kept for
     the growth; its reservation moves up by 436 MiB while case 1000 runs,
     and back down after it;
  2. with another job grown (a line of ours in the ledger, added once the
     job was admitted), its growth waits; the wait is not the student's
     time (the check run's limit, 20 s, is shorter than the hold), and the
     job is graded once the other lets go;
(The warm pool's check run asks on its gate the same way:
tests/runner/python_pool.t.)
Prints TAP lines."""
import fcntl, json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, ROOT, failures, grade, make_root, need, ok  # noqa: E402
from ledger import LedgerWatch, live_lines  # noqa: E402  (tests/runner/ledger.py)

need()
lab = json.load(open(os.path.join(ROOT, "labs/reduction/lab.json")))
cs = [dict(c, device_mb=500) if c["name"] == "1000" else
      {k: v for k, v in c.items() if k != "device_mb"} for c in lab["cases"]]
tmp, root = make_root({"cases": cs, "baselines": [],
                       "limits": {"compile_seconds": 60, "run_seconds": 20, "memory_mb": 16384,
                                  "device_mb": 64, "timing_device_mb": 16,
                                  "derive": {"factor": 1, "floor_seconds": 1,
                                             "startup_seconds": 0}}})
ledger = os.path.join(tmp, "cache", "gpu-0.admit")
os.makedirs(os.path.dirname(ledger), exist_ok=True)
# The rubric (simlab's): cases 1 and 1000, no speed line; two sanitizers.
ctx, al = 600, 2048
base = 64 + al + ctx * (2 + 1 + 2)
grown = base + 436

# 1. Alone: up while case 1000 runs, down after.
os.environ["CUGRADE_GPU_MEMORY_MB"] = "100000"
watch = LedgerWatch(ledger).start()
try:
    doc, err = grade(tmp, root, "good.py", GOOD)
finally:
    seen = watch.stop()
ok(doc.get("status") == "graded" and doc.get("score") == doc.get("max_score"),
   "a correct file in a lab with a big case is graded, full marks",
   json.dumps(doc)[:1500] + err[-1500:])
ok(seen[:3] == [base, grown, base],
   "its reservation is %d MiB (the other cases' 64, not 500), %d while case 1000 runs, %d after"
   % (base, grown, base), json.dumps({"seen": seen}))


# 2. Another job grown: the growth waits, unpaid.
def ledger_edit(fn):
    with open(ledger, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        lines = fn([ln for ln in f.read().splitlines() if ln.strip()])
        f.seek(0)
        f.truncate()
        f.write("".join(ln + "\n" for ln in lines))


HOLD = 32.0
CAP = base + 436 + 64 * 10   # room for the job and its growth, or for our 640 beside it
os.environ["CUGRADE_GPU_MEMORY_MB"] = str(CAP)
mine = "%d 777 %d 0" % (os.getpid(), 640 + 436)  # "another job", grown past its reservation
events = {}


def other():
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and not [ln for ln in live_lines(ledger)
                                              if ln.split()[2] == str(base)]:
        time.sleep(0.01)
    ledger_edit(lambda ls: ls + [mine])   # once the job is admitted: it reserved its room
    events["added"] = time.monotonic()
    time.sleep(HOLD)
    ledger_edit(lambda ls: [ln for ln in ls if ln != mine])
    events["removed"] = time.monotonic()


th = threading.Thread(target=other)
t0 = time.monotonic()
th.start()
doc, err = grade(tmp, root, "good2.py", GOOD)
th.join()
total = time.monotonic() - t0
ph = doc.get("result", {}).get("cugrade", {}).get("phases", {})
ok(doc.get("status") == "graded" and doc.get("score") == doc.get("max_score") and total > HOLD,
   "beside another job grown for %.0f s (longer than the check run's 20 s limit), the job "
   "waited for its big case's memory and was graded, not timed out" % HOLD,
   json.dumps(doc)[:1500] + err[-1500:])
ok("case 1000's 436 MiB more: reserved after" in err and ph.get("check_run", 0) > 20.5,
   "the runner says how long case 1000 waited (check_run %.1f s of wall time, past the limit)"
   % ph.get("check_run", 0), err[-1500:])
ok(not [ln for ln in live_lines(ledger) if ln.split()[0] != str(os.getpid())],
   "nothing of the job is left in the ledger", open(ledger).read())
del os.environ["CUGRADE_GPU_MEMORY_MB"]
sys.exit(1 if failures() else 0)

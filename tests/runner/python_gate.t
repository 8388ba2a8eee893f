#!/usr/bin/env python3
# suite: quiet  (tests/run.sh: beside other suites on 2 cores a simulated sample
# took 3.1 s and the timing run stopped at 2 samples; its checks want 2)
"""CI (no GPU): the gate of a Python timing run (runner/grade/job_time_gate.c,
docs/runner.md "Locks"), through the real runner, the real sandbox and the
real owner in Numba's CUDA simulator. The owner starts up, starts the
tenant, loads the student's module and warms up under the job's SHARED GPU
lock, says 'r' on fd 4 and waits; the runner then asks for the EXCLUSIVE
lock and says 'g'. While another holder keeps the GPU's lock (as a check
run of another job would), the timing run waits at its gate with its
interpreter up, and the wait is not the student's time: the run's wall
limit (20 s here) is shorter than the hold, and the job is still
graded with its samples. Prints TAP lines."""
import fcntl, json, os, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, ROOT, failures, grade, make_timed_root, need, ok  # noqa: E402
from ledger import LedgerWatch  # noqa: E402  (tests/runner/ledger.py)

need()
# The timing case is "1000" (the simulator's speed); run_seconds 20 caps
# every run (no naive measure in CI): the timing run's wall limit is 20 s.
tmp, root = make_timed_root("1000", 20, timing_device_mb=16)

# 1. No one else on the GPU: the gate opens at once. The job's GPU memory
# reservation (CUGRADE_GPU_MEMORY_MB gives the ledger a capacity) is
# watched: a Python job's shrinks per phase as a CUDA job's does
# (runner/gpu/lock.c; pipeline.t for CUDA).
ledger = os.path.join(tmp, "cache", "gpu-0.admit")
os.environ["CUGRADE_GPU_MEMORY_MB"] = "100000"
watch = LedgerWatch(ledger).start()
try:
    doc, err = grade(tmp, root, "good.py", GOOD)
finally:
    seen = watch.stop()
    del os.environ["CUGRADE_GPU_MEMORY_MB"]
ph = doc.get("result", {}).get("cugrade", {}).get("phases", {})
tim = doc.get("result", {}).get("cugrade", {}).get("timing")
# At least two samples: in the simulator on a loaded CI host one sample of
# the "1000" case took 3.5 s and the owner's budget ended after two (the
# gate, not the count, is what this suite is about). So below too.
ok(doc.get("status") == "graded" and tim and tim.get("samples", 0) >= 2,
   "a Python timing run through the gate is graded with its samples",
   json.dumps(doc)[:2000] + err[-1500:])
ok(ph.get("time_start", 0) > 0 and ph.get("time_run", 0) > 0,
   "its phases show the start-up before the gate (time_start) and the samples (time_run)", ph)
# Contexts: the check run's owner and tenant, the judge's, one per
# sanitizer (memcheck, racecheck); the timing run started beside the check
# adds its case (timing_device_mb 16) and its owner's and tenant's.
ctx, al = 600, 2048
full = 64 + al + ctx * (2 + 1 + 2) + (16 + 2 * ctx)
after = 16 + al + ctx * (2 + 1 + 2)
timed = 16 + al + ctx * (2 + 1)
# (The sanitizers in the simulator may end with the check run: then the
# middle step lasts an instant and the watcher may not see it.)
ok(seen in ([full, after, timed], [full, timed]) and open(ledger).read() == "",
   "its reservation is %d MiB up to the end of the check run, %d after it (the timing case, the "
   "timing run's, the judge's and the sanitizers' contexts), %d once the sanitizers ended, then "
   "let go" % (full, after, timed), json.dumps({"seen": seen, "phases": ph}))

# 2. Another holder keeps the GPU's lock shared for HOLD seconds from the
# job's start: the check run shares it; the timing run starts up, waits at
# its gate past its own wall limit, and is not charged a timeout.
HOLD = 30.0
cache = os.path.join(tmp, "cache")
os.makedirs(cache, exist_ok=True)
lk = os.open(os.path.join(cache, "gpu-0.lock"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(lk, fcntl.LOCK_SH)
t0 = time.monotonic()
released = []
def release():
    time.sleep(HOLD)
    released.append(time.monotonic() - t0)
    fcntl.flock(lk, fcntl.LOCK_UN)
th = threading.Thread(target=release)
th.start()
doc, err = grade(tmp, root, "good2.py", GOOD)
th.join()
total = time.monotonic() - t0
ph = doc.get("result", {}).get("cugrade", {}).get("phases", {})
tim = doc.get("result", {}).get("cugrade", {}).get("timing")
ok(doc.get("status") == "graded" and tim and tim.get("samples", 0) >= 2 and total > HOLD,
   "with the GPU's lock held by another for %.0f s (longer than the timing run's wall limit), "
   "the timing run waited at its gate and was graded, not timed out" % HOLD,
   json.dumps(doc)[:2000] + err[-1500:])
ok(ph.get("hold_wait", 0) >= 5 and ph.get("time_start", 0) > 0,
   "the wait was at the gate, for the exclusive hold (hold_wait %.1f s), after the start-up "
   "(time_start %.1f s)" % (ph.get("hold_wait", 0), ph.get("time_start", 0)), ph)
WALL = ("time_start", "sanitize_wait", "hold_wait", "time_run")
ok(sum(ph.get(k, 0) for k in WALL) > 20.0,
   "the timing run's whole wall time (%.1f s) was past its 20 s limit: the wait was not counted"
   % sum(ph.get(k, 0) for k in WALL), ph)

# 3. The owner by hand, with its gate on fd 4: when it says 'r', the
# student's module has not been imported yet (its top-level code writes a
# marker), so nothing of the student's can run on the GPU while the job
# waits for the exclusive lock holding no lock at all; no sample is taken
# before 'g'; after 'g' the samples and the re-check come.
import socket, subprocess
marker = os.path.join(tmp, "imported")
MARKED = "open(%r, 'w').write('x')\n" % marker + GOOD
src = os.path.join(tmp, "marked.py")
open(src, "w").write(MARKED)
chan = os.path.join(tmp, "gate.chan")
runner_end, owner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
with open(chan, "wb") as f:
    def fds():
        os.dup2(f.fileno(), 3)
        os.dup2(owner_end.fileno(), 4)
    p = subprocess.Popen(["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
                          "reduction", "time", "--seed", "5eed", "--case", "1", "--max-ms", "1500",
                          "--gate", "--file", src], pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=fds,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
    owner_end.close()
    runner_end.settimeout(120)
    said = runner_end.recv(1)
    recs_before = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
    imported_before = os.path.exists(marker)
    time.sleep(1.0)  # a gate that did not wait would take samples now
    recs_wait = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
    runner_end.send(b"g")
    out, errb = p.communicate(timeout=120)
recs = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
ok(said == b"r" and not imported_before,
   "the owner says 'r' before the student's module is imported (no student code, no student "
   "context while waiting at the gate)", "%r imported=%s" % (said, imported_before))
ok(not [r for r in recs_wait if r.get("type") in ("timing", "case")],
   "no sample and no case record while the gate stays shut", recs_wait)
tim = [r for r in recs if r.get("type") == "timing"]
ok(p.returncode == 0 and os.path.exists(marker) and tim and len(tim[0]["samples_ms"]) >= 2 and
   [r for r in recs if r.get("name") == "1@recheck"],
   "after 'g': the module loaded, the samples and the re-check", json.dumps(recs)[:1500] + errb.decode()[-800:])
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): the memory gate of a CUDA check run (runner/grade/check_gate.h;
docs/runner.md "GPU memory admission"). A job is admitted with the memory of
its check cases but the big ones (lab.json limits.check_device_mb), owing
the rest (device_mb minus that) in the ledger; it grows only when its check
run reaches a case marked "big", waiting there -- its clocks stopped --
while the GPU's memory is taken, and is never charged for that wait.

The fake lab gets a third case, "huge", marked big (device_mb 100,
check_device_mb 40); the check run sleeps 4 s before its cases (the fake
harness's "de1a" seed hook). While it sleeps, another live process takes
all of the GPU's memory that is left; it lets go 8 s later. Checks:
- the job's ledger line holds the small reservation and owes the growth
  (before: the whole device_mb from the start, nothing owed);
- it waited at its gate, not at admission: admit_wait under 1 s, the check
  run as long as the other process held the memory (before: the big case
  ran at once, the check run took its 4 s);
- it is graded, all three cases passing, though that wait was longer than
  its check run's limit (the clocks stopped at the gate);
- after the job the ledger holds nothing of it.
Prints TAP."""
import fcntl, json, os, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import NO_HOLD, grade as run_grade  # noqa: E402  (a starved compile retried)
import tree  # noqa: E402  (the fake lab laid out as a course tree)

require_nvcc_root()

CAP = 100000  # CUGRADE_GPU_MEMORY_MB: room for the job at once
HOLD_S = 8

tmp = tempfile.mkdtemp(prefix="cugrade-gate-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
labp = os.path.join(root, "labs/fakelab/lab.json")
lab = json.load(open(labp))
lab["cases"].append({"name": "huge", "params": {"n": 100000}, "big": True})
lab["limits"].update({"run_seconds": 30, "device_mb": 100, "check_device_mb": 40})
lab["limits"]["derive"].update({"floor_seconds": 6, "startup_seconds": 1})  # check limit ~7 s
json.dump(lab, open(labp, "w"))
rubp = os.path.join(root, "rubrics/fakelab.json")
rub = json.load(open(rubp))
rub["correctness"].append({"case": "huge", "points": 10, "visibility": "visible"})
json.dump(rub, open(rubp, "w"))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)
ledger = os.path.join(cache, "gpu-0.admit")
GOOD = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'
src = os.path.join(tmp, "good.cu")
open(src, "w").write(GOOD)
env = dict(NO_HOLD, CUGRADE_GPU_MEMORY_MB=str(CAP))


def grade(seed):
    return run_grade(["--root", root, "--lab", "fakelab", "--file", src, "--cache", cache,
                      "--work", os.path.join(tmp, "work"), "--arch", "sm_90", "--seed", seed],
                     env=env)


def entries():
    """The ledger's lines as [pid, token, mb, grow] (grow 0 when absent)."""
    try:
        with open(ledger) as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            rows = [[int(x) for x in line.split()] for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    return [r + [0] * (4 - len(r)) for r in rows]


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def take_the_rest(pid):
    """Another live process's line taking all of CAP that is left."""
    with open(ledger, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        used = sum(int(line.split()[2]) for line in f if line.strip())
        f.seek(0, os.SEEK_END)
        f.write(f"{pid} 7 {CAP - used} 0\n")


holder = None
try:
    d, log, _ = grade("0123456789abcdef0123456789abcdef")
    ok(d.get("status") == "graded", "a first job is graded (the lab built, its limits measured)",
       json.dumps(d)[:1500] + log)

    seen, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            rows = [r for r in entries() if r[3] > 0]
            if rows:
                seen.append((time.monotonic(), rows))
            time.sleep(0.05)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    holder = subprocess.Popen(["sleep", "600"])
    out = {}
    t = threading.Thread(target=lambda: out.update(zip(("d", "log", "wall"), grade("de1a0004" + "0" * 24))))
    t.start()
    t0 = time.monotonic()
    while not seen and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    owed = seen[0][1] if seen else []
    ok(len(owed) == 1 and owed[0][3] == 60,
       "the job is admitted owing its big case's growth (device_mb 100 - check_device_mb 40 = 60)",
       f"ledger lines with a growth owed: {owed}; all: {entries()}")
    time.sleep(1)  # the check run sleeps its 4 s before its cases
    take_the_rest(holder.pid)
    t_hold = time.monotonic()
    time.sleep(HOLD_S)
    still = [r for r in entries() if r[3] > 0]
    ok(len(still) == 1 and still[0][2] == owed[0][2] if owed else False,
       "while the memory is taken its line still owes the growth (it waits at its gate)",
       f"{still}")
    holder.kill()
    holder.wait()
    t.join(180)
    stop.set()
    d, log = out.get("d") or {}, out.get("log", "")
    ph = (d.get("result", {}).get("cugrade") or {}).get("phases") or {}
    cases = {c.get("name"): c.get("passed") for c in (d.get("result", {}).get("cugrade") or {}).get("cases") or []}
    ok(d.get("status") == "graded" and cases == {"small": True, "big": True, "huge": True},
       "it is graded, its big case passing, though its wait at the gate was longer than its check "
       "limit (~7 s): the clocks stopped there", json.dumps(d)[:1500] + log)
    ok(ph.get("admit_wait", 99) < 1 and ph.get("check_run", 0) >= HOLD_S - 1,
       f"it waited at its gate, not at admission: admit_wait < 1 s, check_run >= {HOLD_S - 1} s",
       json.dumps(ph))
    ok([r for r in entries() if alive(r[0])] == [], "afterwards the ledger holds nothing of it",
       f"{entries()}")
finally:
    if holder and holder.poll() is None:
        holder.kill()
    subprocess.run(["rm", "-rf", tmp])

print("1..6")
sys.exit(1 if failures() else 0)

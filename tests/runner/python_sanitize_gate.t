#!/usr/bin/env python3
"""CI (no GPU): a Python job's sanitizer runs start before the job's turn on
the GPU and wait at their gate (docs/python.md "Sanitizers"; sanitizer.c):
through the real runner and sandbox, the simulator and the stand-in
compute-sanitizer of python_sanitize.t. A timing run waits for the GPU
(the timing ledger's one live line, as in lanes.t), so the job waits for
its shared lock after its pre-start. Checked meanwhile: both runs
(memcheck, racecheck) are up, `tenant.py --sanitize ... --gate`, and
nothing of the student's has run in any process (its module writes a mark
in /work when imported). Once the GPU is free: the job is graded, both
sanitizers ran on the student's file and were clean. And the fallback: a run that ends at its gate before the go (a
tool that does not start) is started again at the go, and is then ours as
before, not charged. Prints TAP lines."""
import glob, json, os, signal, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import FAKE_CUDA, GOOD, RUNNER, SEED, make_root, need, ok  # noqa: E402
import simlab  # noqa: E402

need()
tmp, root = make_root()
cache, work = os.path.join(tmp, "cache"), os.path.join(tmp, "work")
os.makedirs(cache, exist_ok=True)

# The student's module marks its import in its own /work (a tmpfs of the
# job's, which the test sees through /proc/PID/root: `marks`), then sleeps
# a moment, so that a run that imported it is still alive when looked at.
MARKED = ("import os as _os, time as _time\n"
          "open('/work/imported-%d' % _os.getpid(), 'w').close()\n_time.sleep(2)\n" + GOOD)


def gated_runs(name="marked.py"):
    """(tools, tenants): the --tool of the live compute-sanitizer runs on
    marked.py with a gate (each run's sandbox processes name it), and how
    many Python tenants of `--sanitize ... marked.py --gate` are alive."""
    tools, tenants = set(), 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if not (argv and argv[-1] == "--gate" and argv[-2].endswith("/" + name) and
                "--sanitize" in argv):
            continue
        if "--tool" in argv:
            tools.add(argv[argv.index("--tool") + 1])
        elif any(a.endswith("/tenant.py") for a in argv):
            tenants += 1
    return sorted(tools), tenants


def marks(name="marked.py", only=b""):
    """The import marks in the /work of every live process that names name
    (and only, when given) on its command line: the job's runs. A
    sandbox's /work is a tmpfs of the runner's, seen here through
    /proc/PID/root."""
    found = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                line = f.read()
            if ("/" + name).encode() in line and only in line:
                found.update(glob.glob("/proc/%s/root/work/imported-*" % d))
        except OSError:
            continue
    return sorted(found)


def start(name, source):
    """The runner grading source as name while a timing run waits for the
    GPU (the timing ledger's one live line): (runner, timer)."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(source)
    timer = subprocess.Popen(["sleep", "600"])
    with open(os.path.join(cache, "gpu-0.timing"), "w") as f:
        f.write("%d 1 0\n" % timer.pid)
    env = dict(os.environ, CUGRADE_NO_GPU="1", CUDA_HOME=FAKE_CUDA[tmp])
    p = subprocess.Popen([RUNNER, "grade", "--root", root, "--lab", "reduction", "--file", path,
                          "--cache", cache, "--work", work, "--arch", "sm_90", "--seed", SEED],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    return p, timer


def finish(p):
    """The runner's result document and its stderr."""
    try:
        out, err = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    try:
        return json.loads(out), err
    except ValueError:
        return {"status": "unparsable", "result": {}}, err


p, timer = start("marked.py", MARKED)
try:
    runs, end = ([], 0), time.time() + 120
    while time.time() < end and p.poll() is None:
        runs = gated_runs()
        if runs == (["memcheck", "racecheck"], 2):
            break
        time.sleep(0.2)
    time.sleep(1.0)   # (a run past its gate would have imported the module by now)
    early_marks, waiting = marks(), p.poll() is None
    ok(waiting and runs == (["memcheck", "racecheck"], 2),
       "while the job waits for the GPU, its memcheck and racecheck runs are up at their gate",
       runs)
    ok(waiting and not early_marks,
       "nothing of the student's ran meanwhile (no import of its module in any process)",
       early_marks)
finally:
    timer.kill()
    timer.wait()
# After the go the same look finds the sanitizers' imports: it can see them.
end = time.time() + 60
while time.time() < end and p.poll() is None and not marks(only=b"--sanitize"):
    time.sleep(0.1)
ok(marks(only=b"--sanitize"), "after the go the same look sees the sanitizer runs' imports of "
   "the module (so the look before it could have)", marks())
doc, err = finish(p)
sans = {s["tool"]: s for s in doc["result"].get("cugrade", {}).get("sanitizer", [])}
ok(doc["status"] == "graded" and set(sans) == {"memcheck", "racecheck"} and
   all(s["ran"] and s["clean"] and not s.get("runner_problem") for s in sans.values()),
   "once the GPU is free: graded, both sanitizers ran on the file and were clean",
   json.dumps(doc)[:1500] + err[-1500:])
ok("ended at its gate" not in err, "no run had to be started again", err[-800:])

# A tool that ends before its gate (the stand-in's "nobanner": it exits at
# once), while the job still waits for the GPU: started again at the go,
# then ours, not charged, as before.
p, timer = start("nobanner.py", "# cugrade-fixture: nobanner\n" + GOOD)
try:
    time.sleep(3)
    end = time.time() + 60
    while time.time() < end and gated_runs("nobanner.py") != ([], 0):
        time.sleep(0.2)
    time.sleep(1)
finally:
    timer.kill()
    timer.wait()
doc, err = finish(p)
sans = {s["tool"]: s for s in doc["result"].get("cugrade", {}).get("sanitizer", [])}
ok(err.count("ended at its gate before the go: started again") == 2,
   "a run that ended at its gate before the go is started again at the go (both tools)",
   err[-1500:])
ok(doc["status"] == "graded" and sans and all(s.get("runner_problem") for s in sans.values()) and
   doc["result"].get("score") == doc["result"].get("max_score"),
   "and a tool that does not start is then ours: not charged", json.dumps(sans)[:1500])

simlab.shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if simlab.failures() else 0)

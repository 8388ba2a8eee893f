#!/usr/bin/env python3
"""CI (no GPU): baselines per GPU, not per job (docs/runner.md, "Baselines
per GPU"). With a fake GPU (a fake nvidia-smi: the runner then measures and
times as on a GPU host, the fake lab's "GPU" programs running on the CPU):
- `prepare` leaves the GPU's baseline record: a kept batch of the naive
  reference (CACHE/gpu-0.batch-fakelab-big-naive.json) and a CPU record of
  at least 9 batch medians;
- a job graded after it takes both as they are (their age in the result's
  timings, `shared_age_s`) and times no baseline of its own;
- a serving runner refreshes a stale record in the background
  (CUGRADE_BASELINE_REFRESH=1, no job in the queue);
- two serving runners of the one GPU model refresh a stale CPU record
  together (a CPU baseline that takes 2 s): one batch is added, not one
  each (the second waits for the first and finds the record fresh).
Prints TAP."""
import glob, json, os, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import grade as run_grade  # noqa: E402  (a starved compile retried)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-brec-")
os.chmod(tmp, 0o755)
# run_seconds generous: the naive batch (its limit 3 x run_seconds) shares a loaded CI host
root = tree.lay_out(os.path.join(tmp, "root"), limits={"run_seconds": 30})
cache = os.path.join(tmp, "cache")
smi = os.path.join(tmp, "bin")
os.makedirs(smi)
with open(os.path.join(smi, "nvidia-smi"), "w") as f:
    f.write('#!/bin/sh\ncase "$1" in --query-gpu=index,name,compute_cap,pci.bus_id) '
            'echo "0, NVIDIA H200, 9.0, 00000000:19:00.0"; exit 0;; esac\nexit 2\n')
os.chmod(os.path.join(smi, "nvidia-smi"), 0o755)
ENV = dict(os.environ, PATH=smi + ":" + os.environ.get("PATH", "/usr/bin:/bin"), CUGRADE_NO_GPU="1")
COMMON = ["--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"), "--arch", "sm_90"]
NAIVE = os.path.join(cache, "gpu-0.batch-fakelab-big-naive.json")
GOOD = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'


def cpu_record_path():
    recs = glob.glob(os.path.join(cache, "sm_90/fakelab/baselines/*__big__cputime.batches"))
    return recs[0] if len(recs) == 1 else None


def cpu_record():
    path = cpu_record_path()
    return open(path).read().split() if path else []


def serving(fake, tok, log, work):
    """A serving runner of the fake GPU that refreshes its record every second."""
    return subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{fake.port}", "--token-file",
                             tok, "--lazy-build", "--root", root, "--cache", cache, "--work",
                             os.path.join(tmp, work), "--arch", "sm_90"], stdout=log, stderr=log,
                            start_new_session=True, env=dict(ENV, CUGRADE_BASELINE_REFRESH="1"))


def grade():
    path = os.path.join(tmp, "good.cu")
    with open(path, "w") as f:
        f.write(GOOD)
    d, log, _ = run_grade(["--lab", "fakelab", "--file", path,
                           "--seed", "0123456789abcdef0123456789abcdef"] + COMMON, env=ENV)
    return d, log


runners = []
fake = None
try:
    pr = subprocess.run([RUNNER, "prepare"] + COMMON, capture_output=True, text=True, timeout=600, env=ENV)
    naive = json.load(open(NAIVE)) if os.path.exists(NAIVE) else {}
    ok(naive.get("baseline") == "naive" and len(naive.get("samples_ms") or []) > 0 and
       0 <= time.time() - naive.get("at", 0) < 600,
       "prepare keeps a batch of the naive reference as this GPU's record", pr.stderr[-2000:])
    ok(len(cpu_record()) >= 9, "prepare fills the CPU record to 9 batch medians (%d)" % len(cpu_record()),
       pr.stderr[-2000:])

    d, log = grade()
    t = ((d.get("result") or {}).get("cugrade") or {}).get("timing") or {}
    tl = {x.get("name"): x for x in t.get("timings") or []}
    nv, cv = tl.get("naive", {}), tl.get("cpu", {})
    ok(d["status"] == "graded" and nv.get("interleaved") is False and nv.get("shared_age_s") is not None and
       cv.get("interleaved") is False and cv.get("shared_age_s") is not None,
       "the next job takes the GPU's record (naive %s s old, CPU %s s old) and times no baseline of its own"
       % (nv.get("shared_age_s"), cv.get("shared_age_s")), json.dumps(tl) + "\n" + log)

    # A stale record (dated 1000 s ago): a serving runner refreshes it in
    # the background, with no job in its queue.
    naive["at"] = time.time() - 1000
    with open(NAIVE, "w") as f:
        json.dump(naive, f)
    fake = fakeserver.FakeServer([])
    tok = os.path.join(tmp, "token")
    open(tok, "w").write("cgr_" + "ef" * 32 + "\n")
    log = open(os.path.join(tmp, "runner.log"), "w+")
    runners.append(serving(fake, tok, log, "work"))
    t_end = time.time() + 120
    fresh = False
    while time.time() < t_end and not fresh:
        time.sleep(0.5)
        try:
            fresh = time.time() - json.load(open(NAIVE)).get("at", 0) < 60
        except (OSError, ValueError):
            pass
    log.seek(0)
    ok(fresh, "a serving runner refreshes a stale record in the background", log.read()[-2000:])

    # Two refreshers of one stale CPU record: the runner above (every
    # second) and a second one started now, each CPU batch 2 s long.
    prog = os.path.join(cache, "sm_90/fakelab/cpu-baseline")
    with open(prog + ".slow", "w") as f:
        f.write('#!/bin/sh\nsleep 2\necho \'{"case":"big","median_ms":5.0,"samples_ms":[5.0,5.1,4.9]}\'\n')
    os.chmod(prog + ".slow", 0o755)
    os.rename(prog + ".slow", prog)
    rec = cpu_record_path()
    before = len(cpu_record())
    old = time.time() - 1000
    os.utime(rec, (old, old))
    runners.append(serving(fake, tok, log, "work2"))
    t_end = time.time() + 60
    while time.time() < t_end and time.time() - os.stat(rec).st_mtime > 60:
        time.sleep(0.2)
    time.sleep(6)   # a second refresher's 2 s batch, had it started, ends
    added = len(cpu_record()) - before
    log.seek(0)
    ok(added == 1, "two runners refresh one stale CPU record together: 1 batch added (%d)" % added,
       log.read()[-2000:])
finally:
    for q in runners:
        try:
            os.killpg(q.pid, signal.SIGTERM)
            q.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(q.pid, signal.SIGKILL)
            q.wait()
    if fake is not None:
        fake.stop()
    subprocess.run(["rm", "-rf", tmp])

print("1..4")
sys.exit(1 if failures() else 0)

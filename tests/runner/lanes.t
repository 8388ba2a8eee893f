#!/usr/bin/env python3
"""CI (no GPU): the runner's two lanes (docs/runner.md "Two lanes"). The GPU
lane is held full by hand -- a GPU memory ledger (runner/gpu/admit.c) whose one
live entry, another process's, takes all of CUGRADE_GPU_MEMORY_MB -- and a
correct submission that compiled and linked waits there, holding nothing.
With a CPU lane of one (--jobs 1) the runner must still claim the next job
and answer its compile error while the first one waits; once the GPU lane
has room the waiting job is graded; meanwhile its progress says what it
waits for. A scripted fake server; the fake lab of
pipeline.t. Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
from fakeserver import GOOD, BAD, job  # noqa: E402
TOKEN = "cgr_" + "cd" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-lanes-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)

fake = fakeserver.FakeServer([job(1, rubric, GOOD), job(2, rubric, BAD)], retry=True)
port, lock, state = fake.port, fake.lock, fake.state

# The GPU lane, full: a live process holds all of the GPU's memory.
holder = subprocess.Popen(["sleep", "600"])
open(os.path.join(cache, "gpu-0.admit"), "w").write(f"{holder.pid} 1 1000\n")
# And a timing run waiting for the GPU (the timing ledger's one live line):
# the job, once admitted, waits for it before its shared lock.
timer = subprocess.Popen(["sleep", "600"])
open(os.path.join(cache, "gpu-0.timing"), "w").write(f"{timer.pid} 1 0\n")
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
log = open(os.path.join(tmp, "runner.log"), "w+")
env = dict(os.environ, CUGRADE_GPU_MEMORY_MB="1000", CUGRADE_NO_GPU="1")
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{port}", "--token-file", tok,
                      "--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"),
                      "--arch", "sm_90", "--jobs", "1", "--queue", "4"],
                     stdout=log, stderr=log, env=env, start_new_session=True)

wait_for = fake.wait_for


def progress(jid):
    """The (phase, detail) pairs job jid has posted so far (call it under
    the lock, as wait_for calls its condition)."""
    return [tuple(x) for x in state["progress"].get(jid, [])]


try:
    got2 = wait_for(lambda: 2 in state["results"], 180)
    # The compile error comes from the front pass, maybe before the first
    # job's own CPU work ended: then let that work end.
    wait_for(lambda: ("compiling", "linking") in progress(1), 120)
    time.sleep(2)
    with lock:
        r2 = state["results"].get(2)
        r1_early = state["results"].get(1)
        prog1 = progress(1)
    ok(got2 and r2["status"] == "compile_error",
       "the compile error is answered while the GPU lane is full", json.dumps(r2)[:800])
    ok(r1_early is None, "the correct submission waits for the GPU lane meanwhile", json.dumps(r1_early)[:800])
    ok(("compiling", "linking") in prog1,
       "it waits after its CPU work (compiled and linked) in the CPU lane's stead", prog1)
    # What the student sees meanwhile: not "linking" for minutes, which
    # reads as a compile that hung, but what the job waits for.
    WAIT = ("checking", "waiting: other submissions hold the GPU's memory")
    wait_for(lambda: WAIT in progress(1), 30)
    with lock:
        prog1 = progress(1)
    ok(prog1 and prog1[-1] == WAIT,
       "its progress says it waits for the GPU's memory, held by other submissions", prog1)
    time.sleep(1)  # waiting at admission at least this long: phases.admit_wait, below
    holder.kill()
    holder.wait()
    TIMING = ("checking", "waiting: the GPU is held for timing runs")
    wait_for(lambda: TIMING in progress(1), 60)
    with lock:
        prog1 = progress(1)
        r1_early = state["results"].get(1)
    ok(prog1 and prog1[-1] == TIMING and r1_early is None,
       "admitted, it waits while a timing run waits for the GPU, and says so", prog1)
    timer.kill()
    timer.wait()
    got1 = wait_for(lambda: 1 in state["results"], 180)
    with lock:
        r1 = state["results"].get(1)
    ok(got1 and r1["status"] == "graded" and r1["result"]["score"] > 0,
       "once the GPU lane has room the waiting job is graded", json.dumps(r1)[:800])
    ph = (r1 or {}).get("result", {}).get("cugrade", {}).get("phases", {})
    # The phase is in every GPU job's phases (near 0 when no one held the
    # memory): its length, not its presence, says where the job waited.
    # Here the job waited there for at least the 1 s slept above.
    ok(ph.get("admit_wait", 0) >= 0.9 and "check_run" in ph,
       "its wait is the GPU memory admission's (phases.admit_wait %.1f s), then it ran"
       % ph.get("admit_wait", -1), ph)
finally:
    for h in (holder, timer):
        if h.poll() is None:
            h.kill()
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    log.seek(0)
    if failures():
        for line in log.read().splitlines()[-30:]:
            print("#   log: " + line)
    fake.stop()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

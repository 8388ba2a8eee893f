#!/usr/bin/env python3
"""CI (no GPU): a runner whose jobs keep ending in system_error while its GPU
answers its probe (runner/service/serve.c, docs/runner.md "A GPU that stops
answering") stops claiming for a while, so that its healthy peers take the
queue instead of it spending every job's attempts. The fake GPU of
health.t (it answers), the fake lab, and jobs the runner cannot load (a
seed that is not hex: a system_error, ours, before any compile). With
CUGRADE_GPU_PROBE_SECONDS=6, one job claimed at a time:
- five such jobs in a row, then no claim for at least 6 s, and the log
  says why;
- the sixth such job in a row: no claim for at least 12 s (doubled);
- a job graded after that ends the streak: the next such job is followed
  by a claim without a pause (without the reset it would wait 24 s);
- with two jobs in flight, the one that ends during the pause neither
  extends nor doubles it: the next claim comes 6 s after the fifth failure,
  not 12 s after the sixth.
Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
import fakegpu  # noqa: E402  (a fake nvidia-smi and libcuda.so.1)
from fakeserver import job  # noqa: E402

require_nvcc_root()

PAUSE = 6.0
BAD = "not-hex"  # job_load refuses it: a system_error at once, nothing compiled
tmp = tempfile.mkdtemp(prefix="cugrade-streak-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)
fake_env, _, _ = fakegpu.make(tmp)
env = dict(os.environ, **fake_env, CUGRADE_NO_GPU="1", CUGRADE_GPU_PROBE_SECONDS=str(PAUSE),
           CUGRADE_BASELINE_REFRESH="0")
# Jobs 1-6 fail, 7 is graded, 8 and 9 fail.
jobs = [job(i, rubric, seed=BAD) for i in range(1, 7)] + [job(7, rubric)] + \
       [job(i, rubric, seed=BAD) for i in (8, 9)]
tok = os.path.join(tmp, "token")
open(tok, "w").write("cgr_" + "ef" * 32 + "\n")


def serve(fake, queue, work):
    """A serving runner of the fake GPU, QUEUE jobs in flight at most."""
    return subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{fake.port}", "--token-file",
                             tok, "--root", root, "--cache", cache, "--work",
                             os.path.join(tmp, work), "--arch", "sm_90", "--jobs", "1", "--queue",
                             str(queue), "--lazy-build"],
                            stdout=log, stderr=log, env=env, start_new_session=True)


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


fake = fakeserver.FakeServer(jobs)
fake2 = None
state, lock = fake.state, fake.lock
log = open(os.path.join(tmp, "runner.log"), "w+")
p = serve(fake, 1, "work")


def runner_log():
    log.flush()
    with open(log.name) as f:
        return f.read()


def gap(after_result, claim):
    """Seconds from job after_result's result to job claim's claim."""
    with lock:
        return state["claimed"].get(claim, 0) - state["result_at"].get(after_result, 0)


try:
    done = fake.wait_for(lambda: 9 in state["results"], 400)
    with lock:
        st = {i: (state["results"].get(i) or {}).get("status") for i in range(1, 10)}
    ok(done and all(st[i] == "system_error" for i in (1, 2, 3, 4, 5, 6, 8, 9)) and
       st[7] == "graded", "the jobs the runner cannot load are system_errors and the good job is graded",
       json.dumps(st))
    g6 = gap(5, 6)
    ok(g6 >= PAUSE - 0.5, "after five system_errors in a row no claim for %g s (%.1f s)" % (PAUSE, g6),
       runner_log()[-1500:])
    ok("5 jobs in a row ended in system_error" in runner_log() and "claiming none for 6 s" in
       runner_log(), "the log says why the runner claims nothing", runner_log()[-1500:])
    g7 = gap(6, 7)
    ok(g7 >= 2 * PAUSE - 0.5, "the next one in a row doubles the pause (%.1f s)" % g7,
       runner_log()[-1500:])
    g9 = gap(8, 9)
    ok(g9 < 4 * PAUSE - 4, "a graded job ends the streak: no long pause after the next failure "
       "(%.1f s)" % g9, runner_log()[-1500:])
    ok("the streak is over" in runner_log(), "the log says the streak is over", runner_log()[-1500:])
    stop(p)

    # Two in flight, seven failures: the one in flight when the pause
    # begins ends during it.
    fake2 = fakeserver.FakeServer([job(i, rubric, seed=BAD) for i in range(11, 18)])
    p = serve(fake2, 2, "work2")
    done = fake2.wait_for(lambda: len(fake2.state["results"]) >= 7, 400)
    with fake2.lock:
        ends = sorted(fake2.state["result_at"].values())
        claims = sorted(fake2.state["claimed"].values())
    fifth = ends[4] if len(ends) >= 5 else 0
    # The runner counts a failure when it reaps the job's process, which
    # posts its result first: a claim a few ms after the fifth result was
    # made before the runner could know of it (CI, fresh clone: the next
    # claim 7 ms after it, then the pause). Without a pause the next claim
    # comes about 2 s later, so a 0.5 s grace still fails a runner that
    # does not pause.
    nxt = [c for c in claims if c > fifth + 0.5]
    g = nxt[0] - fifth if nxt else -1
    ok(done and PAUSE - 0.5 <= g < 2 * PAUSE - 1,
       "a job ending during the pause does not extend it: the next claim %.1f s after the fifth "
       "failure" % g, "ends %s claims %s\n%s" % (ends, claims, runner_log()[-1500:]))
finally:
    stop(p)
    if failures():
        for line in runner_log().splitlines()[-30:]:
            print("#   log: " + line)
    fake.stop()
    if fake2:
        fake2.stop()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

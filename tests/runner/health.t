#!/usr/bin/env python3
"""CI (no GPU): a GPU that stops answering (runner/gpu/health.c, docs/runner.md
"A GPU that stops answering"). A fake nvidia-smi makes the runner see a GPU;
a fake libcuda.so.1 answers the probe, or fails cuInit with
CUDA_ERROR_NO_DEVICE while a file exists (the GPU "fell off"). Checks:
`cugrade-runner gpu-probe` says which, and says so when there is no driver
to ask; a runner whose GPU is gone at start claims nothing until it answers;
a job that ends in system_error (the fake harness's set-up failure) makes
the runner probe, and while the probe fails the next job stays on the
server, then is graded once the GPU answers. A scripted fake server and the
fake lab of pipeline.t. Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
import fakegpu  # noqa: E402  (a fake nvidia-smi and libcuda.so.1)
from fakeserver import job  # noqa: E402
TOKEN = "cgr_" + "ef" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-health-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)
# The fake GPU (fakegpu.py): cuInit fails while `dead` exists, hangs while `hang` does.
fake_env, dead, hang = fakegpu.make(tmp)
env = dict(os.environ, **fake_env,
           CUGRADE_NO_GPU="1", CUGRADE_GPU_PROBE_SECONDS="3", CUGRADE_GPU_DOWN_WAIT="15",
           # the background baseline refresh (its exclusive holds) off: this
           # suite's waits are timed against the GPU's answers alone
           CUGRADE_BASELINE_REFRESH="0")
down = os.path.join(cache, "gpu-0.down")

# 1. The probe by itself.
p = subprocess.run([RUNNER, "gpu-probe"], capture_output=True, text=True, env=env, timeout=30)
ok(p.returncode == 0, "gpu-probe: a GPU that answers: exit 0", f"rc {p.returncode}: {p.stderr}")
open(dead, "w").close()
p = subprocess.run([RUNNER, "gpu-probe"], capture_output=True, text=True, env=env, timeout=30)
ok(p.returncode == 1 and "cuInit: CUDA_ERROR_NO_DEVICE (CUDA error 100)" in p.stderr,
   "gpu-probe: a GPU gone: exit 1, naming the call and the error", f"rc {p.returncode}: {p.stderr}")
p = subprocess.run([RUNNER, "gpu-probe"], capture_output=True, text=True, timeout=30,
                   env=dict(env, LD_LIBRARY_PATH=os.path.join(tmp, "nolib")))
ok(p.returncode == 3 or os.path.exists("/dev/nvidiactl"),
   "gpu-probe: no driver library to ask: exit 3 (the runner goes on as before)", f"rc {p.returncode}: {p.stderr}")

fake = fakeserver.FakeServer([job(1, rubric)])
port, lock, state = fake.port, fake.lock, fake.state
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
log = open(os.path.join(tmp, "runner.log"), "w+")
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{port}", "--token-file", tok,
                      "--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"),
                      "--arch", "sm_90", "--jobs", "1", "--queue", "1", "--lazy-build"],
                     stdout=log, stderr=log, env=env, start_new_session=True)


wait_for = fake.wait_for


def runner_log():
    log.flush()
    with open(log.name) as f:
        return f.read()


try:
    # 2. Gone at start: nothing is claimed.
    said = wait_for(lambda: "is not usable" in runner_log(), 60)
    time.sleep(3)
    with lock:
        nclaims = len(state["claims"])
    ok(said and nclaims == 0, "a GPU gone at start: the runner claims nothing, and its log says why",
       f"claims {nclaims}; log: {runner_log()[-1500:]}")
    ok("CUDA_ERROR_NO_DEVICE" in runner_log() and "the jobs stay queued" in runner_log(),
       "the log names the probe's error", runner_log()[-1500:])
    downmsg = open(down).read() if os.path.exists(down) else None
    ok(downmsg and "CUDA_ERROR_NO_DEVICE" in downmsg,
       "the jobs in flight learn it from CACHE/gpu-0.down, with the probe's message", downmsg)
    os.unlink(dead)
    t_back = time.time()
    got1 = wait_for(lambda: 1 in state["results"], 180)
    with lock:
        r1 = state["results"].get(1)
        c1 = state["claimed"].get(1, 0)
    ok(got1 and r1["status"] == "graded" and c1 >= t_back,
       "once the GPU answers again the job is claimed and graded", json.dumps(r1)[:800])
    ok("answers again" in runner_log(), "the log says the GPU answers again", runner_log()[-1500:])
    ok(not os.path.exists(down), "and the down file is gone")

    # 3. Gone mid-way: a job ends in system_error, the probe fails, the next
    # job stays on the server.
    open(dead, "w").close()
    with lock:
        state["queue"] += [job(2, rubric, seed="bad0" + "0" * 28), job(3, rubric)]
    got2 = wait_for(lambda: 2 in state["results"], 180)
    with lock:
        r2 = state["results"].get(2)
    ok(got2 and r2["status"] == "system_error", "the harness's set-up failure is a system_error",
       json.dumps(r2)[:800])
    wait_for(lambda: runner_log().count("is not usable") >= 2, 30)
    time.sleep(3)
    with lock:
        held = 3 not in state["claimed"] and [j["id"] for j in state["queue"]] == [3]
    ok(held, "after the system_error the probe fails, and the next job is not claimed",
       f"claimed {state['claimed']}; log: {runner_log()[-1500:]}")
    os.unlink(dead)
    t_back = time.time()
    got3 = wait_for(lambda: 3 in state["results"], 180)
    with lock:
        r3 = state["results"].get(3)
        c3 = state["claimed"].get(3, 0)
    ok(got3 and r3["status"] == "graded" and c3 >= t_back,
       "the GPU answers again: the waiting job is claimed then and graded", json.dumps(r3)[:800])

    # 4. A job already in flight when the GPU goes waits at the GPU lane's
    # door (the down file), holding nothing, instead of failing on the GPU;
    # past CUGRADE_GPU_DOWN_WAIT (15 s here) it is ours. The file is written
    # by hand here, as the runner writes it, with the GPU itself fine.
    open(down, "w").write("cuInit: CUDA_ERROR_NO_DEVICE (CUDA error 100)\n")
    with lock:
        state["queue"] += [job(4, rubric)]
    waiting = wait_for(lambda: ("checking", "waiting: the GPU is not answering") in
                       [tuple(x) for x in state["progress"].get(4, [])], 120)
    time.sleep(2)
    with lock:
        r4_early = state["results"].get(4)
    ok(waiting and r4_early is None, "a job in flight waits while the GPU does not answer",
       f"progress {state['progress'].get(4)}; result {json.dumps(r4_early)[:500]}")
    os.unlink(down)
    got4 = wait_for(lambda: 4 in state["results"], 120)
    with lock:
        r4 = state["results"].get(4)
    ph = ((r4 or {}).get("result") or {}).get("cugrade", {}).get("phases", {})
    ok(got4 and r4["status"] == "graded" and "gpu_down_wait" in ph,
       "the GPU back, it is graded (phases.gpu_down_wait)", json.dumps(r4)[:800])
    open(down, "w").write("cuInit: CUDA_ERROR_NO_DEVICE (CUDA error 100)\n")
    with lock:
        state["queue"] += [job(5, rubric)]
    got5 = wait_for(lambda: 5 in state["results"], 120)
    with lock:
        r5 = state["results"].get(5)
    ok(got5 and r5["status"] == "system_error" and "did not answer for 15 s" in json.dumps(r5),
       "past CUGRADE_GPU_DOWN_WAIT the job is ours: system_error, requeued for another runner",
       json.dumps(r5)[:800])
    if os.path.exists(down):
        os.unlink(down)

    # 5. A driver that hangs: the probe is killed at CUGRADE_GPU_PROBE_SECONDS
    # (3 s here) and the GPU counts as not usable until a probe answers.
    open(hang, "w").close()
    with lock:
        state["queue"] += [job(6, rubric, seed="bad0" + "0" * 28), job(7, rubric)]
    said = wait_for(lambda: "the probe did not answer in time" in runner_log(), 120)
    ok(said and os.path.exists(down) and "did not answer" in open(down).read(),
       "a probe that hangs is killed at its limit: not usable, the down file says why",
       runner_log()[-1500:])
    with lock:
        held = 7 not in state["claimed"]
    ok(held, "and nothing is claimed meanwhile", state["claimed"])
    os.unlink(hang)
    got7 = wait_for(lambda: 7 in state["results"], 180)
    with lock:
        r7 = state["results"].get(7)
    ok(got7 and r7["status"] == "graded" and not os.path.exists(down),
       "the driver back, the next probe answers and the job is graded", json.dumps(r7)[:800])
finally:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    if failures():
        for line in runner_log().splitlines()[-30:]:
            print("#   log: " + line)
    fake.stop()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

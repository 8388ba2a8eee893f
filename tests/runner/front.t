#!/usr/bin/env python3
"""CI (no GPU): the front pass (docs/runner.md "The front pass"). With a
CPU lane of one (--jobs 1), four correct submissions then a syntax error
are claimed: the syntax error's front pass (nvcc's preprocessor and
cudafe++) answers it before the fourth correct job is granted its CPU lane
slot, with nvcc's own error line; the slots go in claim order; the correct
jobs are graded. With CUGRADE_FRONT_SECONDS=0 the same syntax error waits for its
turn in the CPU lane (run once by hand: the ordering check then fails).
The front lane is one wide here (CUGRADE_FRONT_JOBS=1; by default it is
twice the CPU lane): slots go to the jobs that asked, oldest claim first,
and with a wider front lane a job whose front pass ends sooner asks (and
is granted) before one claimed just before it.
A scripted fake server; the fake lab of pipeline.t. Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
from fakeserver import BAD, job  # noqa: E402
TOKEN = "cgr_" + "cd" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-front-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)

fake = fakeserver.FakeServer([job(i, rubric) for i in (1, 2, 3, 4)] + [job(5, rubric, BAD)],
                              retry=True)  # a starved compile is retried, as the server does
port, lock, state = fake.port, fake.lock, fake.state

tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
log = open(os.path.join(tmp, "runner.log"), "w+")
env = dict(os.environ, CUGRADE_GPU_MEMORY_MB="1000", CUGRADE_NO_GPU="1", CUGRADE_FRONT_JOBS="1")
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{port}", "--token-file", tok,
                      "--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"),
                      "--arch", "sm_90", "--jobs", "1", "--queue", "8"],
                     stdout=log, stderr=log, env=env, start_new_session=True)

wait_for = fake.wait_for

try:
    got5 = wait_for(lambda: 5 in state["results"], 180)
    done = wait_for(lambda: all(i in state["results"] for i in (1, 2, 3, 4)), 300)
    with lock:
        r5 = state["results"].get(5)
        t5 = state["result_at"].get(5, 1e18)
        nvcc_at = {i: state["progress_at"].get((i, "nvcc")) for i in (1, 2, 3, 4)}
        rs = {i: state["results"].get(i) for i in (1, 2, 3, 4)}
    ok(got5 and r5["status"] == "compile_error" and "kernel.cu(1): error: expected an expression" in json.dumps(r5),
       "the syntax error is a compile_error with nvcc's error line", json.dumps(r5)[:800])
    ok(nvcc_at[4] is not None and t5 < nvcc_at[4],
       "it is answered before the fourth correct job got its CPU lane slot",
       f"answered at {t5}, nvcc of each: {nvcc_at}")
    order = [i for i in sorted(nvcc_at, key=lambda i: nvcc_at[i] or 1e18)]
    ok(order == [1, 2, 3, 4], "the CPU lane's slots go in claim order", nvcc_at)
    ok(done and all(r["status"] == "graded" and r["result"]["score"] > 0 for r in rs.values()),
       "the correct jobs are graded", json.dumps(rs)[:1500])
    ph = (rs.get(1) or {}).get("result", {}).get("cugrade", {}).get("phases", {})
    ok("front" in ph and "cpu_wait" in ph and "compile" in ph, "phases has front and cpu_wait", ph)
finally:
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

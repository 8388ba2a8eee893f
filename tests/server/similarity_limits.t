#!/usr/bin/env python3
# The similarity check's child process is bounded and runs off the event
# loop (server/similarity.c): with a stand-in sim_c first in PATH that hangs,
# the server keeps answering, a second check is refused with 409 while the
# first runs, and the step is killed at its time limit
# (CUGRADE_SIMILARITY_STEP_S) with a sentence in the run's detail; one that
# floods its output is killed at 8 MiB; one that prints nothing finds no
# pairs; a missing sim_c fails the run with a
# sentence naming the package to install. The real sim_c is tested in
# similarity.t.
import os
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402
from fake_runner import canned_result  # noqa: E402

URL = "/api/admin/labs/vadd/similarity"


def fake_sim(bindir, body):
    for name in ("sim_c", "sim_text"):
        p = os.path.join(bindir, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(p, 0o755)


def wait_run(s, timeout=30):
    rep = {}
    deadline = time.time() + timeout
    while time.time() < deadline:
        rep = s.get(URL, token="tina_ta").json() or {}
        if (rep.get("run") or {}).get("status") not in (None, "running"):
            break
        time.sleep(0.1)
    return rep.get("run") or {}


def main(t):
    bindir = tempfile.mkdtemp(prefix="cugrade-fakesim-")
    fake_sim(bindir, "exec sleep 30")
    env = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
           "CUGRADE_SIMILARITY_STEP_S": "1.5"}
    s = Server(labs=["vadd"], env=env, tap=t)
    run = s.runner()
    for who in ("alice_q7", "bob_z3"):
        r = s.submit("vadd", kernel(who), token=who)
        job = run.claim(wait=2) or {}
        run.result(job.get("id"), "graded", canned_result(job))
        s.wait_status((r.json() or {}).get("id"), "graded")

    # --- a hanging sim: the loop stays free, the step is killed at 1.5 s
    t0 = time.time()
    r = s.post(URL, token="tina_ta")
    t.status(r, 202, "the check starts")
    t.ok(time.time() - t0 < 1.0, "the start answers at once (%.2f s), not after sim" % (time.time() - t0))
    t0 = time.time()
    t.ok(s.healthy(), "the server answers /healthz while sim runs")
    t.ok(time.time() - t0 < 1.0, "...promptly (%.2f s): sim does not run on the event loop"
         % (time.time() - t0))
    r = s.post(URL, token="tina_ta")
    t.error(r, 409, "conflict", "a second check while one runs is refused")
    rn = wait_run(s)
    t.eq(rn.get("status"), "failed", "the hanging step ends the run as failed", rn)
    t.ok("took longer than 1.5 s" in rn.get("detail", ""),
         "the run's detail says it took longer than the limit", rn)

    # --- a flood of output: killed at the 8 MiB cap
    fake_sim(bindir, "exec yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
    r = s.post(URL, token="tina_ta")
    t.status(r, 202, "a new check may start once the first ended")
    rn = wait_run(s)
    t.ok(rn.get("status") == "failed" and "more than 8 MiB" in rn.get("detail", ""),
         "a step that writes more than 8 MiB is stopped and the run fails", rn)
    t.ok(s.healthy(), "the server is fine after both")

    # --- a sim that prints nothing: every step ends, no pairs, no crash
    fake_sim(bindir, "exit 0")
    r = s.post(URL, token="tina_ta")
    t.status(r, 202, "a check with a silent sim starts")
    rn = wait_run(s)
    rep = s.get(URL, token="tina_ta").json() or {}
    t.eq((rn.get("status"), rep.get("pairs")), ("done", []),
         "a sim that prints nothing ends the run done with no pairs", rep)
    t.ok(s.alive() and s.healthy(), "the server is still up")

    # --- no sim at all
    for name in ("sim_c", "sim_text"):
        os.unlink(os.path.join(bindir, name))
    s.stop()
    s.env["PATH"] = bindir
    s.start()
    r = s.post(URL, token="tina_ta")
    t.status(r, 202, "without sim_c the check still starts (the spawn fails in the background)")
    rn = wait_run(s)
    t.ok(rn.get("status") == "failed" and "similarity-tester" in rn.get("detail", ""),
         "...and fails with a sentence naming the package to install", rn)
    os.rmdir(bindir)


if __name__ == "__main__":
    t = Tap()
    require_binary(t)
    t.run(main)
    t.exit()

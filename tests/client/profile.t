#!/usr/bin/env python3
# Score first, the profile after (docs/api.md "Runner protocol"): the client
# against the real server and tests/tools/fake_runner.py. A verdict posted
# with its profile pending: `cugrade show ID` prints the score and "Profile
# pending"; `submit --watch` prints the score, waits (bounded by
# --profile-wait) and shows the profile's hints once the update lands;
# `show --watch` of a profile that never comes gives up after --profile-wait
# with the result and exit 0. The notebook's HTML says the same.
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import Tap, require_binary, kernel, canned_result, open_server, Cli  # noqa
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client"))
import cugrade  # noqa: E402

KEY = "00112233445566778899aabbccddeeff"
PROFILE = {"status": "ok", "seconds": 2.5, "kernels": [],
           "hints": [{"id": "bank_conflicts", "kernel": "k", "value": 15.2,
                      "text": "PROFILE-HINT-BANKS: 15.2-way shared-memory bank conflicts"}]}


def verdict_then_profile(s, run, delay, box):
    """Claim the next job, post its verdict with the profile pending, then
    (delay seconds later; None: never) its profile update."""
    job = run.claim(wait=20)
    box["job"] = job
    if not job:
        return
    doc = canned_result(job, score=80)
    doc["cugrade"]["profile"] = {"status": "pending"}
    lease = {"runner": run.name, "attempt": job["attempt"], "profile_key": KEY}
    box["verdict"] = s.post("/api/runner/jobs/%d/result" % job["id"], token=run.token,
                            json_body=dict(lease, status="graded", result=doc)).status
    box["verdict_at"] = time.time()
    if delay is None:
        return
    time.sleep(delay)
    box["profile"] = s.post("/api/runner/jobs/%d/profile" % job["id"], token=run.token,
                            json_body=dict(lease, profile=PROFILE)).status


def start(s, run, delay):
    box = {}
    th = threading.Thread(target=verdict_then_profile, args=(s, run, delay, box), daemon=True)
    th.start()
    return th, box


def main(t):
    s = open_server(t)
    run = s.runner()
    cli = Cli()
    r = cli.login(s, "alice_q7")
    t.eq(r.returncode, 0, "login", r.stdout + r.stderr)
    path = os.path.join(cli.home, "k.cu")
    with open(path, "wb") as f:
        f.write(kernel("profile later"))

    # submit --watch: the score, then the hints once the update lands.
    th, box = start(s, run, 2.0)
    r = cli.run("submit", "open", path, "--watch", "--interval", "0.2", "--profile-wait", "30")
    th.join(30)
    out = r.stdout + r.stderr
    t.ok(box.get("verdict") == 200 and box.get("profile") == 200,
         "the fake runner posted the verdict, then the profile", box)
    t.eq(r.returncode, 0, "submit --watch: exit 0", out)
    t.ok("score 80 / 100" in out and "Score is final; waiting up to 30 s for the profile" in out,
         "submit --watch says the score is final and that it waits for the profile", out)
    t.ok("PROFILE-HINT-BANKS" in r.stdout and "Profile pending" not in r.stdout,
         "...then prints the profile's hints", r.stdout)
    sid = box["job"]["id"]

    # show: a pending profile, said as such; --watch gives up in time.
    th, box = start(s, run, None)
    r = cli.run("submit", "open", path, "--profile-wait", "0")
    th.join(30)
    sid2 = box["job"]["id"]
    r = cli.run("show", str(sid2))
    t.ok(r.returncode == 0 and "score 80 / 100" in r.stdout and "Profile pending" in r.stdout,
         "show: the score and 'Profile pending'", r.stdout + r.stderr)
    t0 = time.time()
    r = cli.run("show", str(sid2), "--watch", "--interval", "0.2", "--profile-wait", "1.5")
    took = time.time() - t0
    t.ok(r.returncode == 0 and "still pending" in r.stdout + r.stderr and
         "score 80 / 100" in r.stdout and took < 20,
         "show --watch waits for a pending profile at most --profile-wait, then exit 0 with the "
         "result (%.1f s)" % took, r.stdout + r.stderr)
    r = cli.run("show", str(sid))
    t.ok("PROFILE-HINT-BANKS" in r.stdout, "show: the profile's hints once they landed", r.stdout)

    # The notebook's HTML.
    pend = {"id": 7, "lab": "open", "status": "graded", "score": 80, "max_score": 100,
            "result": {"score": 80, "cugrade": {"profile": {"status": "pending"}}}}
    html = cugrade.render_html(pend)
    t.ok("<h4>Profile</h4>" in html and "Profile pending" in html,
         "notebook: the result says the profile is pending", html[-600:])
    done = dict(pend, result={"score": 80, "cugrade": {"profile": PROFILE}})
    html = cugrade.render_html(done)
    t.ok("PROFILE-HINT-BANKS" in html and "Profile pending" not in html,
         "notebook: then its hints", html[-600:])
    cli.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()

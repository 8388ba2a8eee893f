#!/usr/bin/env python3
"""CI (no GPU): score first, the profile after (docs/runner.md "Profiling
hints"). A served runner posts a correct submission's verdict with
cugrade.profile {"status": "pending"} and a profile_key, before any
profile runs; the profile waits, holding nothing, while another job waits
for the GPU's memory (CACHE/gpu-0.admitq holds a live process), runs once
the GPU has room, and comes as an update with the same key (POST
.../profile): the stand-in ncu's report, its hints, and the catalogue's
hints with the profile's numbers, never a score. A profile whose GPU stays
busy past $CUGRADE_PROFILE_WAIT is skipped, and the update says so. A
profile gives the GPU back to a timing run that waits for it (a live line
in CACHE/gpu-0.timing): its pass is cut, it lets go of the shared lock,
and it runs again once the timing run is over (the update says
"yields": 1). A fake
nvidia-smi makes the runner see a GPU; a fake ncu writes a real report
(tests/runner/fixtures/ncu/naive.raw.csv); a scripted fake server. Prints
TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, FIX, RUNNER, failures, ok, overloaded, require_nvcc_root  # noqa: E402
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
from ledger import live_lines  # noqa: E402  (tests/runner/ledger.py)
from fakeserver import GOOD, job  # noqa: E402
TOKEN = "cgr_" + "ef" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-profafter-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)
fbin = os.path.join(tmp, "fakebin")
os.makedirs(fbin)
with open(os.path.join(fbin, "nvidia-smi"), "w") as f:
    f.write('#!/bin/sh\ncase "$1" in --query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, 9.0, '
            '00000000:19:00.0"; exit 0;; esac\nexit 2\n')
ncu_dir = os.path.join(tmp, "ncu")
os.makedirs(ncu_dir)
shutil.copy(os.path.join(FIX, "ncu", "naive.raw.csv"), ncu_dir)
with open(os.path.join(ncu_dir, "ncu"), "w") as f:
    # The profiled pass writes the fixture's report where --log-file says,
    # after sleeping the seconds in ncu/slow when there is one; the source
    # page (-i REPORT) has nothing to say.
    f.write('#!/bin/sh\nlog=\nfor a in "$@"; do [ "$prev" = --log-file ] && log=$a; '
            '[ "$a" = -i ] && exit 0; prev=$a; done\n'
            '[ -f "${0%/*}/slow" ] && sleep "$(cat "${0%/*}/slow")"\n'
            '[ -n "$log" ] && cat "${0%/*}/naive.raw.csv" > "$log"\nexit 0\n')
for d in (fbin, ncu_dir):
    os.chmod(d, 0o755)
    for x in os.listdir(d):
        os.chmod(os.path.join(d, x), 0o755)
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
admitq = os.path.join(cache, "gpu-0.admitq")
active = os.path.join(cache, "gpu-0.active")
timing = os.path.join(cache, "gpu-0.timing")


def serve(fake, name, extra_env):
    """One runner (--once) serving fake; returns (Popen, its log file)."""
    log = open(os.path.join(tmp, name + ".log"), "w+")
    env = dict(os.environ, PATH=fbin + ":" + os.environ["PATH"],
               CUGRADE_NCU=os.path.join(ncu_dir, "ncu"), CUGRADE_NO_GPU="1", **extra_env)
    p = subprocess.Popen([RUNNER, "--server", "http://127.0.0.1:%d" % fake.port, "--token-file", tok,
                          "--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"),
                          "--arch", "sm_90", "--once"],
                         stdout=log, stderr=log, env=env, start_new_session=True)
    return p, log


def stop(p, log):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    log.seek(0)
    text = log.read()
    if failures():
        for line in text.splitlines()[-30:]:
            print("#   log: " + line)
    return text


def overloaded_result(r):
    """A system_error of a host too loaded to compile (CI's shared cores):
    ours, retried by a real server; the scenario is run once more (the
    runner serves --once: the fake server's own retry would find it gone)."""
    return overloaded(r.get("status"), (r.get("result") or {}).get("output") or "")


def start(jid, name, extra_env, waiting=True):
    """A fake server with one job, a job waiting for the GPU's memory (a
    live process in the admission queue; waiting False: none, the process
    only) and a runner serving it; returns (fake, holder, runner, its log)."""
    holder = subprocess.Popen(["sleep", "600"])
    if waiting:
        open(admitq, "w").write("%d 7 0\n" % holder.pid)
    fake = fakeserver.FakeServer([job(jid, rubric, GOOD)])
    p, log = serve(fake, name, extra_env)
    return fake, holder, p, log


def end(fake, holder, p, log):
    if holder.poll() is None:
        holder.kill()
    holder.wait()
    open(admitq, "w").close()
    stop(p, log)
    fake.stop()


def served(jid, name, extra_env, waiting=True):
    """start(), until job jid's verdict is posted; a verdict of an
    overloaded host is served once more (as the server would retry it).
    Returns (fake, holder, runner, its log, the posted result)."""
    for tries in range(2):
        fake, holder, p, log = start(jid, name, extra_env, waiting)
        fake.wait_for(lambda: jid in fake.state["results"], 240)
        with fake.lock:
            r = fake.state["results"].get(jid) or {}
        if tries == 1 or not overloaded_result(r):
            return fake, holder, p, log, r
        end(fake, holder, p, log)


# ------------------------------------------------ the verdict first, then the profile
fake, holder, p, log, r1 = served(1, "runner1", {})
state = fake.state
try:
    got = 1 in state["results"]
    doc = r1.get("result") or {}
    pf = (doc.get("cugrade") or {}).get("profile") or {}
    ok(got and r1.get("status") == "graded" and doc.get("score", 0) > 0,
       "the correct submission's verdict is posted", json.dumps(r1)[:1500])
    ok(pf == {"status": "pending"}, "...with its profile pending", json.dumps(pf))
    key = r1.get("profile_key") or ""
    ok(len(key) == 16 and all(c in "0123456789abcdef" for c in key),
       "...and the key of the profile update to follow", r1.get("profile_key"))
    time.sleep(3)
    with fake.lock:
        early = state["profiles"].get(1)
    ok(early is None, "while another job waits for the GPU's memory the profile waits too",
       json.dumps(early)[:800])
    holder.kill()
    holder.wait()
    got = fake.wait_for(lambda: 1 in state["profiles"], 120)
    with fake.lock:
        u = state["profiles"].get(1) or {}
        at_r, at_p = state["result_at"].get(1, 0), state["profile_at"].get(1, 0)
    up = u.get("profile") or {}
    ok(got and at_p > at_r and u.get("profile_key") == key and u.get("runner") and
       u.get("attempt") == 1,
       "once the GPU has room the profile comes after the verdict, with its lease and key",
       json.dumps(u)[:1500])
    ok(up.get("status") == "ok" and up.get("kernels") and up.get("wait_seconds", 0) >= 3,
       "the update holds the profile (the stand-in ncu's report) and how long it waited",
       json.dumps(up)[:1500])
    ok(isinstance(u.get("hints"), list) and "score" not in u and "max_score" not in u and
       "tests" not in u,
       "the update carries the hints, never a score", json.dumps(u)[:1500])
    p.wait(timeout=60)
    ok(p.returncode == 0, "the runner (--once) ends once the profile is posted", p.returncode)
finally:
    end(fake, holder, p, log)

# ------------------------------------------------ a GPU that stays busy: skipped
fake, holder, p, log, r2 = served(2, "runner2", {"CUGRADE_PROFILE_WAIT": "2"})
state = fake.state
try:
    got = fake.wait_for(lambda: 2 in state["profiles"], 60)
    with fake.lock:
        r2 = state["results"].get(2) or {}
        u = state["profiles"].get(2) or {}
    up = u.get("profile") or {}
    ok(r2.get("status") == "graded" and
       ((r2.get("result") or {}).get("cugrade") or {}).get("profile") == {"status": "pending"},
       "the verdict posts first here too", json.dumps(r2)[:1200])
    ok(got and up.get("status") == "skipped" and
       "profile skipped: the GPU stayed busy" in (up.get("message") or ""),
       "a GPU that stays busy past CUGRADE_PROFILE_WAIT: the update says the profile was skipped",
       json.dumps(u)[:1200])
finally:
    end(fake, holder, p, log)

# ------------------------------------------------ a timing run waits: the profile yields
SLOW = 5
open(os.path.join(ncu_dir, "slow"), "w").write("%d\n" % SLOW)
fake, holder, p, log, r3 = served(3, "runner3", {}, waiting=False)
state = fake.state
try:
    # The profile starts after the verdict: it holds the shared lock as the
    # GPU's one user (gpu-0.active) while the stand-in ncu sleeps.
    t_end = time.time() + 30
    while not live_lines(active) and time.time() < t_end:
        time.sleep(0.05)
    profiling = bool(live_lines(active)) and 3 not in state["profiles"]
    ok(r3.get("status") == "graded" and profiling,
       "the verdict is posted and the profile runs (the GPU's one user)",
       json.dumps(r3)[:800])
    open(timing, "w").write("%d 9 0\n" % holder.pid)  # a timing run waits for the GPU
    time.sleep(2)
    users = live_lines(active)
    ok(profiling and not users and 3 not in state["profiles"],
       "a timing run waits: within 2 s the profile has let go of the GPU (it would hold it %d s)"
       % SLOW, users)
    holder.kill()
    holder.wait()
    got = fake.wait_for(lambda: 3 in state["profiles"], 60)
    with fake.lock:
        up = (state["profiles"].get(3) or {}).get("profile") or {}
    ok(got and up.get("status") == "ok" and up.get("kernels") and up.get("yields") == 1,
       "the timing run over, the profile runs again and comes whole, saying it yielded once",
       json.dumps(up)[:1200])
finally:
    end(fake, holder, p, log)
    open(timing, "w").close()

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): the warm pool of Python check runs (runner/grade/pool.c,
runner/service/warm.c; docs/python.md "The warm pool"), through a serving
runner (a scripted fake server), the real sandbox and the real owner in
Numba's CUDA simulator.

  - The lab's first Python claim finds no warm child: its check starts
    cold (the result says "check_start": "cold") and is graded.
  - The claim makes the runner start a warm child for the lab: its check
    run (owner.py --pool) waits in a work directory of its own.
  - The next claim is handed to that child and its check run is the warm
    one ("warm"), graded as the cold one was: the job's seed reached the
    owner through its gate (the judge regenerates the inputs from it).
  - A member serves one job: after it, its owner and its directories are
    gone, and another member with new ones waits.
  - A member that dies waiting (its owner killed) is replaced, and the
    next claim is graded warm by the new one; its code, hunting for its
    seed in /proc and on its descriptors, does not find it.
  - A lab with its own owner (lab.json python.owner) gets no warm child,
    unless its lab.json says that owner has the pool's mode (python.pool,
    as the profiling lab's lab.py): then its next claim is graded warm,
    unless a Python file of the lab's folder changed after its member
    started (then cold).
  - The runner stops: the unused member ends, its directories removed.
Prints TAP lines."""
import json, os, shutil, signal, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from simlab import FAKE_CUDA, GOOD, failures, make_timed_root, need, ok  # noqa: E402
from suite import RUNNER, ours  # noqa: E402
import fakeserver  # noqa: E402

need()
# A timed lab: its timing case is "1" (the simulator's speed), its runs
# capped at 20 s (no naive measure in CI), and a speed tier in the rubric.
tmp, root = make_timed_root("1", 20, timing_device_mb=16)
rub = json.load(open(os.path.join(root, "rubrics/reduction.json")))
# A lab with its own owner: the reduction's files, and lab.json's python.owner.
shutil.copytree(os.path.join(root, "labs/reduction"), os.path.join(root, "labs/ownlab"))
lj = os.path.join(root, "labs/ownlab/lab.json")
doc = json.load(open(lj))
doc["python"] = dict(doc.get("python") or {}, owner="own.py")
doc["lab"] = "ownlab"
json.dump(doc, open(lj, "w"))
# own.py runs the common owner (a copy beside lab.json would not find the
# modules beside owner.py).
with open(os.path.join(root, "labs/ownlab/own.py"), "w") as f:
    f.write("import os, runpy, sys\n"
            "py = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common', 'py')\n"
            "sys.path.insert(0, py)\n"
            "runpy.run_path(os.path.join(py, 'owner.py'), run_name='__main__')\n")
json.dump(dict(rub, lab="ownlab"), open(os.path.join(root, "rubrics/ownlab.json"), "w"))
# The same with python.pool: its own owner (a copy of owner.py) has --pool.
shutil.copytree(os.path.join(root, "labs/ownlab"), os.path.join(root, "labs/poollab"))
doc = dict(doc, lab="poollab", python=dict(doc["python"], pool=True))
json.dump(doc, open(os.path.join(root, "labs/poollab/lab.json"), "w"))
json.dump(dict(rub, lab="poollab"), open(os.path.join(root, "rubrics/poollab.json"), "w"))
work = os.path.join(tmp, "work")


def pjob(i, seed):
    return {"id": i, "lab": "reduction", "attempt": 1, "lease_seconds": 60, "filename": "good.py",
            "source": GOOD, "sha256": "x" * 64, "seed": seed, "rubric_version": 1, "rubric": rub}


HUNT = r'''import os, re, subprocess, time
_words = set()
# Controls: a word on a descriptor and one on a command line, which the
# hunt must find (else it proves nothing).
_ctl = open("/tmp/ctl", "w+")
_ctl.write("c0ffee00" * 4)
_ctl.flush()
_sh = subprocess.Popen(["/bin/sh", "-c", "sleep 5", "deadbeef" * 4])
def _scan():
    for _pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        for _f in ("cmdline", "environ"):
            try:
                _words.update(re.findall(r"[0-9a-f]{32}", open("/proc/%s/%s" % (_pid, _f), "rb").read().decode("latin1")))
            except OSError:
                pass
        try:
            for _fd in os.listdir("/proc/%s/fd" % _pid):
                try:
                    _words.update(re.findall(r"[0-9a-f]{32}", os.readlink("/proc/%s/fd/%s" % (_pid, _fd))))
                except OSError:
                    pass
        except OSError:
            pass
    import socket, stat
    for _fd in range(64):  # peeked, not read: the tenant's own socket must keep working
        try:
            _m = os.fstat(_fd).st_mode
            if stat.S_ISSOCK(_m):
                _b = socket.socket(fileno=os.dup(_fd)).recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            elif stat.S_ISREG(_m):
                _b = os.pread(_fd, 65536, 0)
            else:
                continue
            _words.update(re.findall(r"[0-9a-f]{32}", _b.decode("latin1")))
        except OSError:
            pass


# Scanned until both controls are seen (at most 3 s): once in CI, under
# load, one scan missed the command line's word.
for _ in range(30):
    _scan()
    if "c0ffee00" * 4 in _words and "deadbeef" * 4 in _words:
        break
    time.sleep(0.1)
_sh.kill()
print("hunted:", " ".join(sorted(_words)), flush=True)
'''


def members(mode=b"check", script=b"owner.py"):
    """The pids of this suite's warm owners (owner.py LAB MODE ... --pool)
    of their check runs (mode b"time": of their timing runs); script: a
    lab's own owner instead."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 6 and argv[0].endswith(b"python3") and argv[3].endswith(b"/" + script) and \
                argv[5] == mode and b"--pool" in argv and ours(int(d)):
            found.append(int(d))
    return found


def job_dirs():
    return sorted(d for d in os.listdir(work) if d.startswith("job-")) if os.path.isdir(work) else []


def wait(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    return cond()


def result(i):
    """Job i's status, its points, the runs the pool had
    started for it, whether it was timed, and the whole result."""
    fake.wait_for(lambda: i in fake.state["results"], 300)
    with fake.lock:
        r = fake.state["results"].get(i) or {}
    res = r.get("result") or {}
    cg = res.get("cugrade") or {}
    points = res.get("score")  # correctness and sanitizers: no speed points without a baseline here
    timed = (cg.get("timing") or {}).get("samples", 0) >= 2
    return r.get("status"), points, cg.get("warm_runs"), timed, r


fake = fakeserver.FakeServer([pjob(1, "0123456789abcdef0123456789abcdef")])
tok = os.path.join(tmp, "token")
open(tok, "w").write("cgr_" + "cd" * 32 + "\n")
logp = os.path.join(tmp, "runner.log")
log = open(logp, "w+")
KEEP = os.environ.get("KEEP_LOG")
env = dict(os.environ, CUGRADE_NO_GPU="1", CUDA_HOME=FAKE_CUDA[tmp])
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{fake.port}", "--token-file", tok,
                      "--root", root, "--cache", os.path.join(tmp, "cache"), "--work", work,
                      "--arch", "sm_90", "--jobs", "2", "--queue", "4"],
                     stdout=log, stderr=log, env=env)


def logged():
    return open(logp).read()


try:
    # 1. The first claim: no warm child yet.
    st, score, warm, timed, r = result(1)
    ok(st == "graded" and score == 20 and warm == [] and timed,
       "the lab's first Python claim finds no warm child: graded and timed, its runs started cold",
       json.dumps((r.get("result") or {}).get("cugrade"))[-2500:] + logged()[-1500:])

    # 2. A warm child for the lab, its member waiting in directories of its own.
    a = wait(lambda: members() if len(members()) == 1 and len(members(b"time")) == 1 and
             len(job_dirs()) == 1 else None, 120)
    dirs_a = job_dirs()
    ok(a and len(dirs_a) == 1,
       "after the claim, a warm check run and a warm timing run of the lab wait, in a job "
       "directory of their own", "%s %s %s" % (members(), job_dirs(), logged()[-1500:]))

    # 3. The next claim is the warm child's.
    with fake.lock:
        fake.state["queue"].append(pjob(2, "fedcba9876543210fedcba9876543210"))
    st, score, warm, timed, r = result(2)
    ok(st == "graded" and score == 20 and warm == ["check", "timing"] and timed and
       "job 2: lab reduction, attempt 1 (a warm child)" in logged(),
       "the next claim goes to the warm child: graded and timed as the cold one was, its check "
       "and timing runs the warm ones, given the job's seed (the judge regenerates the inputs "
       "from it)",
       json.dumps((r.get("result") or {}).get("cugrade"))[-2500:] + logged()[-1500:])
    b = wait(lambda: [x for x in members() if x not in a] if len(members()) == 1 and
             len(job_dirs()) == 1 and job_dirs() != dirs_a else None, 120)
    ok(a and b and a[0] not in members() and not [d for d in dirs_a if d in job_dirs()],
       "a member serves one job: its owner and its directories are gone after it, and a new "
       "member waits in new ones",
       "%s %s %s %s" % (a, members(), dirs_a, job_dirs()))

    # 4. A member that dies waiting is replaced.
    if b:
        os.kill(b[0], signal.SIGKILL)
    c = wait(lambda: [x for x in members() if x not in (a or []) + (b or [])], 120)
    ok(b and c and "ended before its job: starting another" in logged(),
       "a member whose owner was killed while it waited is replaced by a new one",
       "%s %s %s" % (b, members(), logged()[-1500:]))
    # Its job hunts for its seed as it loads (it reaches the warm owner on
    # the gate after the tenant exists): every process's cmdline and
    # environ it can read, where their descriptors point, and what its own
    # descriptors hold (peeked); it prints every 32-hex-digit word found.
    seed3 = "00112233445566778899aabbccddeeff"
    with fake.lock:
        fake.state["queue"].append(dict(pjob(3, seed3), source=HUNT + GOOD))
    st, score, warm, timed, r = result(3)
    out = ((r.get("result") or {}).get("cugrade") or {}).get("program_output") or ""
    ok(st == "graded" and score == 20 and warm == ["check", "timing"] and timed,
       "and the next claim is graded warm by the new member", json.dumps(r)[:1500])
    ok("c0ffee00" * 4 in out and "deadbeef" * 4 in out and seed3 not in out,
       "a warm run's student code does not find its seed in /proc or on a descriptor (where "
       "it finds the words planted there)",
       out[-1500:] or json.dumps(r)[-2500:])
    wait(lambda: len(members()) == 1, 120)

    # 5. A lab with its own owner (lab.json python.owner: no --pool mode,
    # as the profiling lab) gets no warm child: its claim forks a cold one.
    with fake.lock:
        fake.state["queue"].append(dict(pjob(4, "00112233445566778899aabbccddeeff"), lab="ownlab",
                                               rubric=dict(rub, lab="ownlab")))
    fake.wait_for(lambda: 4 in fake.state["results"], 300)
    time.sleep(3)
    own = [x for x in members() if b"ownlab" in open(f"/proc/{x}/cmdline", "rb").read()]
    ok("job 4: lab ownlab, attempt 1\n" in logged() and "job 4: graded, score 20/25" in logged() and
       not own and
       "check run of ownlab ended" not in logged(),
       "a lab with its own owner gets no warm child: its claim is forked cold and graded, no "
       "member started",
       "%s %s" % (own, logged()[-1500:]))

    # 6. One whose lab.json says its owner has the pool's mode gets one.
    with fake.lock:
        fake.state["queue"].append(dict(pjob(5, "0123456789abcdef0123456789abcdef"), lab="poollab",
                                               rubric=dict(rub, lab="poollab")))
    st, score, warm, timed, r = result(5)
    d = wait(lambda: members(b"check", b"own.py") if len(members(b"check", b"own.py")) == 1 and
             len(members(b"time", b"own.py")) == 1 else None, 120)
    ok(st == "graded" and warm == [] and d and
       b"poollab" in open(f"/proc/{d[0]}/cmdline", "rb").read(),
       "a lab whose own owner has the pool's mode (python.pool): its first claim cold, then a "
       "warm check run and timing run of its own owner wait",
       "%s %s %s" % (st, warm, logged()[-1500:]))
    with fake.lock:
        fake.state["queue"].append(dict(pjob(6, "fedcba9876543210fedcba9876543210"), lab="poollab",
                                               rubric=dict(rub, lab="poollab")))
    st, score, warm, timed, r = result(6)
    ok(st == "graded" and score == 20 and warm == ["check", "timing"] and timed,
       "... and its next claim is graded warm by them",
       json.dumps((r.get("result") or {}).get("cugrade"))[-2500:] + logged()[-1500:])

    # 7. A member whose owner's script changed after it started (a deploy
    # of the lab) is not used: the next claim starts cold, on the new file.
    e = wait(lambda: members(b"check", b"own.py") if len(members(b"check", b"own.py")) == 1 and
             len(members(b"time", b"own.py")) == 1 else None, 120)
    time.sleep(0.05)
    os.utime(os.path.join(root, "labs/poollab/own.py"))
    with fake.lock:
        fake.state["queue"].append(dict(pjob(7, "0123456789abcdef0123456789abcdef"), lab="poollab",
                                        rubric=dict(rub, lab="poollab")))
    st, score, warm, timed, r = result(7)
    ok(e and st == "graded" and score == 20 and warm == [] and timed,
       "a member whose lab's owner script (own.py) changed after it started is not used: the "
       "next claim is graded cold", "%s %s %s %s" % (e, st, warm, logged()[-1500:]))
finally:
    # 5. The runner stops: the member waiting ends with it.
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
    fake.stop()
if KEEP:
    shutil.copy(logp, KEEP)
left = wait(lambda: not members() and not members(b"time") and not job_dirs(), 5)
ok(p.returncode is not None and left,
   "the runner stops: it waits for its warm child, whose waiting runs end and whose "
   "directories are removed", "%s %s %s" % (members(), members(b"time"), job_dirs()))
print("1..12")
sys.exit(1 if failures() else 0)

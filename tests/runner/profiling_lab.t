#!/usr/bin/env python3
"""CI (no GPU): the profiling lab (labs/profiling) with Debian's CPU-only
python3-torch, the same logic as on a GPU with device = cpu.

First the owner alone (labs/profiling/lab.py, its channel on fd 3, the
trainers beside it): the starter graded as a submission, a good solution
(tests/gpu/solutions-py/profiling/fast.py), one that still calls .item()
every step (item_only.py) and one whose results differ (changed_results.py):
the profiler's counts of syncs and copies per step, the results check
against the starter's, and a timing run's record (the starter's time as
baseline_ms, the re-check on fresh data). Then the judge
(reference/profiling/judge.py) on those channels, and the whole pipeline
through the real runner and sandbox: cugrade-runner grade. Speeds are not
asserted here (a shared CPU): tests/gpu does that. The lab runs with a
small configuration (its lab.json "train" block shrunk in a copy of the
tree). Prints TAP lines."""
import functools, json, os, shutil, socket, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=40)  # a failure prints 40 lines of its detail
SOL = os.path.join(ROOT, "tests/gpu/solutions-py/profiling")
PY = "/usr/bin/python3"
STEPS = 20


if subprocess.run([PY, "-c", "import torch, numpy"], capture_output=True).returncode != 0:
    print("not ok - needs python3-torch (sh deploy/install-deps.sh test)")
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix="cugrade-prof-")
os.chmod(tmp, 0o755)
root = os.path.join(tmp, "root")
for d in ("labs/common", "labs/profiling", "reference/profiling"):
    shutil.copytree(os.path.join(ROOT, d), os.path.join(root, d))
shutil.copy(os.path.join(ROOT, "labs/build-lab.sh"), os.path.join(root, "labs"))
os.makedirs(os.path.join(root, "rubrics"))
shutil.copy(os.path.join(ROOT, "rubrics/profiling.json"), os.path.join(root, "rubrics"))
lj = os.path.join(root, "labs/profiling/lab.json")
with open(lj) as f:
    lab = json.load(f)
lab["train"].update(rows=2048, features=32, hidden=64, batch=64, warmup_steps=2,
                    check_steps=STEPS, time_steps=8, time_rounds_min=3, time_rounds_max=3)
with open(lj, "w") as f:
    json.dump(lab, f)
for d, _, files in os.walk(tmp):
    os.chmod(d, 0o755)
    for x in files:
        os.chmod(os.path.join(d, x), 0o755)
OWNER = os.path.join(root, "labs/profiling/lab.py")


def owner(mode, src, seed="0123456789abcdef", sim="1"):
    """Run the owner on src, with the runner's word that this host has no
    GPU (NUMBA_ENABLE_CUDASIM=SIM, as on CI; None: a GPU host's run);
    returns (exit code, records, channel path, stderr)."""
    chan = os.path.join(tmp, "chan-%s-%s" % (mode, os.path.basename(src)))
    args = ["--cases", "results,syncs,copies"] if mode == "check" else \
        ["--case", "results", "--max-ms", "100"]
    p = subprocess.run(["/bin/sh", "-c", 'f=$1; shift; exec "$@" 3>"$f"', "sh", chan, PY, "-I",
                        "-B", OWNER, "profiling", mode] + args + ["--file", src],
                       env=dict({"PATH": "/usr/bin:/bin", "CUGRADE_SEED": seed},
                                **({"NUMBA_ENABLE_CUDASIM": sim} if sim else {})),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    recs = [json.loads(l) for l in open(chan, "rb").read().splitlines() if l.strip()]
    return p.returncode, recs, chan, p.stderr


def cases(recs):
    return {r["name"]: r for r in recs if r.get("type") == "case"}


def per_step(msg):
    """The student's count in a syncs/copies message ("N ... in S steps")."""
    return int(msg.split()[0])


# ---------------------------------------------------------------- the owner alone
rc, recs, starter_chan, err = owner("check", os.path.join(root, "labs/profiling/starter.py"))
c = cases(recs)
ok(rc == 0 and recs[-1] == {"type": "done"} and set(c) == {"results", "syncs", "copies"},
   "the starter as a submission: three case records and done", str(recs)[:1500] + err[-1500:])
ok(c.get("results", {}).get("passed") and c["results"].get("value") == 0.0,
   "the starter's results equal the starter's (bit for bit on the CPU)", c.get("results"))
s, k = c.get("syncs", {}), c.get("copies", {})
ok(not s.get("passed") and per_step(s.get("message", "0")) >= STEPS and
   "aten::_local_scalar_dense" in s.get("message", ""),
   "the starter fails syncs: at least one scalar read (.item()) per step, named in the feedback", s)
ok(not k.get("passed") and 4 * STEPS <= per_step(k.get("message", "0")) <= 5 * STEPS,
   "the starter fails copies: 4 per step (two .to(device), .float(), .cpu()) and its prints'", k)
ok(s.get("value") == s.get("baseline_value") and
   abs(k.get("value", 0) - k.get("baseline_value", 1)) <= 0.05 * k.get("baseline_value", 1),
   "the starter's counts are the baseline's (the same file, profiled twice)", (s, k))

# A GPU host's run (no simulator flag) whose PyTorch sees no GPU (the
# second GPU's sandbox once named a device it did not show): ours, exit 2,
# never a grade timed on the CPU.
rc, recs, _, err = owner("check", os.path.join(SOL, "fast.py"), sim=None)
ok(rc == 2 and "found no GPU" in err and not cases(recs),
   "on a GPU host, a run whose PyTorch finds no GPU is ours (exit 2), not graded on the CPU",
   "exit %s\n%s\n%s" % (rc, str(recs)[:800], err[-1500:]))

rc, recs, fast_chan, err = owner("check", os.path.join(SOL, "fast.py"))
c = cases(recs)
ok(rc == 0 and all(c.get(n, {}).get("passed") for n in ("results", "syncs", "copies")),
   "fast.py passes results, syncs and copies", str(recs)[:1500] + err[-1500:])
ok(per_step(c.get("syncs", {}).get("message", "9")) == 0 and
   per_step(c.get("copies", {}).get("message", "9")) == 3,
   "fast.py: 0 syncs, 3 copies in all (X, Y and the order moved once)", c)
ok(c.get("results", {}).get("value", 1) <= 1e-6, "fast.py's losses and weights match the starter's",
   c.get("results"))

rc, recs, _, err = owner("check", os.path.join(SOL, "item_only.py"))
c = cases(recs)
ok(rc == 0 and c.get("results", {}).get("passed") and c.get("copies", {}).get("passed") and
   not c.get("syncs", {}).get("passed") and per_step(c["syncs"]["message"]) == STEPS,
   "item_only.py: results and copies pass, syncs fail with exactly one per step", c)

rc, recs, bad_chan, err = owner("check", os.path.join(SOL, "changed_results.py"))
c = cases(recs)
r = c.get("results", {})
ok(rc == 0 and not r.get("passed") and "differ from the starter's" in r.get("message", "") and
   r.get("value", 0) > 1e-3, "changed_results.py fails results, with the step and the difference",
   r)
ok(c.get("syncs", {}).get("passed") and c.get("copies", {}).get("passed"),
   "changed_results.py's counts still pass (they are graded apart)", c)

RAISES = os.path.join(tmp, "raises.py")
with open(RAISES, "w") as f:
    f.write("def train(model, optimizer, data, steps):\n    raise ValueError('not yet')\n")
rc, recs, _, err = owner("check", RAISES)
c = cases(recs)
ok(rc == 0 and all(not c.get(n, {}).get("passed") for n in ("results", "syncs", "copies")) and
   "ValueError: not yet" in c.get("results", {}).get("message", "") and
   "raises.py line 2" in c.get("results", {}).get("message", ""),
   "an exception in train() fails every case with its type, message and line", c)

NOIMPORT = os.path.join(tmp, "noimport.py")
with open(NOIMPORT, "w") as f:
    f.write("import cugrade_no_such_module\n")
rc, recs, _, err = owner("check", NOIMPORT)
ok(rc == 5 and recs and recs[-1].get("type") == "compile_error" and
   "ModuleNotFoundError" in recs[-1].get("message", ""),
   "a file that does not import is a compile_error (exit 5)", str(recs)[:800] + err[-800:])

rc, recs, time_chan, err = owner("time", os.path.join(SOL, "fast.py"))
t = [r for r in recs if r.get("type") == "timing"]
t = t[0] if t else {}
ok(rc == 0 and len(t.get("samples_ms", [])) == 3 and t.get("baseline_ms", 0) > 0 and
   t.get("recheck_passed") is True and t.get("timed_by") == "owner",
   "time: fast.py's record has 3 samples, the starter's baseline_ms and a passed re-check",
   str(recs)[:1500] + err[-1500:])
hold = [r for r in recs if r.get("type") == "hold"]
hs = {k: v for k, v in (hold[0] if hold else {}).items() if k != "type"}
ok(len(hold) == 1 and "hold_s" not in t and sorted(hs) == ["load", "starter_rounds", "student_rounds", "warm_up"] and
   all(isinstance(v, (int, float)) and v >= 0 for v in hs.values()) and hs["starter_rounds"] > 0,
   "a hold record takes the hold apart: the starter's rounds, the module's load, its warm-up, "
   "its rounds (s)", hold)
rc, recs, bad_time_chan, err = owner("time", os.path.join(SOL, "changed_results.py"))
t = [r for r in recs if r.get("type") == "timing"]
t = t[0] if t else {}
ok(rc == 0 and t.get("recheck_passed") is False and t.get("wrong_samples") == 3 and
   "differ from the starter's" in t.get("recheck_message", ""),
   "time: changed_results.py's timed calls all differ on fresh data: re-check failed", t)

# A train() that patches every clock of its process and sleeps 50 ms a
# step: the owner's clock is in another process.
SLOW = os.path.join(tmp, "slow_patched.py")
with open(os.path.join(SOL, "fast.py")) as f:
    src = f.read()
with open(SLOW, "w") as f:
    f.write(src.replace("        losses[step] = loss.detach()\n",
                        "        losses[step] = loss.detach()\n        _time.sleep(0.05)\n", 1) +
            "\nimport time as _time\n_sleep = _time.sleep\n"
            "for _n in ('perf_counter', 'monotonic', 'time', 'process_time'):\n"
            "    setattr(_time, _n, lambda: 0.0)\n"
            "    setattr(_time, _n + '_ns', lambda: 0)\n")
rc, recs, _, err = owner("time", SLOW)
t = [r for r in recs if r.get("type") == "timing"]
t = t[0] if t else {}
ok(rc == 0 and t.get("samples_ms") and min(t["samples_ms"]) >= 50 and t.get("recheck_passed"),
   "time: a train() that patches its clocks and sleeps 50 ms a step is timed at >= 50 ms a step",
   str(recs)[:1200] + err[-1200:])

# At the gate of a timing run (--gate, fd 4) the student's trainer is
# already up, PyTorch and its device (our code only), so its start-up is not
# in the GPU's exclusive hold; its module is not imported yet: nothing of
# the student's runs while the starter is timed. After 'g' the run ends as
# any timing run does.
MARKED = os.path.join(tmp, "marked.py")
MARK = os.path.join(tmp, "imported.mark")
with open(MARKED, "w") as f:
    f.write("open(%r, 'w').close()\n" % MARK + open(os.path.join(SOL, "fast.py")).read())


def trainers_of(pid):
    """The trainer.py processes whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % d).read()
            argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2:].split()[1]) == pid and \
                any(a.endswith(b"trainer.py") for a in argv):
            out.append(int(d))
    return out


ours, theirs = socket.socketpair()
chan = os.path.join(tmp, "chan-gate")
p = subprocess.Popen(["/bin/sh", "-c", 'f=$1; g=$2; shift 2; exec "$@" 3>"$f" 4<&"$g"', "sh", chan,
                      str(theirs.fileno()), PY, "-I", "-B", OWNER, "profiling", "time", "--case",
                      "results", "--max-ms", "100", "--file", MARKED, "--gate"],
                     pass_fds=(theirs.fileno(),), env={"PATH": "/usr/bin:/bin", "CUGRADE_SEED": "1",
                                                       "NUMBA_ENABLE_CUDASIM": "1"},
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
theirs.close()
ours.settimeout(600)
try:
    said = ours.recv(1)
except OSError:
    said = b""
at_gate = trainers_of(p.pid)
imported = os.path.exists(MARK)
if said == b"r":
    ours.send(b"g")
out, err = p.communicate(timeout=600)
ours.close()
recs = [json.loads(x) for x in open(chan, "rb").read().splitlines() if x.strip()]
ok(said == b"r" and len(at_gate) == 2 and not imported,
   "time --gate: at the gate the starter's and the student's trainers are both up, the student's "
   "module not imported", "said %r, trainers %r, imported %r\n%s" % (said, at_gate, imported,
                                                                       err.decode()[-1500:]))
t = [r for r in recs if r.get("type") == "timing"]
ok(p.returncode == 0 and t and t[0].get("recheck_passed") and os.path.exists(MARK),
   "... and after 'g' the student's module is loaded and timed", str(recs)[:1200] +
   err.decode()[-1200:])

# --pool: a warm run of the runner's pool (runner/grade/pool.c). Before its
# job the owner starts both trainers and has them import PyTorch (no device;
# the student's trainer has no file), says 'r' on the gate and waits for the
# job's line; then the run is the cold run's, on the line's file and seed.


def pool_run(mode, line):
    """lab.py MODE --pool on a gate of ours; LINE (bytes, or None: the gate
    closed instead) sent after its 'r'. Returns (what it said, its trainers'
    command lines at 'r', the module imported at 'r', exit code, records,
    stderr). A time run's timing gate ('r' again) is answered 'g'."""
    if os.path.exists(MARK):
        os.unlink(MARK)
    ours, theirs = socket.socketpair()
    chan = os.path.join(tmp, "chan-pool-" + mode)
    args = ["check", "--pool"] if mode == "check" else \
        ["time", "--case", "results", "--max-ms", "100", "--gate", "--pool"]
    p = subprocess.Popen(["/bin/sh", "-c", 'f=$1; g=$2; shift 2; exec "$@" 3>"$f" 4<&"$g"', "sh",
                          chan, str(theirs.fileno()), PY, "-I", "-B", OWNER, "profiling"] + args,
                         pass_fds=(theirs.fileno(),),
                         env={"PATH": "/usr/bin:/bin", "NUMBA_ENABLE_CUDASIM": "1"},
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    theirs.close()
    ours.settimeout(600)
    said = b""
    try:
        said = ours.recv(1)
    except OSError:
        pass
    argv = [open("/proc/%d/cmdline" % x, "rb").read().split(b"\0") for x in trainers_of(p.pid)]
    imported = os.path.exists(MARK)
    if said == b"r" and line is not None:
        ours.sendall(line)
        if mode == "time":
            try:
                said += ours.recv(1)
            except OSError:
                pass
            if said == b"rr":
                ours.send(b"g")
    else:
        ours.shutdown(socket.SHUT_RDWR)
    out, err = p.communicate(timeout=600)
    ours.close()
    recs = [json.loads(x) for x in open(chan, "rb").read().splitlines() if x.strip()]
    return said, argv, imported, p.returncode, recs, err.decode()


def job_line(cases_csv):
    return (json.dumps({"file": MARKED, "cases": cases_csv, "seed": "0123456789abcdef"}) +
            "\n").encode()


said, argv, imported, rc, recs, err = pool_run("check", job_line("results,syncs,copies"))
files = sorted(a[a.index(b"-B") + 2] if b"-B" in a else b"" for a in argv)
ok(said == b"r" and len(argv) == 2 and files == [b"-", os.path.join(root, "labs/profiling/starter.py").encode()]
   and not imported,
   "check --pool: at 'r' both trainers are up, the student's with no file ('-'), its module not "
   "imported", "said %r, trainers %r, imported %r\n%s" % (said, argv, imported, err[-1500:]))
c, cold = cases(recs), cases([json.loads(x) for x in open(fast_chan, "rb").read().splitlines()
                              if x.strip()])
ok(rc == 0 and recs and recs[-1] == {"type": "done"} and os.path.exists(MARK) and
   all(c.get(n, {}).get("passed") for n in ("results", "syncs", "copies")) and
   c["results"] == cold.get("results") and
   [c[n].get("value") for n in ("syncs", "copies")] == [cold[n].get("value") for n in ("syncs", "copies")],
   "check --pool: after the job's line, the cases are the cold run's on the same seed (fast.py; "
   "the starter's own counts vary a little from run to run, so its baseline is not compared)",
   "%s\n%s\n%s" % (str(recs)[:1500], str(cold)[:800], err[-1500:]))
said, argv, imported, rc, recs, err = pool_run("time", job_line("results"))
t = [r for r in recs if r.get("type") == "timing"]
ok(said == b"rr" and len(argv) == 2 and not imported and rc == 0 and t and
   t[0].get("recheck_passed") and len(t[0].get("samples_ms", [])) == 3 and os.path.exists(MARK),
   "time --gate --pool: 'r' for the job, 'r' again at the timing gate, then timed as a cold run",
   "said %r, trainers %r, imported %r, exit %s\n%s\n%s" % (said, argv, imported, rc,
                                                          str(recs)[:1200], err[-1500:]))
said, argv, imported, rc, recs, err = pool_run("check", None)
ok(said == b"r" and rc == 0 and recs == [] and not os.path.exists(MARK),
   "check --pool: a gate closed without a job ends the run quietly, nothing written",
   "said %r, exit %s\n%s\n%s" % (said, rc, recs, err[-1500:]))
said, argv, imported, rc, recs, err = pool_run("check", b'{"file": 1}\n')
ok(said == b"r" and rc == 2 and not os.path.exists(MARK) and "job line" in err,
   "check --pool: a job line that is not {file, cases, seed} is ours (exit 2), nothing loaded",
   "said %r, exit %s\n%s\n%s" % (said, rc, recs, err[-1500:]))

# ---------------------------------------------------------------- the judge
JUDGE = os.path.join(root, "reference/profiling/judge.py")


def judge(chan, cases_csv="results,syncs,copies"):
    p = subprocess.run([PY, JUDGE, "--seed", "1", "--channel", chan, "--cases", cases_csv],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else None), p.stderr


rc, d, err = judge(fast_chan)
ok(rc == 0 and d["complete"] and [x["passed"] for x in d["cases"]] == [True, True, True],
   "judge: fast.py's channel, three passed cases", d or err)
rc, d, err = judge(starter_chan)
ok(rc == 0 and [x["passed"] for x in d["cases"]] == [True, False, False] and
   "per step" in d["cases"][1]["message"], "judge: the starter's channel, syncs and copies fail",
   d or err)
rc, d, err = judge(time_chan, "")
ok(rc == 0 and d["timing"] and d["timing"]["baseline_ms"] > 0 and d["timing"]["n"] == 3 and
   d["timing"]["recheck_passed"], "judge: the timing document carries baseline_ms and the re-check",
   d or err)
FORGED = os.path.join(tmp, "forged")
with open(FORGED, "wb") as f:
    f.write(b'{"type":"case","name":"results","status":"ok","passed":true}\n'
            b'{"type":"case","name":"nope","passed":true}\n{"type":"case","name":"syncs",'
            b'"status":"ok","bytes":4}\nxxxx')
rc, d, err = judge(FORGED)
ok(rc == 0 and not d["complete"] and [x["passed"] for x in d["cases"]] == [True, False, False] and
   d["errors"], "judge: an unknown case, a payload and no done are errors, not crashes", d or err)
proc = subprocess.Popen([PY, JUDGE, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        text=True)
out, _ = proc.communicate("--seed\t1\t--channel\t%s\t--cases\tresults\n" % fast_chan, timeout=60)
lines = out.splitlines()
ok(proc.returncode == 0 and lines[0] == "ready" and json.loads(lines[1])["cases"][0]["passed"],
   "judge --serve: ready, then one verdict line per command", out)

# ---------------------------------------------------------------- the runner


def grade(src, name):
    path = os.path.join(tmp, name)
    if src != path:
        shutil.copy(src, path)
    os.chmod(path, 0o644)
    p = subprocess.run([RUNNER, "grade", "--root", root, "--lab", "profiling", "--file", path,
                        "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                        "--arch", "sm_90", "--seed", "0123456789abcdef0123456789abcdef"],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, CUGRADE_NO_GPU="1"))
    try:
        return json.loads(p.stdout), p.stderr
    except ValueError:
        return {"status": "unparsable", "result": {}}, p.stderr + p.stdout


if os.geteuid() != 0 or not os.access(RUNNER, os.X_OK):
    print("ok - # SKIP the runner part needs root (the sandbox) and %s" % RUNNER)
else:
    doc, err = grade(os.path.join(SOL, "fast.py"), "fast.py")
    res = doc.get("result", {})
    cs = {x["name"]: x for x in res.get("cugrade", {}).get("cases", [])}
    ok(doc.get("status") == "graded" and all(cs.get(n, {}).get("passed")
                                             for n in ("results", "syncs", "copies")),
       "runner: fast.py is graded, its three cases pass (owner, trainers, sandbox, judge)",
       str(doc)[:2000] + err[-2000:])
    tm = res.get("cugrade", {}).get("timing") or {}
    ok(tm.get("baselines", {}).get("naive") or tm.get("naive_ms") or
       "speedup_vs_naive" in json.dumps(res),
       "runner: the speed line is scored against the starter's time (the naive slot)",
       json.dumps(res)[:2500])
    # PyTorch 2.x asks getpass.getuser() for its cache directories; the
    # sandbox's uid has no passwd entry, so the trainers get USER/LOGNAME.
    GETPASS = os.path.join(tmp, "getpass_user.py")
    with open(os.path.join(SOL, "fast.py")) as f:
        src = f.read()
    with open(GETPASS, "w") as f:
        f.write(src.replace("    dev = data.device\n",
                            "    import getpass\n    print('user', getpass.getuser())\n"
                            "    dev = data.device\n", 1))
    doc, err = grade(GETPASS, "getpass_user.py")
    cs = {x["name"]: x for x in doc.get("result", {}).get("cugrade", {}).get("cases", [])}
    ok(doc.get("status") == "graded" and cs.get("results", {}).get("passed"),
       "runner: getpass.getuser() works in the sandbox (as PyTorch 2.x's optimizer needs)",
       str(doc)[:1500] + err[-800:])
    doc, err = grade(os.path.join(SOL, "changed_results.py"), "changed_results.py")
    res = doc.get("result", {})
    cs = {x["name"]: x for x in res.get("cugrade", {}).get("cases", [])}
    ok(doc.get("status") == "graded" and not cs.get("results", {}).get("passed") and
       "flagged" in json.dumps(res.get("cugrade", {}).get("timing") or {}) and
       (res.get("cugrade", {}).get("timing") or {}).get("flagged") is True,
       "runner: changed_results.py fails results and its timing is flagged (no speed points)",
       str(doc)[:2500] + err[-1500:])
    CU = os.path.join(tmp, "kernel.cu")
    with open(CU, "w") as f:
        f.write("int x;\n")
    doc, err = grade(CU, "kernel.cu")
    ok(doc.get("status") == "compile_error" and "Python file" in json.dumps(doc),
       "runner: a .cu file for this Python-only lab is a compile_error that says so",
       str(doc)[:1500] + err[-800:])

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

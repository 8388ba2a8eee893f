#!/usr/bin/env python3
"""CI (no GPU): `cugrade-runner prepare` compiles the Python root's
bytecode where it is missing (runner/grade/python.c python_bytecode_start,
docs/python.md "Bytecode"). The GPU image's venv was installed with
PYTHONDONTWRITEBYTECODE: no .pyc for torch, numpy or sympy, and every
process of ours runs -B, so each one compiled those modules' source at
every import (on an H200 host `import torch` took 5.8-7.0 s of CPU).

A made-up root (PREFIX/bin/python3, a link to Debian's, as a venv's is)
with a package that has no bytecode and a module that does not compile:
after prepare each module that compiles has its .pyc, which an isolated
-B interpreter then loads instead of the source; the broken one is skipped
and prepare still ends; a second prepare rewrites nothing.

A serving runner starts the same compile and does not wait for it: its
first claim comes at once (a no-op compile of the H200 host's venv took
9-12 s, all of it before the first claim, so a submission to an idle
service waited that long), and its log says how the compile ended once it
has. Here a made-up interpreter holds its compileall until the test lets
it go, and the runner claims a job of the fake lab meanwhile. Prints TAP."""
import functools, importlib.util, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok as suite_ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
import fakegpu  # noqa: E402  (a fake nvidia-smi and libcuda.so.1)
ok = functools.partial(suite_ok, lines=None)
TOKEN = "cgr_" + "ab" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-pyc-")
os.chmod(tmp, 0o755)  # the sandbox's uid reads the work directories under it
try:
    os.makedirs(os.path.join(tmp, "root/labs"))
    pyroot = os.path.join(tmp, "pyroot")
    os.makedirs(os.path.join(pyroot, "bin"))
    os.symlink("/usr/bin/python3", os.path.join(pyroot, "bin", "python3"))
    site = os.path.join(pyroot, "lib", "python3", "site-packages")
    pkg = os.path.join(site, "cgpkg")
    os.makedirs(pkg)
    src = {"__init__.py": "VALUE = 1\n", "sub.py": "def f():\n    return 2\n",
           "bad.py": "def f(:\n"}
    for name, text in src.items():
        with open(os.path.join(pkg, name), "w") as f:
            f.write(text)
    pyc = {n: importlib.util.cache_from_source(os.path.join(pkg, n)) for n in src}
    ok(not any(os.path.exists(p) for p in pyc.values()), "the made-up root has no bytecode", str(pyc))

    def prepare():
        env = dict(os.environ, PATH="/usr/bin:/bin", CUGRADE_PYTHON=os.path.join(pyroot, "bin", "python3"))
        p = subprocess.run([RUNNER, "prepare", "--root", os.path.join(tmp, "root"), "--cache",
                            os.path.join(tmp, "cache")], capture_output=True, text=True, env=env,
                           timeout=300)
        return p.returncode, p.stderr

    rc, err = prepare()
    ok(rc == 0 and ("bytecode (%s/lib): compiled where it was missing, but for modules that do "
                    "not compile" % pyroot) in err,
       "prepare compiles the root's bytecode and says so, and that a module did not compile",
       "rc %d\n%s" % (rc, err[-2000:]))
    ok(os.path.exists(pyc["__init__.py"]) and os.path.exists(pyc["sub.py"]),
       "every module that compiles has its .pyc", str(pyc))
    ok(not os.path.exists(pyc["bad.py"]), "a module that does not compile is skipped, and prepare ends",
       err[-1500:])
    v = subprocess.run([os.path.join(pyroot, "bin", "python3"), "-I", "-B", "-v", "-c",
                        "import sys; sys.path.insert(0, %r); import cgpkg.sub; print(cgpkg.sub.f())" % site],
                       capture_output=True, text=True, timeout=60)
    ok(v.stdout.strip() == "2" and ("code object from '%s'" % pyc["sub.py"]) in v.stderr,
       "an isolated -B interpreter (an owner, a tenant) loads the .pyc, not the source",
       v.stdout + "\n".join(l for l in v.stderr.splitlines() if "cgpkg" in l))
    before = os.stat(pyc["sub.py"]).st_mtime_ns
    rc, err = prepare()
    ok(rc == 0 and os.stat(pyc["sub.py"]).st_mtime_ns == before,
       "a second prepare rewrites nothing (the bytecode is up to date)", err[-1000:])

    # A serving runner: the compile (held while `hold` exists) does not
    # delay its first claim.
    slow = os.path.join(tmp, "slowroot")
    os.makedirs(os.path.join(slow, "bin"))
    os.makedirs(os.path.join(slow, "lib"))
    hold, started, ended = (os.path.join(tmp, n) for n in ("hold", "started", "ended"))
    with open(os.path.join(slow, "bin", "python3"), "w") as f:
        f.write("#!/bin/sh\n"
                "case \"$*\" in *compileall*)\n"
                "  : > %s; while [ -e %s ]; do sleep 0.1; done\n"
                "  /usr/bin/python3 \"$@\"; rc=$?; : > %s; exit $rc;;\n"
                "esac\n"
                "exec /usr/bin/python3 \"$@\"\n" % (started, hold, ended))
    os.chmod(os.path.join(slow, "bin", "python3"), 0o755)
    open(hold, "w").close()
    rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
    fake = fakeserver.FakeServer([fakeserver.job(1, rubric)])
    tok = os.path.join(tmp, "token")
    open(tok, "w").write(TOKEN + "\n")
    fake_env, _, _ = fakegpu.make(tmp)
    log = open(os.path.join(tmp, "runner.log"), "w+")
    r = subprocess.Popen([RUNNER, "--server", "http://127.0.0.1:%d" % fake.port, "--token-file", tok,
                          "--root", tree.lay_out(os.path.join(tmp, "course")),
                          "--cache", os.path.join(tmp, "scache"), "--work", os.path.join(tmp, "work"),
                          "--arch", "sm_90", "--jobs", "1", "--queue", "1"],
                         stdout=log, stderr=log, start_new_session=True,
                         env=dict(os.environ, **fake_env, CUGRADE_NO_GPU="1",
                                  CUGRADE_BASELINE_REFRESH="0",
                                  CUGRADE_PYTHON=os.path.join(slow, "bin", "python3")))

    def runner_log():
        log.flush()
        with open(log.name) as f:
            return f.read()
    try:
        claimed = fake.wait_for(lambda: 1 in fake.state["claimed"], 120)
        ok(claimed and os.path.exists(started) and not os.path.exists(ended),
           "a serving runner claims its first job while its bytecode compile still runs",
           "claimed %s, compile started %s, ended %s; log: %s"
           % (claimed, os.path.exists(started), os.path.exists(ended), runner_log()[-1500:]))
        os.unlink(hold)
        said = fake.wait_for(lambda: "while the runner served" in runner_log(), 60)
        ok(said and os.path.exists(ended) and
           ("the Python root's bytecode (%s/lib): compiled where it was missing" % slow) in runner_log(),
           "once the compile ends, the runner's log says so", runner_log()[-1500:])
    finally:
        if os.path.exists(hold):
            os.unlink(hold)
        try:
            os.killpg(r.pid, 15)
        except ProcessLookupError:
            pass
        r.wait(timeout=60)
        fake.stop()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

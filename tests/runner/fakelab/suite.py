"""The prelude of the runner suites (tests/runner/*.t and python/simlab.py):
where things are, a TAP ok() that counts failures, and CI's precondition
that nvcc and root are there. A suite finds this folder beside itself:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
    from suite import ROOT, RUNNER, failures, ok, require_nvcc_root  # noqa: E402

and ends with `sys.exit(1 if failures() else 0)`. Standard library only."""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The checkout (CUGRADE_ROOT, else three folders up from here: tests/runner/fakelab).
ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(HERE, "../../.."))
BUILD = os.environ.get("CUGRADE_BUILD") or os.path.join(ROOT, "build")
RUNNER = os.path.join(BUILD, "cugrade-runner")
FAKE = os.path.join(ROOT, "tests/runner/fakelab")
FIX = os.path.join(ROOT, "tests/runner/fixtures")
NVCC = "/usr/local/cuda/bin/nvcc"
# A one-shot grade's environment for the fake lab's timing suites: no real
# GPU, so no GPU hold between jobs (the compile at the runner's priority is
# every suite's: tests/run.sh).
NO_HOLD = {"CUGRADE_NO_GPU": "1"}

_failures = 0


def ok(cond, name, detail="", lines=30, chars=None):
    """Print one TAP line, "ok - NAME" or "not ok - NAME". A failure is
    counted (failures()) and its DETAIL printed as "#   " lines: the first
    LINES lines (None: all) of its first CHARS characters (None: all).
    Flushes stdout, so the line comes before what a child process prints."""
    global _failures
    print(("ok" if cond else "not ok") + " - " + name)
    if not cond:
        _failures += 1
        text = str(detail) if chars is None else str(detail)[:chars]
        for line in text.splitlines()[:lines]:
            print("#   " + line)
    sys.stdout.flush()


def failures():
    """How many ok() checks have failed so far in this process."""
    return _failures


def ours(pid):
    """Whether pid descends from this process (the suite): other suites run
    beside it (tests/run.sh), so a check of processes found in /proc looks
    only at its own."""
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            st = open(f"/proc/{pid}/stat").read()
        except OSError:
            return False
        pid = int(st[st.rindex(")") + 2:].split()[1])  # field 4: ppid
    return False


def link_cuda(fake, own=()):
    """Make fake a CUDA_HOME that links the real toolkit's (NVCC's) bin/
    programs, include, lib64, nvvm and targets, except the programs named
    in own, which the caller writes (a stand-in compute-sanitizer, nvcc).
    Returns fake/bin."""
    real = os.path.dirname(os.path.dirname(NVCC))
    fbin = os.path.join(fake, "bin")
    os.makedirs(fbin)
    for t in os.listdir(os.path.join(real, "bin")) if os.path.isdir(real) else []:
        if t not in own:
            os.symlink(os.path.join(real, "bin", t), os.path.join(fbin, t))
    for t in ("include", "lib64", "nvvm", "targets"):
        if os.path.exists(os.path.join(real, t)):
            os.symlink(os.path.join(real, t), os.path.join(fake, t))
    return fbin


def require_nvcc_root():
    """CI has the CUDA toolkit and runs as root (the sandbox needs root): a
    runner suite that cannot run there fails (exit 1); it does not skip."""
    if not os.path.exists(NVCC) or os.geteuid() != 0:
        print("not ok - needs nvcc and root (the sandbox): CI has the CUDA toolkit at /usr/local/cuda "
              "and runs as root: a runner suite that cannot run there is a failure, not a skip")
        sys.exit(1)


def overloaded(status, text):
    """Whether a result is the system_error of an overloaded host (a
    compile starved of CPU: runner/grade/compile.h, compile_starved),
    which the server grades again: status and the result's text."""
    return status == "system_error" and "overloaded" in text


def environ(env):
    """os.environ plus env; a value None removes its variable."""
    e = dict(os.environ, **(env or {}))
    return {k: v for k, v in e.items() if v is not None}


def grade(args, env=None, timeout=300, tries=3):
    """Run `cugrade-runner grade ARGS` with os.environ plus ENV (a value
    None: the variable removed, the runner's default used). A
    system_error of an overloaded host (a compile starved of CPU on a
    loaded CI machine: runner/grade/compile.h, compile_starved) is run again, up
    to TRIES runs in all, as the server retries it. Returns (doc, log,
    wall): the last run's JSON document ({"status": "unparsable"} when its
    stdout was not JSON), the tails of its stderr and stdout, and its wall
    seconds."""
    for _ in range(tries):
        t0 = time.monotonic()
        p = subprocess.run([RUNNER, "grade"] + list(args), capture_output=True, text=True,
                           timeout=timeout, env=environ(env))
        wall = time.monotonic() - t0
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {"status": "unparsable", "result": {"cugrade": {}}}
        log = p.stderr[-1500:] + p.stdout[-1500:]
        if not overloaded(doc.get("status"), p.stderr + p.stdout):
            break
    return doc, log, wall


# A correct file of the fake lab (its fill() writes 2 * i).
GOOD_FILL = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'


def fake_course(prefix, limits):
    """A temporary folder (prefix), the fake lab laid out in it as a course
    tree with the lab's limits merged (tree.lay_out), and a cache folder:
    (tmp, root, cache) for grade_fakelab."""
    import tempfile
    import tree
    tmp = tempfile.mkdtemp(prefix=prefix)
    os.chmod(tmp, 0o755)
    root = tree.lay_out(os.path.join(tmp, "root"), limits=limits)
    cache = os.path.join(tmp, "cache")
    os.makedirs(cache)
    return tmp, root, cache


def grade_fakelab(tmp, root, cache, name, src, seed):
    """Write src to tmp/name and grade it in the fake lab laid out at root
    (grade() above, with NO_HOLD: work under tmp/work, sm_90, the seed
    given). Returns grade()'s (doc, log, wall)."""
    path = os.path.join(tmp, name)
    # Written whole, then renamed into place: two grades of one name at
    # once (cpu_load.t's threads did) never see the other's truncation, an
    # empty file that the inspection rightly rejects for want of the lab's
    # function.
    part = "%s.%d.%d" % (path, os.getpid(), threading.get_ident())
    with open(part, "w") as f:
        f.write(src)
    os.replace(part, path)
    return grade(["--root", root, "--lab", "fakelab", "--file", path, "--cache", cache,
                  "--work", os.path.join(tmp, "work"), "--arch", "sm_90", "--seed", seed],
                 env=NO_HOLD)

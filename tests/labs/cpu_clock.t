#!/usr/bin/env python3
"""CI (no GPU): the CPU baselines count the CPU time they took, not the
wall clock (reference/reduction/cpu.c now_ms; labs/common/py/owner.py
time_cpu, the pipeline lab's NumPy). On a host whose CPUs a burst keeps
busy the wall clock also counts the waits for a CPU: the CPU looked slower
and every student's speedup_vs_cpu bigger the busier the host was (the
same submission graded differently by load). Each baseline runs alone on
CPU 0, then beside three busy loops on CPU 0 (a quarter of the core: its
wall time about 4x), and its median must stay within 1.6x of its median
alone. The margin is the induced load's, not a speed target. Prints TAP
lines."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

BOUND = 1.6
TASKSET = shutil.which("taskset")


def busy(n):
    """n busy loops on CPU 0."""
    return [subprocess.Popen([TASKSET, "-c", "0", "sh", "-c", "while :; do :; done"])
            for _ in range(n)]


def stop(ps):
    for p in ps:
        p.kill()
        p.wait()


def median_of(cmd, env=None):
    """The JSON a baseline prints last on stdout, run on CPU 0."""
    r = subprocess.run([TASKSET, "-c", "0"] + cmd, capture_output=True, text=True, env=env,
                       timeout=300)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), r.stderr


def alone_and_loaded(cmd, env=None):
    alone, err1 = median_of(cmd, env)
    ps = busy(3)
    try:
        loaded, err2 = median_of(cmd, env)
    finally:
        stop(ps)
    return alone, loaded, err1 + err2


if not TASKSET:
    print("ok - the CPU baselines under load # SKIP no taskset (util-linux)")
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="cugrade-cpuclock-")
shutil.copy(os.path.join(ROOT, "labs", "reduction", "cases.generated.h"), os.path.join(tmp, "cases.h"))
exe = os.path.join(tmp, "cpu-baseline")
r = subprocess.run(["cc", "-std=c17", "-D_GNU_SOURCE", "-O2", "-I" + tmp, "-I" + os.path.join(ROOT, "labs", "common"),
                    os.path.join(ROOT, "reference", "reduction", "cpu.c"), "-o", exe],
                   capture_output=True, text=True)
ok(r.returncode == 0, "the reduction's CPU baseline builds (as labs/build-lab.sh does)", r.stderr)
alone, loaded, err = alone_and_loaded([exe, "--case", "2^26", "--reps", "5"])
a, b = alone.get("median_ms"), loaded.get("median_ms")
ok(a and b and b < BOUND * a and alone.get("clock") == "process_cpu",
   "the reduction's CPU baseline (cpu.c): its median beside three busy loops on its core is "
   "within %.1fx of its median alone, and it says its clock" % BOUND,
   "alone %r, loaded %r\n%s" % (alone, loaded, err[-1000:]))

PIPE = r"""
import json, os, sys
sys.path.insert(0, %r)
import owner
from owner_gpu import SimBackend
doc, lab, cases = owner.load_lab(%r)
owner.time_cpu(SimBackend(), lab, cases, "65537", 1)
print(json.dumps({"median_ms": owner.CPU_TIMING["cpu_ms"], "clock": owner.CPU_TIMING.get("cpu_clock"),
                  "samples_ms": owner.CPU_TIMING["cpu_samples_ms"]}))
""" % (os.path.join(ROOT, "labs", "common", "py"), os.path.join(ROOT, "labs", "pipeline"))
env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
alone, loaded, err = alone_and_loaded([sys.executable, "-I", "-c", PIPE], env)
a, b = alone.get("median_ms"), loaded.get("median_ms")
ok(a and b and b < BOUND * a and alone.get("clock") == "process_cpu",
   "the pipeline's NumPy baseline (owner.py time_cpu): its median beside three busy loops on its "
   "core is within %.1fx of its median alone, and it says its clock" % BOUND,
   "alone %r, loaded %r\n%s" % (alone, loaded, err[-1500:]))
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

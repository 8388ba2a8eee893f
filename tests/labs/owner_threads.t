#!/usr/bin/env python3
"""CI (no GPU): the owner's NumPy runs its BLAS on one thread, and the
student's process does not inherit that (labs/common/py/owner_tenant.py
one_blas_thread, OWNER_THREADS); a sanitizer run's process (tenant.py
--sanitize, which times nothing) sets them to 1 itself before NumPy is
first imported.

On the 16-core H200 host the profiling lab's owner (labs/profiling/lab.py)
used 35 s of CPU in every timing run, most of it inside the GPU's exclusive
hold: it multiplies once per call to make the call's labels, and a
multi-threaded OpenBLAS keeps its idle threads spinning after every call.
The owner sets the thread counts before NumPy is first imported; the
tenant (and the profiling lab's trainers, which ask for 4 OpenMP threads)
get the environment they had before. A multi-threaded OpenBLAS's threads
also spin when they start: a bare `import numpy` took 2.1-2.2 s of CPU
in 0.32 s on that host, in each of a Python job's two sanitizer runs.
Prints TAP lines."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

PY = os.path.join(ROOT, "labs", "common", "py")
NAMES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
tmp = tempfile.mkdtemp(prefix="cugrade-othreads-")
script = os.path.join(tmp, "tenant_env.py")
with open(script, "w") as f:
    f.write("import json, os, sys\n"
            "json.dump({k: os.environ.get(k) for k in %r + ('OPENBLAS_THREAD_TIMEOUT',)}, "
            "open(sys.argv[1], 'w'))\n" % (NAMES,))

PROG = r"""
import json, os, sys
sys.path.insert(0, %r)
import owner                                  # one_blas_thread() runs at import
numpy_first = "numpy" in sys.modules          # imported before it: too late
import numpy  # noqa: F401
from owner_tenant import Tenant
out = {"owner": {k: os.environ.get(k) for k in %r}, "numpy_first": numpy_first}
for name, env in (("tenant", None), ("trainer", {"OMP_NUM_THREADS": "4"})):
    path = os.path.join(%r, name + ".json")
    t = Tenant([path], 10, script=%r, env=env)
    t.proc.wait(timeout=60)
    got = json.load(open(path))
    out[name + "_timeout"] = got.pop("OPENBLAS_THREAD_TIMEOUT")
    out[name] = got
print(json.dumps(out))
""" % (PY, NAMES, tmp, script)

env = {k: v for k, v in os.environ.items() if k not in NAMES}
p = subprocess.run([sys.executable, "-c", PROG], capture_output=True, text=True, env=env, timeout=120)
try:
    got = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    got = {}
ok(got.get("owner") == {k: "1" for k in NAMES},
   "the owner's BLAS and OpenMP thread counts are 1", got or p.stderr[-2000:])
ok(got.get("numpy_first") is False,
   "and were set before NumPy was first imported (importing the owner imports no NumPy)", got)
ok(got.get("tenant") == {k: None for k in NAMES},
   "the student's process gets none of them: its thread counts are its own", got)
ok(got.get("tenant_timeout") == "4" and got.get("trainer_timeout") == "4",
   "but its idle OpenBLAS threads sleep at once (OPENBLAS_THREAD_TIMEOUT 4: no spin as NumPy "
   "is imported)", got)
ok(got.get("trainer") == {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": None},
   "the profiling lab's trainer gets the 4 OpenMP threads it is started with", got)

# A sanitizer run, as the runner starts it under compute-sanitizer (here
# in Numba's simulator, without the tool): the thread counts as NumPy's
# import first sees them (an import hook), and as the student's code does.
SANITIZE = r"""
import json, os, runpy, sys
names, out, tenant = %r, %r, %r
os.dup2(int(sys.argv.pop(1)), 3)   # the run's channel

class Hook:
    def find_spec(self, name, path, target=None):
        if name == "numpy" and not os.path.exists(out + ".numpy"):
            json.dump({k: os.environ.get(k) for k in names}, open(out + ".numpy", "w"))
        return None

sys.meta_path.insert(0, Hook())
sys.argv = [tenant] + sys.argv[1:]
runpy.run_path(tenant, run_name="__main__")
""" % (NAMES, os.path.join(tmp, "sanitize"), os.path.join(PY, "tenant.py"))
student = os.path.join(tmp, "kernel.py")
with open(student, "w") as f:
    f.write("import json, os\n"
            "def reduce_sum(*args):\n"
            "    json.dump({k: os.environ.get(k) for k in %r}, open(%r, 'w'))\n"
            % (NAMES, os.path.join(tmp, "sanitize.student")))
chan = os.open(os.path.join(tmp, "sanitize.chan"), os.O_WRONLY | os.O_CREAT, 0o600)
env["NUMBA_ENABLE_CUDASIM"] = "1"
p = subprocess.run([sys.executable, "-c", SANITIZE, str(chan), "--sanitize", "reduction", "1000",
                    "0123456789abcdef", student], capture_output=True, text=True, env=env,
                   timeout=300, pass_fds=(chan,))
seen = {}
for k in ("numpy", "student"):
    try:
        seen[k] = json.load(open(os.path.join(tmp, "sanitize." + k)))
    except (OSError, ValueError):
        seen[k] = None
ok(p.returncode == 0 and seen["numpy"] == {k: "1" for k in NAMES},
   "a sanitizer run's BLAS and OpenMP thread counts are 1 when NumPy is first imported",
   "exit %d, seen %r\n%s" % (p.returncode, seen, p.stderr[-2000:]))
ok(seen["student"] == {k: "1" for k in NAMES},
   "and the student's code in it sees the same (nothing of that run is timed)", seen)
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): how a Python check run's processes wait for the GPU
(labs/common/py/vmm.py blocking_sync; docs/python.md "Waiting for the
GPU"). Against a fake driver (a libcuda.so.1 built here that logs its
calls), vmm.blocking_sync() sets the primary context of device 0 to
CU_CTX_SCHED_BLOCKING_SYNC (4) after cuInit; a driver that fails cuInit
leaves the default and says so (False); and the owner asks its tenant for
a blocking context in a check run, never in a timing run (runtime_msg).
On a GPU host the device record of a check run says "sync": "blocking"
(tests/bench/sync_probe.sh measures what it saves). Prints TAP lines."""
import os
import subprocess
import sys
import tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PY = os.path.join(ROOT, "labs", "common", "py")
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)


FAKE = r"""
#include <stdio.h>
#include <stdlib.h>
static void note(const char *f, int a, int b)
{
    FILE *l = fopen(getenv("FAKE_CUDA_LOG"), "a");
    if (l) { fprintf(l, "%s %d %d\n", f, a, b); fclose(l); }
}
int cuInit(unsigned f) { note("cuInit", (int)f, 0); return getenv("FAKE_CUDA_FAIL") ? 100 : 0; }
int cuDeviceGet(int *d, int ord) { *d = 7; note("cuDeviceGet", ord, 0); return 0; }
int cuDevicePrimaryCtxSetFlags_v2(int d, unsigned f) { note("cuDevicePrimaryCtxSetFlags_v2", d, (int)f); return 0; }
"""

tmp = tempfile.mkdtemp(prefix="cugrade-sync-")
src, lib, log = (os.path.join(tmp, x) for x in ("fake.c", "libcuda.so.1", "calls"))
with open(src, "w") as f:
    f.write(FAKE)
r = subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], capture_output=True, text=True)
ok(r.returncode == 0, "a fake libcuda.so.1 builds", r.stderr)

PROBE = "import sys; sys.path.insert(0, %r); import vmm; print(vmm.blocking_sync())" % PY


def probe(**extra):
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, LD_LIBRARY_PATH=tmp, FAKE_CUDA_LOG=log, **extra)
    r = subprocess.run([sys.executable, "-I", "-c", PROBE], capture_output=True, text=True, env=env)
    calls = open(log).read().split("\n") if os.path.exists(log) else []
    return r, [c for c in calls if c]


r, calls = probe()
ok(r.stdout.strip() == "True" and calls == ["cuInit 0 0", "cuDeviceGet 0 0",
                                            "cuDevicePrimaryCtxSetFlags_v2 7 4"],
   "blocking_sync: cuInit, device 0, its primary context set to blocking sync (4); True",
   r.stdout + r.stderr + str(calls))
r, calls = probe(FAKE_CUDA_FAIL="1")
ok(r.stdout.strip() == "False" and calls == ["cuInit 0 0"],
   "a driver that fails cuInit: nothing set, False (the default stands)", r.stdout + r.stderr + str(calls))

# The owner's question to its tenant (owner_tenant.py runtime_msg), by mode.
CODE = ("import sys; sys.path.insert(0, %r); import owner; "
        "print(owner.runtime_msg('check'), owner.runtime_msg('time'))" % PY)
r = subprocess.run([sys.executable, "-I", "-c", CODE], capture_output=True, text=True,
                   env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
ok(r.returncode == 0 and r.stdout.strip() ==
   "{'op': 'runtime', 'blocking': True} {'op': 'runtime', 'blocking': False}",
   "the owner asks for a blocking context in a check run, not in a timing run", r.stdout + r.stderr)

subprocess.run(["rm", "-rf", tmp])
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): whose out-of-memory it is when a Python run's owner cannot
allocate a case's buffers (labs/common/py/owner.py new_case,
owner_tenant.py oom_whose). make test-gpu on an H200 graded a correct-but-
racy Numba file `runtime_error` ("your program exited with status 1"): the
owner's own allocation of the 10 GB case raised CuPy's OutOfMemoryError
while the GPU was full of other jobs, and the traceback ended the run as the
student's. Now, as the CUDA harness does (harness_common.cu hc_setup):
  - the student's process holds (almost) nothing between calls: tried
    again, then a harness_error record and exit 2 (ours: system_error,
    retried, never charged);
  - it kept device memory past its calls: the case's fatal runtime_error
    record says how many MiB and what to do, exit 3;
  - memory that comes back while we wait: the case is made, nothing said;
  - a case that ran out half way keeps none of its buffers;
  - a timing run's own case (before the tenant exists) is ours; a timed
    batch that finds less memory than it looked for is smaller.
The owner runs in a process of its own with a backend and a tenant made up
here. Prints TAP lines."""
import json
import os
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import failures, ok  # noqa: E402  (TAP)
from owner_proc import run_owner  # noqa: E402  (the owner in a process of its own)

SETUP = r"""
import numpy
import owner_tenant
owner_tenant.OOM_WAIT_S = 0.01

class OOM(Exception):
    pass

class Backend:
    # alloc fails while fail > 0 (each failure counts one down)
    oom = OOM
    np = xp = numpy
    def __init__(self, fail):
        self.fail, self.live = fail, 0
    def alloc(self, n):
        if self.fail > 0:
            self.fail -= 1
            raise OOM(n)
        self.live += 1
        return {"n": n, "size": n}
    def free(self, b):
        self.live -= 1
    def view(self, b, dtype, count, offset=0):
        return numpy.zeros(count, dtype)
    def sync(self):
        pass
    def spare_bytes(self):
        return 1 << 40

class Tenant:
    def __init__(self, held):
        self.asked_held = 0
        self._held = held
    def held(self):
        self.asked_held += 1
        return self._held

lab = {"INPUTS": [("x", "float32", lambda p: (p["n"],), "f32_reduction", 0)],
       "OUTPUTS": [("out", "float32", lambda p: (1,))]}
"""


def owner_with(body):
    """SETUP then body, as the owner (owner_proc.py run_owner)."""
    return run_owner(SETUP + body)


CHECK = "owner.run_check(Tenant(%s), Backend(99), lab, {'2.5e9': {'n': 4, 'signs': 1}}, ['2.5e9'], 1, False)\n"

rc, err, recs = owner_with(CHECK % "0")
ok(rc == 2 and len(recs) == 1 and recs[0]["type"] == "harness_error" and
   "taken by other jobs" in recs[0]["message"] and "2.5e9" in recs[0]["message"],
   "out of memory while the student's process holds nothing: a harness_error record naming the "
   "case and other jobs, exit 2 (ours: system_error, retried)", (rc, err[-800:], recs))
rc, err, recs = owner_with(CHECK % "None")
ok(rc == 2 and recs and recs[0]["type"] == "harness_error",
   "...and when the student's process does not say what it holds: ours too", (rc, err[-800:], recs))
rc, err, recs = owner_with(CHECK % "(64 << 20)")
ok(rc == 3 and len(recs) == 1 and recs[0]["type"] == "case" and recs[0]["name"] == "2.5e9" and
   recs[0]["status"] == "runtime_error" and recs[0]["fatal"] is True and
   "kept 64 MiB" in recs[0]["error"] and "before your function returns" in recs[0]["cause"],
   "out of memory while the student's process kept 64 MiB past its calls: the case's fatal "
   "runtime_error record says so and what to do, exit 3", (rc, err[-800:], recs))
rc, err, recs = owner_with(
    "be, t = Backend(2), Tenant(0)\n"
    "c = owner.new_case(t, be, lab, '2.5e9', {'n': 4, 'signs': 1}, 1, False)\n"
    "print(json.dumps({'live': be.live, 'asked': t.asked_held}), file=sys.stderr)\n")
got = json.loads(err.strip().splitlines()[-1]) if rc == 0 and err.strip() else {}
ok(rc == 0 and not recs and got.get("live") == 2 and got.get("asked") == 2,
   "memory that comes back while the owner waits: the case is made on the third try (its two "
   "buffers), nothing said", (rc, err[-800:], recs))
rc, err, recs = owner_with(
    "class Half(Backend):\n"
    "    def alloc(self, n):\n"
    "        if self.live == 1:\n"
    "            raise OOM(n)\n"
    "        return Backend.alloc(self, n)\n"
    "be = Half(0)\n"
    "try:\n"
    "    owner.Case(be, lab, {'n': 4, 'signs': 1}, 1, False)\n"
    "except OOM:\n"
    "    print(json.dumps({'live': be.live}), file=sys.stderr)\n")
got = json.loads(err.strip().splitlines()[-1]) if rc == 0 and err.strip() else {}
ok(rc == 0 and got.get("live") == 0,
   "a case that ran out of memory half way frees the buffers it had (none kept)", (rc, err[-800:]))
rc, err, recs = owner_with("owner.Timed(Backend(99), lab, {'n': 4, 'signs': 1}, False, '2^26')\n")
ok(rc == 2 and recs and recs[0]["type"] == "harness_error" and "2^26" in recs[0]["message"],
   "a timing run's own case out of memory, before the tenant exists: ours (harness_error, exit 2)",
   (rc, err[-800:], recs))
rc, err, recs = owner_with(
    "class Two(Backend):\n"
    "    def alloc(self, n):\n"
    "        if self.live >= 2:\n"
    "            raise OOM(n)\n"
    "        return Backend.alloc(self, n)\n"
    "be = Two(0)\n"
    "t = owner.Timed(be, lab, {'n': 4, 'signs': 1}, False, '2^26')\n"
    "t.grow(8)\n"
    "print(json.dumps({'cases': len(t.cases), 'live': be.live}), file=sys.stderr)\n")
got = json.loads(err.strip().splitlines()[-1]) if rc == 0 and err.strip() else {}
ok(rc == 0 and not recs and got == {"cases": 1, "live": 2},
   "a timed batch that finds less memory than it looked for is smaller, not a failure", (rc, err[-800:]))
rc, err, recs = owner_with(
    "t = owner_tenant.Tenant(['-', 'reduce_sum'], 60)\n"
    "print(json.dumps({'held': t.held()}), file=sys.stderr)\n"
    "t.close()\n")
got = json.loads(err.strip().splitlines()[-1]) if rc == 0 and err.strip() else {}
ok(rc == 0 and got.get("held") == 0,
   "the real tenant (tenant.py) answers \"held\": 0 in the simulator (no device memory)",
   (rc, err[-800:]))
sys.exit(1 if failures() else 0)

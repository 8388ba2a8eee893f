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
    def fill_word(self, a, w, sync=True):
        a.view(numpy.uint32)[:] = w
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

# The student's own call out of device memory (owner.py check_case,
# owner_tenant.py call_oom_whose; the tenant says "oom": the bytes asked
# for, 0 unknown). Within the 2 GiB a job may use, other jobs have the
# GPU: the case is called again on fresh buffers, then it is ours; past
# it, the student's case fails (not fatal) saying how much.
CALLS = r"""
lab["ARGS"] = ["x", "out"]

class CallBackend(Backend):
    def __init__(self, free):
        Backend.__init__(self, 0)
        self.gpu_free = free
    def export(self, b):
        return {}, []
    def to_host(self, a):
        return numpy.asarray(a)
    def count_ne(self, a, b):
        return 0
    def count_ne_word(self, a, w):
        return 0
    def free_bytes(self):
        return self.gpu_free

class CallTenant(Tenant):
    def __init__(self, held, answers):
        Tenant.__init__(self, held)
        self.answers, self.calls = list(answers), 0
    def ask(self, msg, fds=()):
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
    def death(self):
        return "gone"

def oom(n):
    return {"ok": False, "error": "OutOfMemoryError: out of memory", "where": "k.py line 3",
            "oom": n}

def run(held, answers, free):
    t = CallTenant(held, answers)
    try:
        owner.run_check(t, CallBackend(free), lab, {'1': {'n': 4, 'signs': 1}}, ['1'], 1, False)
    finally:
        print(json.dumps({"calls": t.calls}), file=sys.stderr)
"""
MiB = 1 << 20


def calls_of(err):
    lines = [x for x in err.strip().splitlines() if x.startswith("{")]
    return json.loads(lines[-1]).get("calls") if lines else None


rc, err, recs = owner_with(CALLS + "run(0, [oom(64 << 20), {'ok': True}], 1 << 30)\n")
ok(rc == 0 and calls_of(err) == 2 and len(recs) == 1 and recs[0].get("status") == "ok",
   "a call out of device memory within the job's 2 GiB is called again on fresh buffers: the "
   "second call's answer is the case's record", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(0, [oom(64 << 20)], 10 << 20)\n")
ok(rc == 2 and calls_of(err) == 4 and recs and recs[0]["type"] == "harness_error" and
   "taken by other jobs" in recs[0]["message"] and "within its 2048 MiB" in recs[0]["message"],
   "...every try out of memory within it: ours after 4 calls (harness_error, exit 2: "
   "system_error, retried, never charged)", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(0, [oom(3 << 30)], 80 << 30)\n")
ok(rc == 0 and calls_of(err) == 1 and len(recs) == 1 and recs[0].get("status") == "runtime_error"
   and recs[0].get("fatal") is False and recs[0].get("error_name") == "device_memory" and
   "3072 MiB at once" in recs[0].get("error", "") and "2048 MiB" in recs[0].get("cause", ""),
   "a call that asked for 3 GiB at once: the student's case fails at once (not fatal), saying "
   "how much and what a job may use", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(3 << 30, [oom(1 << 20)], 80 << 30)\n")
ok(rc == 0 and calls_of(err) == 1 and recs and recs[0].get("error_name") == "device_memory" and
   "holding 3072 MiB" in recs[0].get("error", ""),
   "a call out of memory while the student's process holds 3 GiB: the student's", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(0, [oom(0)], 80 << 30)\n")
ok(rc == 0 and calls_of(err) == 4 and recs and recs[0].get("error_name") == "device_memory" and
   "had 81920 MiB free" in recs[0].get("error", ""),
   "an amount not said, and the GPU 80 GiB free after every try: the student's", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(0, [oom(0)], 100 << 20)\n")
ok(rc == 2 and calls_of(err) == 4 and recs and recs[0]["type"] == "harness_error",
   "an amount not said, and the GPU full after every try: ours", (rc, err[-800:], recs))
rc, err, recs = owner_with(CALLS + "run(0, [dict(oom(5), oom='x')], 1 << 30)\n")
ok(rc == 0 and calls_of(err) == 1 and recs and recs[0].get("error_name") == "python_exception",
   "an answer whose \"oom\" is not a number is the student's exception, as any other",
   (rc, err[-800:], recs))

# What a job may use is one number in three places.
PYDIR = os.path.join(ROOT, "labs", "common", "py")
sys.path.insert(0, PYDIR)
import owner_tenant  # noqa: E402
import re  # noqa: E402
lock_h = open(os.path.join(ROOT, "runner", "gpu", "lock.h")).read()
harness = open(os.path.join(ROOT, "labs", "common", "harness_common.cu")).read()
a = re.search(r"#define ADMIT_STUDENT_MB (\d+)", lock_h)
b = re.search(r"#define HC_STUDENT_DEVICE_MB (\d+)", harness)
ok(a and b and int(a.group(1)) == int(b.group(1)) == owner_tenant.STUDENT_DEVICE_BYTES >> 20,
   "admission's ADMIT_STUDENT_MB, the harness's HC_STUDENT_DEVICE_MB and the owner's "
   "STUDENT_DEVICE_BYTES agree", (a and a.group(1), b and b.group(1), owner_tenant.STUDENT_DEVICE_BYTES))

# The tenant's side: which exceptions are out of device memory, by the
# libraries' own types (made-up modules of those names here).
import types  # noqa: E402
import tenant  # noqa: E402


class OutOfMemoryError(MemoryError):
    pass


class CudaAPIError(Exception):
    def __init__(self, code, msg):
        super().__init__(code, msg)
        self.code = code


for mod, attrs in (("cupy.cuda.memory", {"OutOfMemoryError": OutOfMemoryError}),
                   ("numba.cuda.cudadrv.driver", {"CudaAPIError": CudaAPIError})):
    m = types.ModuleType(mod)
    m.__dict__.update(attrs)
    sys.modules[mod] = m
got = [tenant.oom_request(OutOfMemoryError("Out of memory allocating 1,073,741,824 bytes "
                                           "(allocated so far: 0 bytes).")),
       tenant.oom_request(OutOfMemoryError("out of memory")),
       tenant.oom_request(CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY")),
       tenant.oom_request(CudaAPIError(1, "CUDA_ERROR_INVALID_VALUE")),
       tenant.oom_request(MemoryError("host")), tenant.oom_request(ValueError("x"))]
ok(got == [1 << 30, 0, 0, None, None, None],
   "tenant.oom_request: CuPy's OutOfMemoryError with its size, or 0; Numba's CudaAPIError 2 "
   "(0: no size); anything else (a host MemoryError too) is not one", got)
sys.exit(1 if failures() else 0)

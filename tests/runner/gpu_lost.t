#!/usr/bin/env python3
"""CI (no GPU): a run that times out on a GPU that stopped answering is a
system_error (ours, retried), not the student's `timeout`
(runner/grade/job_lane.c job_timeout_ours, runner/gpu/health.c
health_probe_wait; docs/runner.md "A GPU that stops answering").

Seen on an H200 (2026-11-30): the GPU hung mid-burst, the eight check runs
on it ran into their limits together, and eight correct or student-bug
kernels were posted `timeout` before the runner's own probe found the GPU
gone (cuInit: CUDA_ERROR_NO_DEVICE) and the next jobs became system_errors.

The fake GPU of health.t (fakegpu.py: cuInit fails while a file exists,
hangs while another does) and the fake lab; a file whose fill() never
returns. With the GPU answering (its memory full included), it is the
student's timeout; with the GPU gone, or its driver hanging past the
probe's limit, the same run is a system_error that names the GPU. Prints TAP."""
import json, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import NO_HOLD, failures, grade, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import GOOD_FILL, fake_course  # noqa: E402  (the fake lab laid out as a course tree)
import fakegpu  # noqa: E402  (a fake nvidia-smi and libcuda.so.1)

require_nvcc_root()

tmp, root, cache = fake_course("cugrade-gpulost-", None)
fake_env, dead, hang = fakegpu.make(tmp)
env = dict(NO_HOLD, **fake_env, CUGRADE_GPU_PROBE_SECONDS="3")
SPIN = 'extern "C" void fill(float* o, int n) { for (volatile int i = 0;; i++) {} }\n'
# Correct in the check run (two calls), endless in the timing run.
LATE = ('static int calls; extern "C" void fill(float* o, int n) { if (++calls > 3) '
        'for (volatile int i = 0;; i++) {} for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n')
GOOD = GOOD_FILL


def run(name, src):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(src)
    d, log, _ = grade(["--root", root, "--lab", "fakelab", "--file", path, "--cache", cache,
                       "--work", os.path.join(tmp, "work"), "--arch", "sm_90",
                       "--seed", "0123456789abcdef0123456789abcdef"], env=env, tries=1)
    return d, log


def said(d):
    return json.dumps(d)[:1500]


def run_while(flag, name, src):
    """run() with the fake GPU's file flag present (dead, hang, oom)."""
    open(flag, "w").close()
    try:
        return run(name, src)
    finally:
        os.unlink(flag)


try:
    d, log = run("warm.cu", GOOD)
    ok(d.get("status") == "graded", "a correct file is graded on the fake GPU (the lab built)",
       said(d) + log)
    d, log = run("spin.cu", SPIN)
    ok(d.get("status") == "timeout", "a file that never returns, on a GPU that answers: timeout",
       said(d) + log)
    d, log = run_while(dead, "spin.cu", SPIN)
    ok(d.get("status") == "system_error" and "GPU that stopped answering" in said(d)
       and "CUDA_ERROR_NO_DEVICE" in said(d),
       "the same run on a GPU that fell off the bus: system_error (ours, retried), naming the "
       "probe's error", said(d) + log)
    d, log = run_while(hang, "spin.cu", SPIN)
    ok(d.get("status") == "system_error" and "did not answer in 3 s" in said(d),
       "and on a driver that hangs: the probe is killed at its limit, system_error", said(d) + log)
    d, log = run_while(fakegpu.oom_path(tmp), "spin.cu", SPIN)
    ok(d.get("status") == "timeout",
       "on a GPU that answers but whose memory is full (the probe's allocation fails): the "
       "student's timeout stands", said(d) + log)
    d, log = run_while(dead, "late.cu", LATE)
    ok(d.get("status") == "system_error" and "the timing run ran into its limit" in said(d),
       "a timing run that times out on a GPU gone: system_error too", said(d) + log)
finally:
    subprocess.run(["rm", "-rf", tmp])

print("1..6")
sys.exit(1 if failures() else 0)

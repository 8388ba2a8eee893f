#!/usr/bin/env python3
"""CI: the runner's GPU detection with a fake nvidia-smi on PATH: name and
compute capability -> sm_XX; a driver too old for compute_cap falls back to
--arch; no nvidia-smi at all means no GPU (jobs then fail as system_error,
never as the student's fault). Prints TAP lines."""
import functools, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None)  # a failure prints every line of its detail

tmp = tempfile.mkdtemp(prefix="cugrade-smi-")
try:
    os.makedirs(os.path.join(tmp, "root/labs"))
    def prepare(script, extra=()):
        b = os.path.join(tmp, "bin")
        shutil.rmtree(b, ignore_errors=True)
        os.makedirs(b)
        if script:
            with open(os.path.join(b, "nvidia-smi"), "w") as f:
                f.write("#!/bin/sh\n" + script)
            os.chmod(os.path.join(b, "nvidia-smi"), 0o755)
        env = dict(os.environ, PATH=b + ":/usr/bin:/bin")
        env.pop("CUGRADE_ARCH", None)
        p = subprocess.run([RUNNER, "prepare", "--root", os.path.join(tmp, "root"), "--cache",
                            os.path.join(tmp, "cache"), "--gpu", "1"] + list(extra),
                           capture_output=True, text=True, env=env, timeout=60)
        return p.stderr
    new = ('case "$1" in --query-gpu=index,name,compute_cap,pci.bus_id) '
           '[ "$4" = 1 ] && echo "1, NVIDIA H100 80GB HBM3, 9.0, 00000000:19:00.0" && exit 0;; esac\n'
           'echo "Field is not a valid field to query."; exit 2\n')
    out = prepare(new)
    ok("GPU NVIDIA H100 80GB HBM3 (sm_90)" in out, "name and compute capability give sm_90 for --gpu 1", out)
    old = ('case "$1" in --query-gpu=index,name,pci.bus_id) echo "1, Tesla V100, 00000000:3B:00.0"; exit 0;; esac\n'
           'echo "Field compute_cap is not a valid field to query."; exit 2\n')
    out = prepare(old, ["--arch", "sm_70"])
    ok("GPU Tesla V100 (sm_70)" in out, "an old driver without compute_cap: the arch comes from --arch", out)
    out = prepare(None)
    ok("GPU none" in out, "no nvidia-smi: no GPU", out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

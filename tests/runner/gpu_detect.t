#!/usr/bin/env python3
"""CI: the runner's GPU detection with a fake nvidia-smi on PATH: name and
compute capability -> sm_XX; a driver too old for compute_cap falls back to
--arch (sm_NN, else the runner refuses to start); no nvidia-smi at all means no GPU (jobs then fail as system_error,
never as the student's fault). And the GPU's number inside the sandbox: the
sandbox shows one GPU's node, so a job graded on GPU 1 runs with
CUDA_VISIBLE_DEVICES=0 (its host index named no device there: every run of
a second GPU's runner ended "no CUDA-capable device is detected"). And
its hardware queues: one in a check run, CUDA's default in a timing run.
Prints TAP lines."""
import functools, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, grade, ok as suite_ok, require_nvcc_root  # noqa: E402
import tree  # noqa: E402  (the fake lab laid out as a course tree)
ok = functools.partial(suite_ok, lines=None)  # a failure prints every line of its detail

tmp = tempfile.mkdtemp(prefix="cugrade-smi-")
try:
    os.makedirs(os.path.join(tmp, "root/labs"))
    def prepare(script, extra=(), rc=False):
        b = os.path.join(tmp, "bin")
        shutil.rmtree(b, ignore_errors=True)
        os.makedirs(b)
        if script:
            with open(os.path.join(b, "nvidia-smi"), "w") as f:
                f.write("#!/bin/sh\n" + script)
            os.chmod(os.path.join(b, "nvidia-smi"), 0o755)
        env = dict(os.environ, PATH=b + ":/usr/bin:/bin")
        p = subprocess.run([RUNNER, "prepare", "--root", os.path.join(tmp, "root"), "--cache",
                            os.path.join(tmp, "cache"), "--gpu", "1"] + list(extra),
                           capture_output=True, text=True, env=env, timeout=60)
        return p.stderr if not rc else (p.returncode, p.stderr)
    new = ('case "$1" in --query-gpu=index,name,compute_cap,pci.bus_id) '
           '[ "$4" = 1 ] && echo "1, NVIDIA H100 80GB HBM3, 9.0, 00000000:19:00.0" && exit 0;; esac\n'
           'echo "Field is not a valid field to query."; exit 2\n')
    out = prepare(new)
    ok("GPU NVIDIA H100 80GB HBM3 (sm_90)" in out, "name and compute capability give sm_90 for --gpu 1", out)
    old = ('case "$1" in --query-gpu=index,name,pci.bus_id) echo "1, Tesla V100, 00000000:3B:00.0"; exit 0;; esac\n'
           'echo "Field compute_cap is not a valid field to query."; exit 2\n')
    out = prepare(old, ["--arch", "sm_70"])
    ok("GPU Tesla V100 (sm_70)" in out, "an old driver without compute_cap: the arch comes from --arch", out)
    for bad in ("90", "sm_90ab", "sm_90/../x"):
        code, out = prepare(old, ["--arch", bad], rc=True)
        ok(code == 2 and f"--arch {bad}: expected sm_NN" in out,
           f"--arch {bad}: the runner refuses to start, naming the form", f"rc {code}: {out}")
    out = prepare(None)
    ok("GPU none" in out, "no nvidia-smi: no GPU", out)

    # A job on GPU 1 of a (fake) two-GPU host: the fake lab's "kernel"
    # prints what the sandbox gave it, and fills its output right either way.
    require_nvcc_root()
    root = tree.lay_out(os.path.join(tmp, "course"))
    labp = os.path.join(root, "labs/fakelab/lab.json")
    lab = json.load(open(labp))
    lab["allow"]["undefined"] += ["getenv"]
    json.dump(lab, open(labp, "w"))
    for d, _, files in os.walk(tmp):
        os.chmod(d, 0o755)
    # The student's code also reports CUDA_DEVICE_MAX_CONNECTIONS: a check
    # run has one hardware queue (runner/run/run.h, RUN_GPU_QUEUES_ENV:
    # the driver makes contexts one at a time for the whole host, and one
    # queue makes them cheaper); a timing run keeps CUDA's default (unset),
    # so that a program overlapping streams is timed as it would run. The
    # "kernel" fills its output wrong where the variable is unset: the check
    # (one queue) passes, the timing run's re-check of its output fails.
    src = os.path.join(tmp, "cvd.cu")
    with open(src, "w") as f:
        f.write('#include <cstdio>\n#include <cstdlib>\n'
                'extern "C" void fill(float* o, int n) {\n'
                '    static int said;\n'
                '    const char* v = getenv("CUDA_VISIBLE_DEVICES");\n'
                '    const char* q = getenv("CUDA_DEVICE_MAX_CONNECTIONS");\n'
                '    if (!said++) printf("visible=[%s] queues=[%s]\\n", v ? v : "unset", q ? q : "unset");\n'
                '    for (int i = 0; i < n; i++) o[i] = q ? 2.0f * i : -1.0f;\n}\n')
    prepare(new)  # leaves bin/nvidia-smi answering for GPU 1
    env = {"PATH": os.path.join(tmp, "bin") + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
           "CUGRADE_NO_GPU": "1"}
    d, log, _ = grade(["--lab", "fakelab", "--file", src, "--seed", "0123456789abcdef" * 2,
                       "--root", root, "--cache", os.path.join(tmp, "cache2"), "--work",
                       os.path.join(tmp, "work"), "--gpu", "1", "--arch", "sm_90"], env=env)
    text = json.dumps(d)
    out = d.get("result", {}).get("cugrade", {}).get("program_output", "")
    ok("visible=[0]" in out and "visible=[1]" not in out,
       "a job on GPU 1 sees that GPU as device 0 in its sandbox (CUDA_VISIBLE_DEVICES=0)",
       text[:1500] + "\n" + log)
    cases = d.get("result", {}).get("cugrade", {}).get("cases", [])
    ok("queues=[1]" in out and len(cases) == 2 and all(c.get("passed") for c in cases),
       "a check run has one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1): every case passes",
       out + "\n" + json.dumps(cases))
    timing = d.get("result", {}).get("cugrade", {}).get("timing") or {}
    ok(timing.get("recheck_passed") is False,
       "a timing run keeps CUDA's default queues (the variable unset: its re-check fails here)",
       json.dumps(timing)[:1500] + "\n" + log)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

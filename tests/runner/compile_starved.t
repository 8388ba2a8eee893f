#!/usr/bin/env python3
# suite: alone  (tests/run.sh: it needs a quiet host, then takes every core)
"""CI (no GPU, real sandbox): who is charged when a compile runs past the
lab's compile_seconds (runner/grade/compile.h, compile_starved). A stand-in nvcc
(a CUDA_HOME whose nvcc execs the real one, except for the student's
`-c` step of spin.cu, a busy loop, and block.cu, a sleep) and a lab whose
compile limit is 3 s:
  - spin.cu on a quiet host: the compiler had the CPU and used it all:
    compile_error, "ran past the lab's limit";
  - block.cu: the compiler waited, but not for a CPU: compile_error;
  - spin.cu while busy loops outside the sandbox take every core (the
    compile at nice 19): the compiler waited for a CPU most of its limit:
    system_error (ours, retried), never the student's compile_error.
Needs CPU pressure accounting (PSI) in the run's cgroup; the CI machine and
the GPU hosts have it. Prints TAP lines."""
import json, os, re, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import NVCC, RUNNER, failures, link_cuda, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-starved-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"), limits={"compile_seconds": 3})

fake = os.path.join(tmp, "cuda")
link_cuda(fake, own=("nvcc",))
with open(os.path.join(fake, "bin/nvcc"), "w") as f:
    f.write("""#!/bin/sh
# No front pass (a dry run that fails): the full compile answers.
for a; do [ "$a" = --dryrun ] && exit 1; done
case " $* " in *" -c "*)
  [ -f /work/spin.cu ] && while :; do :; done
  [ -f /work/block.cu ] && sleep 60;;
esac
exec %s "$@"
""" % NVCC)
os.chmod(os.path.join(fake, "bin/nvcc"), 0o755)

SRC = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'


def grade(name, env=None):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(SRC)
    p = subprocess.run([RUNNER, "grade", "--root", root, "--lab", "fakelab", "--file", path,
                        "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                        "--arch", "sm_90", "--stop-after", "compile"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, CUDA_HOME=fake, CUGRADE_NO_GPU="1", **(env or {})))
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = {"status": "unparsable"}
    out = json.dumps(d)[:1500] + "\n" + p.stderr[-1500:]
    return d, ((d.get("result") or {}).get("output") or "") + " " + json.dumps(d.get("result") or {}), out


hogs = []
try:
    d, msg, out = grade("good.cu")
    ok(d.get("status") == "graded", "through the stand-in nvcc a correct file compiles", out)

    d, msg, out = grade("spin.cu")
    ok(d.get("status") == "compile_error" and "ran past the lab's limit of 3 s" in msg,
       "a compile that used its CPU to the limit is the student's: compile_error, the limit named", out)

    d, msg, out = grade("block.cu")
    ok(d.get("status") == "compile_error" and "ran past the lab's limit of 3 s" in msg,
       "a compile that waited, but not for a CPU, is the student's too", out)

    # Every core busy outside the sandbox, the compile at the lowest priority.
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 * (os.cpu_count() or 1))]
    d, msg, out = grade("spin.cu", {"CUGRADE_COMPILE_NICE": "19"})
    for h in hogs:
        h.kill()
        h.wait()
    hogs = []
    ok(d.get("status") == "system_error" and "waited" in msg and "for a CPU" in msg and
       "our problem, not yours" in msg,
       "a compile starved of CPU by the host's load is ours: system_error (retried), not compile_error (%s)"
       % (re.search(r"waited [0-9.]+ s for a CPU and ran [0-9.]+ s", msg) or [""])[0], out)
finally:
    for h in hogs:
        h.kill()
    subprocess.run(["rm", "-rf", tmp])

sys.exit(1 if failures() else 0)

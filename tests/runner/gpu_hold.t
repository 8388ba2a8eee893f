#!/usr/bin/env python3
"""CI: the runner's GPU holder (`cugrade-runner gpu-hold`, docs/runner.md):
with a GPU (a fake nvidia-smi) and a fake libcuda.so.1 that records its
calls, `prepare` starts a holder that retains a context, and the holder ends
when the runner does; CUGRADE_NO_GPU=1 and a host without a GPU start
none; `gpu-hold` without a driver exits 1 at once. Prints TAP lines."""
import functools, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None)  # a failure prints every line of its detail


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


tmp = tempfile.mkdtemp(prefix="cugrade-hold-")
try:
    os.makedirs(os.path.join(tmp, "root/labs"))
    lib = os.path.join(tmp, "lib")
    os.makedirs(lib)
    with open(os.path.join(tmp, "fake.c"), "w") as f:
        f.write(r'''
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void mark(const char *what) {
    const char *p = getenv("FAKE_CUDA_MARK");
    FILE *f = p ? fopen(p, "a") : NULL;
    if (f) { fprintf(f, "%s %d\n", what, (int)getpid()); fclose(f); }
}
int cuInit(unsigned fl) { (void)fl; mark("init"); return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)1; mark("retain"); return 0; }
''')
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(lib, "libcuda.so.1"),
                    os.path.join(tmp, "fake.c")], check=True)
    smi = os.path.join(tmp, "bin")
    os.makedirs(smi)
    with open(os.path.join(smi, "nvidia-smi"), "w") as f:
        f.write('#!/bin/sh\ncase "$1" in --query-gpu=index,name,compute_cap,pci.bus_id) '
                'echo "0, NVIDIA H100 80GB HBM3, 9.0, 00000000:19:00.0"; exit 0;; esac\nexit 2\n')
    os.chmod(os.path.join(smi, "nvidia-smi"), 0o755)

    def prepare(mark, gpu=True, extra_env=None):
        env = dict(os.environ, PATH=(smi + ":" if gpu else "") + "/usr/bin:/bin",
                   LD_LIBRARY_PATH=lib, FAKE_CUDA_MARK=mark)
        env.pop("CUGRADE_NO_GPU", None)
        env.update(extra_env or {})
        return subprocess.run([RUNNER, "prepare", "--root", os.path.join(tmp, "root"), "--cache",
                               os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                               "--arch", "sm_90"], capture_output=True, text=True, env=env, timeout=60)

    def marks(path, wait=3.0):
        t = time.time()
        while time.time() - t < wait:
            if os.path.exists(path) and "retain" in open(path).read():
                break
            time.sleep(0.05)
        return open(path).read().split("\n") if os.path.exists(path) else []

    m = os.path.join(tmp, "mark1")
    p = prepare(m)
    lines = [l for l in marks(m) if l]
    ok(any(l.startswith("retain ") for l in lines), "prepare with a GPU starts a holder that retains a context",
       f"marks {lines}; stderr {p.stderr[-500:]}")
    pid = int(lines[-1].split()[1]) if lines else 0
    t = time.time()
    while pid and alive(pid) and time.time() - t < 5:
        time.sleep(0.05)
    ok(pid and not alive(pid), "the holder ends when the runner has ended", f"pid {pid}")
    ok(pid and pid != p.returncode and all(str(pid) not in l for l in p.stdout.splitlines()),
       "the holder writes nothing on the runner's stdout", p.stdout[-300:])

    m = os.path.join(tmp, "mark2")
    prepare(m, extra_env={"CUGRADE_NO_GPU": "1"})
    ok(not marks(m, 1.0), "CUGRADE_NO_GPU=1: no holder")

    m = os.path.join(tmp, "mark3")
    prepare(m, gpu=False)
    ok(not marks(m, 1.0), "no GPU (no nvidia-smi): no holder")

    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(tmp, "nolib"))
    t = time.time()
    q = subprocess.run([RUNNER, "gpu-hold"], stdin=subprocess.PIPE, capture_output=True, text=True,
                       env=env, timeout=30)
    ok(q.returncode == 1 and time.time() - t < 10 or os.path.exists("/dev/nvidiactl"),
       "gpu-hold without a CUDA driver exits 1 at once", f"rc {q.returncode} {q.stderr}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

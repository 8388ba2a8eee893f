#!/usr/bin/env python3
"""CI (no GPU): a runner killed mid-job (SIGKILL: no cleanup of its own)
leaves no work-directory tmpfs mounted on the host. The runner does its
mounts in a mount namespace of its own (runner/main.c), so they go with
its last process (the sandboxes die with it: bwrap --die-with-parent).
Before, every killed runner or test left `cugrade-work-*` mounts behind.
Prints TAP lines."""
import os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER  # noqa: E402  (paths; this suite numbers its own TAP lines)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
n, failed = 0, 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {name}")
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)


def work_mounts(under):
    with open("/proc/self/mounts") as f:
        return [l.split()[1] for l in f if l.split()[1].startswith(under)]


if not os.path.exists("/usr/local/cuda/bin/nvcc") or os.geteuid() != 0:
    print("not ok 1 - needs nvcc and root (the sandbox): CI has both")
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix="cugrade-killed-")
os.chmod(tmp, 0o755)
try:
    root = tree.lay_out(os.path.join(tmp, "root"))
    src = os.path.join(tmp, "hang.cu")
    with open(src, "w") as f:
        f.write('extern "C" void fill(float* o, int n) { volatile int x = 1; while (x) { } }\n')
    work = os.path.join(tmp, "work")
    p = subprocess.Popen([RUNNER, "grade", "--root", root, "--lab", "fakelab", "--file", src,
                          "--cache", os.path.join(tmp, "cache"), "--work", work, "--arch", "sm_90",
                          "--seed", "0123456789abcdef0123456789abcdef"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = ""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 240:
        line = p.stderr.readline()
        if not line:
            break
        seen += line
        if "checking" in line:
            break
    time.sleep(0.5)  # the check run is in its sandbox now
    # What the host sees while the runner lives: with a namespace of its own,
    # nothing (the mounts are the runner's); without, the job's tmpfs.
    during = work_mounts(work)
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = work_mounts(work)
    t0 = time.monotonic()
    while left and time.monotonic() - t0 < 10:
        time.sleep(0.2)
        left = work_mounts(work)
    ok("checking" in seen, "the job reached its check run before the kill", seen[-800:])
    ok(during == [], "while the runner lives, its work tmpfs is not in the host's mount table", during)
    ok(left == [], "SIGKILLed mid-job, the runner left no work mount behind", left)
finally:
    for m in work_mounts(tmp):
        subprocess.run(["umount", "-l", m])
    shutil.rmtree(tmp, ignore_errors=True)
print(f"1..{n}")
sys.exit(1 if failed else 0)

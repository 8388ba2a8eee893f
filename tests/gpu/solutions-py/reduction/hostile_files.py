# expect: status=graded correctness=fail note="hostile: looks outside /work for what a grader must keep from it -- /etc/passwd and /etc/shadow, the lab's reference and judge (/lab/reference, and the checkout beside the labs bind that /proc/self/mountinfo names), the runners' tokens and the server's database (beside the /work bind's source), /root and /home -- and tries to open for writing the read-only labs, the Python root's numpy and /usr; it computes the right sum only if any of it works (a broken fence shows as correctness=pass). It leaves marker files in /tmp, /dev/shm and /work that hostile_zz_next_job.py looks for"
import glob
import os
import sys

import numpy as np
from numba import cuda, float32

THREADS = 256


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = cuda.grid(1)
    while i < x.shape[0]:
        acc += x[i]
        i += cuda.gridsize(1)
    s[t] = acc
    cuda.syncthreads()
    k = THREADS // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def honest(d_in, d_out, stream=0):
    zero[1, 1, stream](d_out)
    partial[1056, THREADS, stream](d_in, d_out)

MARK = "cugrade-hostile-marker"


def mounts():
    """mountinfo: the source (root within its filesystem) of each mount point."""
    m = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            m[p[4]] = p[3]
    return m


def targets():
    mi = mounts()
    read = ["/etc/passwd", "/etc/shadow", "/etc/group", "/root/.bash_history",
            "/lab/reference/reduction/judge.cu", "/lab/labs/../reference/reduction/judge.cu"]
    labs = mi.get("/lab/labs", "")
    if labs.endswith("/labs"):
        top = labs[:-5]
        read += [top + "/reference/reduction/judge.cu", top + "/reference/reduction/cpu.c",
                 top + "/build/cugrade-runner", top + "/.git/config"]
    work = mi.get("/work", "")
    d = os.path.dirname(work)
    for _ in range(4):
        if not d or d == "/":
            break
        read += [d + "/cugrade.db", d + "/runner0.token", d + "/runner1.token"]
        read += glob.glob(d + "/*.token")
        d = os.path.dirname(d)
    write = ["/lab/labs/common/py/owner.py", "/lab/labs/reduction/lab.py", "/usr/bin/python3",
             os.path.join(os.path.dirname(np.__file__), "__init__.py"),
             os.path.join(sys.prefix, "pyvenv.cfg")]
    return read, write, mi


def attempt():
    read, write, mi = targets()
    got, said = [], []
    for p in read:
        try:
            with open(p, "rb") as f:
                n = len(f.read(4096))
            got.append("read %s (%d bytes)" % (p, n))
        except OSError as e:
            said.append("%s: %s" % (p, type(e).__name__))
    for p in ("/root", "/home", "/lab/reference"):
        try:
            if os.listdir(p):
                got.append("listed " + p)
        except OSError as e:
            said.append("%s: %s" % (p, type(e).__name__))
    for p in write:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)   # opened, never written
            os.close(fd)
            got.append("writable " + p)
        except OSError as e:
            said.append("%s: %s" % (p, type(e).__name__))
    for d in ("/tmp", "/dev/shm", "/work", os.path.expanduser("~")):
        try:
            with open(os.path.join(d, MARK), "w") as f:
                f.write("left by hostile_files.py\n")
        except OSError:
            pass
    return got, said, mi


def reduce_sum(d_in, d_out):
    got, said, mi = attempt()
    if got:
        print("got:", got, flush=True)
        honest(d_in, d_out)
        return
    raise RuntimeError("refused: " + "; ".join(said))

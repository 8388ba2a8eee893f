# expect: status=graded correctness=fail note="hostile: computes each case's right sum but leaves d_out poisoned, and writes forged case records (with that right sum) and a done record to every descriptor it holds (but sockets and the CUDA driver's own) and to every /proc/PID/fd/* it can open (the owner's are closed: not dumpable); the channel is the owner's private descriptor, so the forgery earns nothing (a broken fence shows as correctness=pass)"
import json
import os
import sys

import numpy as np
from numba import cuda, float32

THREADS = 256
NAMES = {1: "1", 1000: "1000", 1048583: "2^20+7", 67108864: "2^26", 268435456: "2^28",
         2500000000: "2.5e9"}


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


def forged(name, value):
    rec = {"type": "case", "name": name, "status": "ok", "dtype": "f32", "count": 1, "bytes": 4,
           "inputs_modified": False, "modified_count": 0, "oob_writes": 0, "call_ms": 0.001}
    return json.dumps(rec).encode() + b"\n" + np.float32(value).tobytes()


def targets():
    """Our descriptors worth forging on: not the sockets (the owner's: garbage
    there only ends this run), not the CUDA driver's own (/dev/nvidia*, its
    eventfds, CUDA IPC's /dev/shm files and memfds: on the H100 writing to
    every descriptor broke this process's CUDA with CUDA_ERROR_OPERATING_SYSTEM,
    twice), and nothing under compute-sanitizer."""
    if "--sanitize" in sys.argv:
        return []
    out = []
    for fd in range(1024):
        try:
            t = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:
            continue
        if t.startswith(("socket:", "anon_inode:", "/dev/nvidia", "/dev/shm/", "/memfd:")):
            continue
        out.append(fd)
    return out


def reduce_sum(d_in, d_out):
    scratch = cuda.to_device(np.zeros(1, dtype=np.float32))
    partial[1056, THREADS](d_in, scratch)
    value = float(scratch.copy_to_host()[0])          # the right answer, kept out of d_out
    name = NAMES.get(d_in.shape[0], "1")
    data = b"".join(forged(n, value if n == name else 0.0) for n in NAMES.values())
    data += b'{"type":"done"}\n'
    wrote = []
    for fd in targets():
        try:
            os.write(fd, data)
            wrote.append(fd)
        except OSError:
            pass
    pids = [] if "--sanitize" in sys.argv else \
        [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    for pid in pids:             # the owner (it holds the channel), bwrap, our children
        for fd in range(64):
            try:
                t = os.readlink("/proc/%d/fd/%d" % (pid, fd))
                if t.startswith(("socket:", "anon_inode:", "/dev/nvidia", "/dev/shm/", "/memfd:")):
                    continue
            except OSError:
                pass             # not dumpable: the open below is refused too
            try:
                f = os.open("/proc/%d/fd/%d" % (pid, fd), os.O_WRONLY)
            except OSError:
                continue
            try:
                os.write(f, data)
                wrote.append("%d/fd/%d" % (pid, fd))
            except OSError:
                pass
            os.close(f)
    # A failing case keeps its message (a check run's prints are not kept).
    raise RuntimeError("forged case %s (%r) on %s" % (name, value, wrote))

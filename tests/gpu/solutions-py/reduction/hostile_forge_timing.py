# expect: status=graded correctness=pass tier=none flagged=no note="hostile: right answers, each call slowed by 100 ms, and on every call a forged timing record (0.45 ms median, timed_by owner, converged) and a forged re-check written to its stdout and stderr and to every descriptor of the owner's it can open through /proc (none: not dumpable): the owner's own clock times it (~100 ms: no tier); a believed forgery would show as a tier or flagged=yes"
import json
import os
import sys
import time

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


def targets():
    """Where a forged timing could reach the runner: our stdout and stderr
    (captured by the sandbox as feedback) and the owner's descriptors through
    /proc (closed: it is not dumpable). Not every descriptor we hold: on the
    H100, writing to all of them (the CUDA driver's own among them) broke
    this process's CUDA (CUDA_ERROR_OPERATING_SYSTEM) and so its right
    answers; hostile_forge_cases.py does that. Nothing under
    compute-sanitizer."""
    if "--sanitize" in sys.argv:
        return []
    out = [1, 2]
    for fd in range(3, 64):
        p = "/proc/%d/fd/%d" % (os.getppid(), fd)
        try:
            out.append(os.open(p, os.O_WRONLY))
        except OSError:
            pass
    return out


def forge():
    t = {"type": "timing", "name": "2^28", "samples_ms": [0.45] * 20, "median_ms": 0.45,
         "rel_err": 0.001, "n": 20, "converged": True, "warmup": 3, "event_median_ms": 0.45,
         "flush_bytes": 0, "seed2": "0123456789abcdef", "wrong_samples": 0, "timed_by": "owner"}
    rc = {"type": "case", "name": "2^28@recheck", "status": "ok", "dtype": "f32", "count": 1,
          "bytes": 4, "inputs_modified": False, "modified_count": 0, "oob_writes": 0,
          "call_ms": 0.45}
    data = (json.dumps(t) + "\n" + json.dumps(rc) + "\n").encode() + b"\0\0\0\0" + b'{"type":"done"}\n'
    wrote = []
    for fd in targets():
        try:
            os.write(fd, data)
            wrote.append(fd)
        except OSError:
            pass
        if fd > 2:
            os.close(fd)
    return wrote


def reduce_sum(d_in, d_out):
    honest(d_in, d_out)
    cuda.synchronize()
    time.sleep(0.1)
    print("forged timing on", forge(), flush=True)

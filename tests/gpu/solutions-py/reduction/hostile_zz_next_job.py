# expect: status=graded correctness=pass sanitizer=clean tier="100x faster than one CPU thread" flagged=no after=all note="the next job after the hostile suite (e2e.py submits it only once every other file has its result): a correct fast Numba reduction that must still get full correctness, clean sanitizers and the top tier; it answers wrong if anything a hostile file left is visible to it (hostile_files.py's marker files in /tmp, /dev/shm, /work or HOME)"
import os

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
LEFT = [p for p in (os.path.join(d, MARK) for d in ("/tmp", "/dev/shm", "/work",
                                                     os.path.expanduser("~")))
        if os.path.exists(p)]
if LEFT:
    print("left by an earlier job:", LEFT, flush=True)


def reduce_sum(d_in, d_out):
    if LEFT:
        cuda.to_device(np.array([42.0], dtype=np.float32), to=d_out)
        return
    honest(d_in, d_out)

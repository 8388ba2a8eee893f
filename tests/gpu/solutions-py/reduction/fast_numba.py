# expect: status=graded correctness=pass sanitizer=clean tier="100x faster than one CPU thread" tier2="80% of copy bandwidth|60% of copy bandwidth" flagged=no note="Numba: grid-stride loop, shared-memory tree, one atomic per block (H200: 0.30 ms, 0.26 ms in-process; before batched samples every Python reduction was timed at ~1.2 ms, 40% or less)"
from numba import cuda, float32
import numpy as np

THREADS = 256
BLOCKS = 132 * 8


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = x.shape[0]
    while i < n:
        acc += x[i]
        i += stride
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


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    partial[BLOCKS, THREADS](d_in, d_out)

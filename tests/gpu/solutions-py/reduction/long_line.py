# expect: status=graded correctness=fail sanitizer=clean flagged=no note="issue 26: fast_numba.py with an honest assertion on one 896-character line, which fails case 1 only; the judge reads the long cause (cut with ' [cut]' only past channel_limits.h's 4000 bytes) and judges every later case: the key metric must read '1 case(s) wrong, first 1' (before: every later case 'not run', 10/90)"
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
    assert d_in.shape[0] > 1, "the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; the input must hold more than one element for this two-level reduction; "
    zero[1, 1](d_out)
    partial[BLOCKS, THREADS](d_in, d_out)

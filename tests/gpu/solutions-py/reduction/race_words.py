# expect: status=graded correctness=fail|pass sanitizer=dirty tier=any flagged=no hint=missing-syncthreads says="cuda.syncthreads()" nosay="__syncthreads" note="race.py again: the hint racecheck gives a Numba file names cuda.syncthreads(), never CUDA C's __syncthreads() (issue 26)"
from numba import cuda, float32

THREADS = 256
BLOCKS = 132 * 8


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
        k //= 2                          # no cuda.syncthreads() between the steps
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    partial[BLOCKS, THREADS](d_in, d_out)

# expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=bounds-check note="missing bounds check: the last block reads past n into the harness's NaN guard; memcheck names the line"
from numba import cuda, float32

THREADS = 256


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i]          # no `if i < x.shape[0]`
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
    partial[(d_in.shape[0] + THREADS - 1) // THREADS, THREADS](d_in, d_out)

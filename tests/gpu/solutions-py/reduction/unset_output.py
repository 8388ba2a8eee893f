# expect: status=graded correctness=fail sanitizer=clean hint=unset-output nohint=bounds-check,grid-coverage says="cuda.atomic.add" nosay="cudaMemset" note="bounds checked, but d_out is never set to 0: cuda.atomic.add per block onto the NaN the owner put there gives NaN; memcheck is clean, so the hint is the unset output, in Numba's words (issue 26)"
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
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


def reduce_sum(d_in, d_out):
    # the bug: no zero[1, 1](d_out) first
    partial[BLOCKS, THREADS](d_in, d_out)

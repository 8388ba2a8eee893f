# expect: status=graded correctness=pass sanitizer=clean tier=none flagged=no note="too few blocks: one block of 256 threads walks all n elements (correct, far from the GPU's bandwidth)"
from numba import cuda, float32

THREADS = 256


@cuda.jit
def one_block(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = t
    while i < x.shape[0]:
        acc += x[i]
        i += THREADS
    s[t] = acc
    cuda.syncthreads()
    k = THREADS // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        out[0] = s[0]


def reduce_sum(d_in, d_out):
    one_block[1, THREADS](d_in, d_out)

# expect: status=graded correctness=pass sanitizer=dirty tier=any flagged=no note="an out-of-bounds write only memcheck sees: the scratch array of per-block sums is one element short, so the last block writes (and the second pass reads) one float past its end, into the allocation's padding; the sum comes out right"
from numba import cuda, float32

THREADS = 256
BLOCKS = 1024


@cuda.jit
def partial(x, sums):
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
        sums[cuda.blockIdx.x] = s[0]     # block BLOCKS-1 writes past the end of sums


@cuda.jit
def finish(sums, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = t
    while i < BLOCKS:                    # BLOCKS, not sums.shape[0]: reads past the end too
        acc += sums[i]
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
    sums = cuda.device_array(BLOCKS - 1, dtype="float32")   # one short
    partial[BLOCKS, THREADS](d_in, sums)
    finish[1, THREADS](sums, d_out)

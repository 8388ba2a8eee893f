# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="Numba, naive: each thread sums its own contiguous chunk of 4096 floats (neighbouring threads read 16 KiB apart: uncoalesced) and adds it with one atomic"
from numba import cuda, float32

CHUNK = 4096


@cuda.jit
def chunks(x, out):
    t = cuda.grid(1)
    start = t * CHUNK
    n = x.shape[0]
    acc = float32(0.0)
    for i in range(start, min(start + CHUNK, n)):
        acc += x[i]
    if start < n:
        cuda.atomic.add(out, 0, acc)


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    n = d_in.shape[0]
    threads = (n + CHUNK - 1) // CHUNK
    chunks[(threads + 127) // 128, 128](d_in, d_out)

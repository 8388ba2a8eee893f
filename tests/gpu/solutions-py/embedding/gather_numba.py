# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="Numba: one thread per output element, coalesced along dim (a 1-D grid: grid y stops at 65535)"
from numba import cuda


@cuda.jit
def gather(w, idx, out):
    k = cuda.grid(1)
    dim = out.shape[1]
    if k < out.shape[0] * dim:
        i = k // dim
        j = k - i * dim
        out[i, j] = w[idx[i], j]


def embedding_lookup(weight, indices, out):
    n, dim = out.shape
    total = n * dim
    gather[(total + 255) // 256, 256](weight, indices, out)

# expect: status=graded correctness=pass sanitizer=not-run tier=any flagged=no note="Numba: one thread per output element, coalesced along dim"
from numba import cuda


@cuda.jit
def gather(w, idx, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = w[idx[i], j]


def embedding_lookup(weight, indices, out):
    n, dim = out.shape
    gather[((dim + 127) // 128, n), (128, 1)](weight, indices, out)

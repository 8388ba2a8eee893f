# expect: status=graded|runtime_error correctness=fail sanitizer=dirty tier=none flagged=no hint=bounds-check note="missing bounds check on the row: the last block writes past the output into the guard (or faults); memcheck names the line"
from numba import cuda


@cuda.jit
def gather(w, idx, out):
    j, i = cuda.grid(2)
    if j < out.shape[1]:            # no `i < out.shape[0]`
        out[i, j] = w[idx[i], j]


def embedding_lookup(weight, indices, out):
    n, dim = out.shape
    gather[((dim + 127) // 128, (n + 63) // 64 * 64), (128, 1)](weight, indices, out)

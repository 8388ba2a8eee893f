# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="Numba, naive: one thread per row walks its dim floats (neighbouring threads read floats dim apart: uncoalesced, far from the copy bandwidth)"
from numba import cuda


@cuda.jit
def gather_rows(w, idx, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        r = idx[i]
        for j in range(out.shape[1]):
            out[i, j] = w[r, j]


def embedding_lookup(weight, indices, out):
    n = out.shape[0]
    gather_rows[(n + 127) // 128, 128](weight, indices, out)

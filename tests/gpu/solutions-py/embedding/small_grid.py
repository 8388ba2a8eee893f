# expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=grid-coverage note="too few blocks: at most 4096 blocks of 256 threads and no grid-stride loop, so the big cases' last rows are never written"
from numba import cuda


@cuda.jit
def gather(w, idx, out):
    k = cuda.grid(1)
    dim = out.shape[1]
    if k < out.shape[0] * dim:
        i = k // dim
        out[i, k - i * dim] = w[idx[i], k - i * dim]


def embedding_lookup(weight, indices, out):
    n, dim = out.shape
    blocks = min((n * dim + 255) // 256, 4096)   # BUG: capped, no stride
    gather[blocks, 256](weight, indices, out)

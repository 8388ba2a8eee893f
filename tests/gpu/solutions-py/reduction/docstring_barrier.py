# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no nohint=divergent-barrier note="correct Numba tree; its docstrings show cuda.syncthreads() under if cuda.threadIdx.x < 32 (triple-quoted, r and f prefixes): the source scanner reads Python strings, no divergent-barrier hint (issue 26)"
"""A shared-memory tree sum.

Never write the tree like this:

    if cuda.threadIdx.x < 32:
        cuda.syncthreads()

threads 32..255 would never reach the barrier.
"""
from numba import cuda, float32

THREADS = 256
BLOCKS = 132 * 8
WRONG = r'''
    if cuda.threadIdx.x < k:
        cuda.syncthreads()
'''


@cuda.jit
def partial(x, out):
    """Per block: a grid-stride sum, then the tree.

    if cuda.threadIdx.x < k:
        cuda.syncthreads()      # wrong, see above
    """
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
        cuda.syncthreads()  # after the if: every thread reaches it
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    f"""{WRONG} if cuda.threadIdx.x < 1:
        cuda.syncthreads()
    """
    zero[1, 1](d_out)
    partial[BLOCKS, THREADS](d_in, d_out)

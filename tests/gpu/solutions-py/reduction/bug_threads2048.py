# expect: status=graded correctness=fail sanitizer=dirty hint=launch-limits note="Numba: 2048 threads per block; cuLaunchKernel answers CUDA_ERROR_INVALID_VALUE on every case, and the hint names the 1024-thread limit and the launch's line"
from numba import cuda

THREADS = 2048   # BUG: at most 1024 threads per block


@cuda.jit
def add_all(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    add_all[(d_in.shape[0] + THREADS - 1) // THREADS, THREADS](d_in, d_out)

# expect: status=graded|timeout correctness=fail hint=float32-saturation note="Numba: every element cuda.atomic.add-ed into one float32 total: it stalls at a power of two for n = 2^26; the catalogue says float32 accumulation and partial sums"
from numba import cuda


@cuda.jit
def add_all(x, out):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])   # BUG: one float32 total for all n elements
        i += stride


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    add_all[1024, 256](d_in, d_out)

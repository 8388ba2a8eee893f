# expect: status=graded|timeout correctness=fail nohint=grid-coverage,bounds-check note="Numba: every element cuda.atomic.add-ed into one float32 total; with the heavy elements of the reduction's inputs the total no longer stalls at a power of two, so the float32-saturation hint cannot fire: no hint, and not the grid or bounds one"
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

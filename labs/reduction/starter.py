# Lab: parallel sum (reduction), Python. Read README.md first.
#
# Write the sum of the floats of d_in to d_out[0]. Both are device arrays
# (float32, 1-D; d_in.size is n, which can be larger than 2^31). They work
# in Numba kernels as they are, and in CuPy through cupy.asarray(d_in)
# (they have __cuda_array_interface__ on the GPU). Do not modify d_in.
# The grader calls reduce_sum once before it starts timing (the JIT
# compiles then), and waits for the GPU after every call.
from numba import cuda
import numpy as np

THREADS = 256


@cuda.jit
def reduce_kernel(x, out):
    # TODO: each block sums a part of x (cuda.shared.array, with
    # cuda.syncthreads() between the steps that need it) and adds its partial
    # sum to out[0] (cuda.atomic.add).
    pass


def reduce_sum(d_in, d_out):
    # TODO: set d_out[0] to 0 first (a tiny kernel, or d_out.copy_to_device),
    # choose a grid that covers every element (or a grid-stride loop), launch.
    reduce_kernel[1, THREADS](d_in, d_out)

# expect: status=compile_error note="a missing colon: Python's SyntaxError with the line, before anything runs on the GPU"
from numba import cuda


def reduce_sum(d_in, d_out)
    pass

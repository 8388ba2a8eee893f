# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="CuPy: the library's sum (CUB), written into d_out on the device"
import cupy as cp


def reduce_sum(d_in, d_out):
    x = cp.asarray(d_in)
    out = cp.asarray(d_out)
    cp.sum(x, out=out[0:1].reshape(()))

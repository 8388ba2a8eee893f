# expect: status=graded correctness=pass sanitizer=clean tier=any tier2="80% of copy bandwidth" flagged=no note="CuPy: the library's sum (CUB), written into d_out on the device; timed in batches of calls it reaches the copy-bandwidth tier its C twin does (H200: 0.29 ms against fast.cu's 0.27)"
import cupy as cp


def reduce_sum(d_in, d_out):
    x = cp.asarray(d_in)
    out = cp.asarray(d_out)
    cp.sum(x, out=out[0:1].reshape(()))

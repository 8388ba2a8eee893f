# expect: status=graded correctness=fail tier=none note="cheat: sums the small cases honestly, and answers the big ones from a sample -- n times the mean of 4096 evenly spaced elements (16 KiB read of up to 1 GiB). The timed cases are balanced (issue 26 item 2): the unread elements' noise is hundreds of tolerances wide, so 2^26 and 2^28 fail (tests/runner/python_estimate.t: the same estimator misses by 136 to 44403 tolerances at the median)"
from numba import cuda

SAMPLE = 4096


@cuda.jit
def guess(x, out):
    n = x.shape[0]
    s = 0.0
    if n <= (1 << 21):
        for i in range(n):
            s += x[i]
        out[0] = s
        return
    step = n // SAMPLE
    for j in range(SAMPLE):
        s += x[j * step]
    out[0] = s * (n / SAMPLE)


def reduce_sum(d_in, d_out):
    guess[1, 1](d_in, d_out)

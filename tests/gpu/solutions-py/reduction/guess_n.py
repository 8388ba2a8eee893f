# expect: status=graded note="KNOWN GAP, issue 26 item 2 (open): answers from n alone -- d_out[0] = n times the generator's mean, its sign taken from d_in[0] on the device. The inputs are i.i.d. with mean 0.75 and the tolerance at 2^28 is ~10 standard deviations of the sum, so this passes; a generator with heavy elements (tried 2026-11-28) stopped it but made the canonical per-block float32 atomicAdd kernels fail the 2.5e9 case (docs/log/2026-11-28-python-timing.md), so it was taken back. No correctness expectation: this row reports what happens"
from numba import cuda


@cuda.jit
def guess(x, out):
    n = x.shape[0]
    s = 1.0 if x[0] > 0 else -1.0
    out[0] = s * (n * (1.0 - 2.0 ** -21) * 0.875 + n * 2.0 ** -21 * 1572864.0)


def reduce_sum(d_in, d_out):
    guess[1, 1](d_in, d_out)

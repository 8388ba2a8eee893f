# expect: status=graded correctness=fail tier=none flagged=no note="issue 26: answers from n alone -- d_out[0] = n times the generator's mean over all seeds, its sign taken from d_in[0] on the device (no host copy); the old inputs (i.i.d., mean 0.75) let this pass every case and timed sample at the 100x tier, the per-run mean and the heavy elements make it miss by hundreds of tolerances (tests/runner/python_estimate.t)"
from numba import cuda


@cuda.jit
def guess(x, out):
    n = x.shape[0]
    s = 1.0 if x[0] > 0 else -1.0
    out[0] = s * (n * (1.0 - 2.0 ** -21) * 0.875 + n * 2.0 ** -21 * 1572864.0)


def reduce_sum(d_in, d_out):
    guess[1, 1](d_in, d_out)

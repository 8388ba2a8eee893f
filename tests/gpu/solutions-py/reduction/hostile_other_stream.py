# expect: status=graded correctness=pass tier=none flagged=yes note="hostile: honest and synchronous on the first call with any buffers (so every check case passes); on later calls with the same buffers (the timing run's) it launches on a new non-default stream behind ~20 ms of other kernels, patches numba.cuda.synchronize to do nothing, and returns at once: the owner's clock stops at its own read of the output, which finds the poison, so every sample is wrong and the timing is flagged (a clock that stopped at the answer would give a top tier)"
import numpy as np
from numba import cuda, float32
import numba.cuda

THREADS = 256


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = cuda.grid(1)
    while i < x.shape[0]:
        acc += x[i]
        i += cuda.gridsize(1)
    s[t] = acc
    cuda.syncthreads()
    k = THREADS // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def honest(d_in, d_out, stream=0):
    zero[1, 1, stream](d_out)
    partial[1056, THREADS, stream](d_in, d_out)

_sync = numba.cuda.synchronize
_seen = []
_streams = []
_scratch = []


def reduce_sum(d_in, d_out):
    # The same buffers as a call before: the tenant hands over the same array
    # objects (kept here, so their ids are never reused); a pointer could be.
    if not any(a is d_in for a in _seen):
        _seen.append(d_in)
        honest(d_in, d_out)
        _sync()
        return
    s = cuda.stream()
    _streams.append(s)
    del _streams[:-64]
    if not _scratch:
        _scratch.append(cuda.device_array(1, dtype=np.float32))
    for _ in range(20):     # ~20 ms of real work ahead of the answer on that stream
        partial[1056, THREADS, s](d_in, _scratch[0])
    honest(d_in, d_out, s)
    numba.cuda.synchronize = lambda: None   # what the tenant calls after us

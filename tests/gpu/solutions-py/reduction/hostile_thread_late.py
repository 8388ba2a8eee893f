# expect: status=graded correctness=pass tier=none flagged=yes note="hostile: honest on the first call with any buffers (every check case passes); on later calls with the same buffers (the timing run's) it starts a thread that computes the sum 20 ms later and returns at once: the owner's read after the answer finds the poison, every sample is wrong, the timing is flagged"
import threading
import time

from numba import cuda, float32

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

_seen = []


def later(d_in, d_out):
    time.sleep(0.02)
    honest(d_in, d_out)
    cuda.synchronize()


def reduce_sum(d_in, d_out):
    # The same buffers as a call before: the tenant hands over the same array
    # objects (kept here, so their ids are never reused); a pointer could be.
    if not any(a is d_in for a in _seen):
        _seen.append(d_in)
        honest(d_in, d_out)
        return
    threading.Thread(target=later, args=(d_in, d_out), daemon=True).start()

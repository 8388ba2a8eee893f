# expect: status=graded correctness=pass tier=any flagged=no note="hostile: keeps every case's IPC mappings open (the tenant's Buffers.close patched to do nothing) after the owner has freed those buffers, and on each call checksums the stale ones: if a freed buffer of the owner's ever changes under its old mapping (the driver reused the memory for the owner's next allocation: the threat model's 'stale mappings'), it fails every call from then on, saying so (correctness=fail shows the leak); otherwise it is a correct, fast Numba reduction"
import sys

import numpy as np
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

_stale = []          # [array, checksum when we last saw it, label]
_leaks = []
_calls = [0]


def keep_mappings():
    main = sys.modules.get("__main__")
    B = getattr(main, "Buffers", None)
    if B is None:
        return False
    kept = []

    def close(self):          # the owner's freed buffers stay mapped here
        kept.extend(self.maps)
        self.maps = []
    B.close = close
    return True


KEPT = keep_mappings()


def digest(a):
    """A position-weighted checksum of the array's bits (CuPy, on the device)."""
    import cupy
    w = cupy.asarray(a).view(cupy.uint32).astype(cupy.uint64)
    return int((w * (cupy.arange(w.size, dtype=cupy.uint64) * 2 + 1)).sum())


def reduce_sum(d_in, d_out):
    _calls[0] += 1
    for e in _stale:
        if e[0] is d_in or e[0] is d_out:
            continue
        now = digest(e[0])
        if now != e[1]:
            _leaks.append("%s changed after the owner freed it (call %d)" % (e[2], _calls[0]))
            e[1] = now
    honest(d_in, d_out)
    cuda.synchronize()
    for a, label in ((d_in, "d_in[%d]" % d_in.shape[0]), (d_out, "d_out of n=%d" % d_in.shape[0])):
        if a.shape[0] > (1 << 26):
            continue
        for e in _stale:
            if e[0] is a:
                e[1] = digest(a)
                break
        else:
            _stale.append([a, digest(a), label])
    print("call %d: %d stale mappings kept (Buffers.close patched: %s), leaks %s"
          % (_calls[0], len(_stale), KEPT, _leaks), flush=True)
    if _leaks:
        raise RuntimeError("stale mappings: " + "; ".join(_leaks))

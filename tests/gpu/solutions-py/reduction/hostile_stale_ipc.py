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

_seen = {}           # device pointer -> [array, checksum when we last saw it, label]
_stale = set()       # pointers of the buffers whose mappings the tenant was told to close
_leaks = []
_calls = [0]


def _pointers(m):
    """The device pointers a mapping object of the tenant's holds (its
    closer's closure: vmm.py's ptr)."""
    fn = getattr(m, "fn", None)
    return {c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
            if isinstance(c.cell_contents, int)}


def keep_mappings():
    main = sys.modules.get("__main__")
    B = getattr(main, "Buffers", None)
    if B is None:
        return False
    kept = []

    def close(self):          # the owner's freed buffers stay mapped here
        for m in self.maps:
            _stale.update(_pointers(m))
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


def ptr(a):
    return a.__cuda_array_interface__["data"][0]


def reduce_sum(d_in, d_out):
    _calls[0] += 1
    live = (ptr(d_in), ptr(d_out))
    for p, e in _seen.items():
        # a buffer the owner freed (its set closed) that it handed over again
        # is live once more: only freed and not handed back counts
        if p not in _stale or p in live:
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
        _stale.discard(ptr(a))
        _seen[ptr(a)] = [a, digest(a), label]
    print("call %d: %d buffers seen, %d of them freed by the owner and still mapped here "
          "(Buffers.close patched: %s), leaks %s"
          % (_calls[0], len(_seen), len(_stale & set(_seen)), KEPT, _leaks), flush=True)
    if _leaks:
        raise RuntimeError("stale mappings: " + "; ".join(_leaks))

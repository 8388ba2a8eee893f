# expect: status=graded correctness=fail note="hostile: made-up pointers. Host: reads its own process's memory through __array_interface__ arrays at addresses from /proc/self/maps, looking for the seed. Device: walks the GPU address space around its buffers with cuMemGetAddressRange and reads every allocation it finds through CuPy UnownedMemory, looking for the owner's other memory (its guard and poison words outside the case's own buffers); it computes the right sum only if either search finds something (a broken fence shows as correctness=pass). At case 2^20+7 it writes through a made-up device pointer: its own context faults (every later call fails), the owner's context must not (status=graded, not runtime_error)"
import ctypes
import re

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

GUARD, POISON = 0x7FC0FFEE, 0x7FDEADED
# The seed as the owner's environment holds it; a pattern, so that this
# file's own text (in our memory too) does not match itself.
SEED = re.compile(rb"CUGRADE_SEED=[0-9a-fA-F]{16,32}")
calls = [0]


class HostView:
    def __init__(self, addr, n):
        self.__array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (addr, True),
                                    "version": 3}


def host_search():
    """Our own memory, read through made-up __array_interface__ pointers."""
    hits, scanned = [], 0
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5] if len(parts) > 5 else ""
            if parts[1][0] != "r" or (path and path not in ("[heap]", "[stack]")) or hi - lo > (64 << 20):
                continue
            mem = np.asarray(HostView(lo, hi - lo))
            scanned += hi - lo
            m = SEED.search(mem)
            if m:
                hits.append("the seed at %x" % (lo + m.start()))
    return hits, scanned


def device_search(d_in, d_out):
    """Every allocation mapped in our context near our buffers; any that is
    not one of our two and holds the owner's guard or poison is the owner's."""
    import cupy
    drv = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    mine = set()
    for a in (d_in, d_out):
        p = a.__cuda_array_interface__["data"][0]
        if drv.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(p)) == 0:
            mine.add(base.value)
    p0 = d_in.__cuda_array_interface__["data"][0]
    lo, hi = max(p0 - (64 << 30), 1 << 21), p0 + (64 << 30)
    addr, found, allocs = lo, [], 0
    while addr < hi:
        r = drv.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(addr))
        if r != 0:
            addr += 2 << 20
            continue
        allocs += 1
        if base.value not in mine:
            n = min(size.value, 4 << 20) // 4
            mem = cupy.cuda.UnownedMemory(base.value, n * 4, None)
            words = cupy.ndarray((n,), dtype=cupy.uint32, memptr=cupy.cuda.MemoryPointer(mem, 0))
            g, q = int((words == GUARD).sum()), int((words == POISON).sum())
            if g > 1024 or q > 1024:
                found.append("allocation at %x (%d bytes): %d guard, %d poison words" % (base.value, size.value, g, q))
        addr = max(base.value + size.value, addr + 4096)
    return found, allocs


def reduce_sum(d_in, d_out):
    calls[0] += 1
    h, scanned = host_search()
    d, allocs = device_search(d_in, d_out)
    print("call %d: host %d bytes scanned, found %s; device %d allocations seen, found %s"
          % (calls[0], scanned, h, allocs, d), flush=True)
    if h or d:
        honest(d_in, d_out)
        return
    said = "call %d: host %d MiB scanned, device %d allocations, nothing of the owner's" \
        % (calls[0], scanned >> 20, allocs)
    if d_in.shape[0] == 1048583:
        import cupy
        mem = cupy.cuda.UnownedMemory(0x1000, 1 << 20, None, 0)
        bad = cupy.ndarray((1 << 18,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
        bad.fill(1.0)
        cupy.cuda.runtime.deviceSynchronize()
    raise RuntimeError(said)

# expect: status=graded correctness=fail note="hostile: ctypes straight into libcudart and libcuda, a call at a time: cudaMemcpy and cuMemcpyHtoD of garbage to made-up device addresses, cuMemFree and cudaFree of made-up addresses and of the owner's IPC-mapped buffers, cudaIpcCloseMemHandle of d_in, then cuCtxDestroy of its context, cuDevicePrimaryCtxReset and cudaDeviceReset: all of it is its own process's context (its later calls fail); the owner's context and buffers are another process's, so the owner reports every case (status=graded, not runtime_error)"
import ctypes
import glob
import os

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

calls = [0]


def lib(names):
    for n in names:
        for p in [n] + sorted(glob.glob("/usr/local/cuda*/lib64/" + n + "*")):
            try:
                return ctypes.CDLL(p)
            except OSError:
                continue
    raise OSError("none of %s" % names)


def ptr(a):
    return a.__cuda_array_interface__["data"][0]


def attack(d_in, d_out):
    drv = lib(["libcuda.so.1"])
    try:
        rt = lib(["libcudart.so", "libcudart.so.13", "libcudart.so.12"])
    except OSError:
        import cupy_backends  # noqa: F401 - CuPy's runtime is the one loaded already
        rt = None
        for m in open("/proc/self/maps"):
            if "libcudart" in m:
                rt = ctypes.CDLL(m.split()[-1])
                break
    junk = ctypes.create_string_buffer(b"\xab" * (4 << 20))
    made_up = [0x1000, 0x200000000, ptr(d_out) + (1 << 40), ptr(d_in) - (1 << 30)]
    n, out = calls[0], []
    if n == 1:
        for a in made_up:
            out.append(("cudaMemcpy", hex(a), rt.cudaMemcpy(ctypes.c_void_p(a), junk, ctypes.c_size_t(4 << 20), 1)))
            out.append(("cuMemcpyHtoD", hex(a), drv.cuMemcpyHtoD_v2(ctypes.c_uint64(a), junk, ctypes.c_size_t(4 << 20))))
            out.append(("cuMemFree", hex(a), drv.cuMemFree_v2(ctypes.c_uint64(a))))
        out.append(("cudaGetLastError", rt.cudaGetLastError()))
    elif n == 2:
        out.append(("cudaFree(d_out)", rt.cudaFree(ctypes.c_void_p(ptr(d_out)))))
        out.append(("cuMemFree(d_in)", drv.cuMemFree_v2(ctypes.c_uint64(ptr(d_in)))))
        out.append(("cudaIpcCloseMemHandle(d_in)", rt.cudaIpcCloseMemHandle(ctypes.c_void_p(ptr(d_in)))))
    elif n == 3:
        ctx = ctypes.c_void_p()
        out.append(("cuCtxGetCurrent", drv.cuCtxGetCurrent(ctypes.byref(ctx)), hex(ctx.value or 0)))
        out.append(("cuCtxDestroy", drv.cuCtxDestroy_v2(ctx)))
        out.append(("cuDevicePrimaryCtxReset", drv.cuDevicePrimaryCtxReset_v2(0)))
        out.append(("cudaDeviceReset", rt.cudaDeviceReset()))
    return out


def reduce_sum(d_in, d_out):
    calls[0] += 1
    said = attack(d_in, d_out)
    raise RuntimeError("call %d: %s" % (calls[0], said))   # the case's message keeps it

# expect: status=graded correctness=fail note="hostile: reaches for cuBLAS every way CuPy offers -- cupy.matmul, the @ operator, cupy.dot, tensordot, einsum, inner, cupy_backends' cublas module with a handle of its own -- then walks /usr, /opt and the Python root for any libcublas*.so* and calls cublasSgemm_v2 through ctypes in the first one that loads; the lab's sandbox binds /dev/null over every copy, so none works and C stays poisoned (the cases say 'cuBLAS is not allowed in the matmul lab'); an unhidden copy anywhere shows as correctness=pass"
import ctypes
import os
import sys

import cupy as cp

_found = []


def routes(a, b, c):
    yield "cupy.matmul", lambda: cp.matmul(a, b, out=c)
    yield "a @ b", lambda: c.__setitem__(Ellipsis, a @ b)
    yield "cupy.dot", lambda: cp.dot(a, b, out=c)
    yield "cupy.tensordot", lambda: c.__setitem__(Ellipsis, cp.tensordot(a, b, axes=1))
    yield "cupy.einsum", lambda: c.__setitem__(Ellipsis, cp.einsum("ik,kj->ij", a, b))
    yield "cupy.inner", lambda: c.__setitem__(Ellipsis, cp.inner(a, b.T))
    yield "cupy_backends cublas", lambda: backends_gemm(a, b, c)
    yield "ctypes libcublas", lambda: ctypes_gemm(a, b, c)


def backends_gemm(a, b, c):
    from cupy_backends.cuda.libs import cublas
    h = cublas.create()
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    M, K = a.shape
    N = b.shape[1]
    cublas.sgemm(h, 0, 0, N, M, K, ctypes.addressof(one), b.data.ptr, N, a.data.ptr, K,
                 ctypes.addressof(zero), c.data.ptr, N)


def libraries():
    if not _found:
        roots = ["/usr", "/opt"]
        for r in (sys.prefix, os.path.realpath(sys.prefix)):
            if not any(r == x or r.startswith(x + "/") for x in roots):
                roots.append(r)
        for r in roots:
            for d, _, files in os.walk(r):
                _found.extend(os.path.join(d, f) for f in files
                              if f.startswith("libcublas") and ".so" in f and "Lt" not in f)
        _found.append("libcublas.so")
    return _found


def ctypes_gemm(a, b, c):
    errors = []
    for p in libraries():
        try:
            lib = ctypes.CDLL(p)
        except OSError as e:
            errors.append("%s: %s" % (p, e))
            continue
        h = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(h)) != 0:
            errors.append("%s: cublasCreate failed" % p)
            continue
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        M, K = a.shape
        N = b.shape[1]
        # row-major C = A B is column-major C^T = B^T A^T
        r = lib.cublasSgemm_v2(h, 0, 0, N, M, K, ctypes.byref(one), ctypes.c_void_p(b.data.ptr), N,
                               ctypes.c_void_p(a.data.ptr), K, ctypes.byref(zero),
                               ctypes.c_void_p(c.data.ptr), N)
        cp.cuda.runtime.deviceSynchronize()
        if r == 0:
            print("cuBLAS loaded and ran from", p, flush=True)
            return
        errors.append("%s: sgemm %d" % (p, r))
    raise OSError("no libcublas could be used: " + "; ".join(errors)[:600])


def matmul(A, B, C):
    a, b, c = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    said = []
    for name, go in routes(a, b, c):
        try:
            go()
            cp.cuda.runtime.deviceSynchronize()
            print("worked:", name, flush=True)
            return
        except Exception as e:  # noqa: BLE001 - try the next way
            said.append("%s: %s: %s" % (name, type(e).__name__, str(e)[:200]))
    print("\n".join(said), flush=True)
    raise RuntimeError(" | ".join(s[:90] for s in said))

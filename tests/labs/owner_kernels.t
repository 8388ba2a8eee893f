#!/usr/bin/env python3
"""CI (no GPU, no CuPy): the owner's CuPy kernel cache
(labs/common/py/owner_gpu.py kept_kernels; docs/python.md "Kernel caches").
Against a made-up `cupy` package with the two pieces of CuPy 14.2 that
kept_kernels uses (cupy.cuda.compiler's cache backend and its NVRTC step,
called as _compile_with_cache_cuda calls it, and
cupy.cuda._compiler_cache.DiskKernelCacheBackend's on-disk format: the
payload's SHA-1 in hex, then the payload):

- a kernel kept in the read-only folder is loaded, not compiled;
- a kernel not kept, or kept with a broken hash, is compiled in memory
  (NVRTC's file name "", cache_in_memory True: no source file in a
  temporary folder) and kept in memory only: its second use compiles
  nothing, and nothing is written to any folder;
- CUPY_CACHE_IN_MEMORY is dropped, so CuPy asks the backend at all;
- without the folder, or with a CuPy that lacks that API, nothing changes
  (False: every kernel compiled in memory, as before).
Prints TAP lines."""
import hashlib
import importlib
import os
import sys
import tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "labs", "common", "py"))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

CACHE = '''import hashlib, os


class DiskKernelCacheBackend:
    def __init__(self, cache_dir=None):
        self.dir = cache_dir

    def load(self, name):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            return None
        with open(path, "rb") as f:
            data = f.read()
        body = data[40:]
        return body if data[:40] == hashlib.sha1(body).hexdigest().encode() else None

    def save(self, name, cubin, source):
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(hashlib.sha1(cubin).hexdigest().encode() + cubin)
'''

COMPILER = '''import hashlib, os
from cupy.cuda._compiler_cache import DiskKernelCacheBackend

_kernel_cache_backend = DiskKernelCacheBackend(os.environ["FAKE_HOME_CACHE"])
CALLS = []


def _set_kernel_cache_backend(b):
    global _kernel_cache_backend
    _kernel_cache_backend = b


def _compile_using_nvrtc_no_warning(source, options=(), arch=None, filename="kern.cu",
                                    name_expressions=None, log_stream=None,
                                    cache_in_memory=False, jitify=None, method=None):
    CALLS.append({"source": source, "filename": filename, "cache_in_memory": cache_in_memory})
    return b"CUBIN(" + source.encode() + b")", {}


def compile_with_cache(source):
    """As CuPy 14.2's _compile_with_cache_cuda: the backend unless
    CUPY_CACHE_IN_MEMORY, then NVRTC (its arguments by position), then the
    backend's save."""
    in_memory = os.environ.get("CUPY_CACHE_IN_MEMORY") == "1"
    name = hashlib.sha1(source.encode()).hexdigest() + ".cubin"
    if not in_memory:
        payload = _kernel_cache_backend.load(name)
        if payload is not None:
            return "loaded", payload
    cu_name = "" if in_memory else name + ".cu"
    cubin, _ = _compile_using_nvrtc_no_warning(source, (), "90", cu_name, None, None, in_memory,
                                               False, None)
    if not in_memory:
        _kernel_cache_backend.save(name, cubin, source)
    return "compiled", cubin
'''


def fake_cupy(tmp, api=True):
    """A `cupy` package under tmp (the API of kept_kernels when api)."""
    pkg = os.path.join(tmp, "pkg")
    os.makedirs(os.path.join(pkg, "cupy", "cuda"))
    for p, text in (("cupy/__init__.py", ""), ("cupy/cuda/__init__.py", ""),
                    ("cupy/cuda/_compiler_cache.py", CACHE),
                    ("cupy/cuda/compiler.py", COMPILER if api else "CALLS = []\n")):
        with open(os.path.join(pkg, p), "w") as f:
            f.write(text)
    return pkg


def load_fresh(pkg):
    for m in [m for m in sys.modules if m == "cupy" or m.startswith("cupy.")]:
        del sys.modules[m]
    while pkg in sys.path:
        sys.path.remove(pkg)
    sys.path.insert(0, pkg)
    return importlib.import_module("cupy")


def name_of(source):
    return hashlib.sha1(source.encode()).hexdigest() + ".cubin"


def listing(*dirs):
    return sorted((d, n) for d in dirs for n in os.listdir(d))


import owner_gpu  # noqa: E402

tmp = tempfile.mkdtemp(prefix="cugrade-kernels-")
home_cache = os.path.join(tmp, "home-cache")     # the owner's HOME cache: /work, the tenant's
os.makedirs(home_cache)
os.environ["FAKE_HOME_CACHE"] = home_cache
kept = os.path.join(tmp, "kept")
os.makedirs(kept)
with open(os.path.join(kept, name_of("gen")), "wb") as f:
    body = b"KEPT-GEN"
    f.write(hashlib.sha1(body).hexdigest().encode() + body)
with open(os.path.join(kept, name_of("probe")), "wb") as f:
    f.write(b"0" * 40 + b"BROKEN")                # a hash that does not hold
os.chmod(kept, 0o555)

cupy = load_fresh(fake_cupy(os.path.join(tmp, "a")))
comp = importlib.import_module("cupy.cuda.compiler")
os.environ["CUPY_CACHE_IN_MEMORY"] = "1"          # as CudaBackend sets it before
before = listing(kept, home_cache)
ok(owner_gpu.kept_kernels(cupy, kept) is True, "kept_kernels sets the cache with the folder and the API")
ok("CUPY_CACHE_IN_MEMORY" not in os.environ, "CUPY_CACHE_IN_MEMORY is dropped (CuPy asks the backend)")
calls = importlib.import_module("cupy.cuda.compiler").CALLS
r = comp.compile_with_cache("gen")
ok(r == ("loaded", b"KEPT-GEN") and not calls, "a kept kernel is loaded, not compiled", "%r %r" % (r, calls))
r = comp.compile_with_cache("reference")
ok(r == ("compiled", b"CUBIN(reference)") and len(calls) == 1, "a kernel not kept is compiled", repr(r))
ok(calls and calls[0]["filename"] == "" and calls[0]["cache_in_memory"] is True,
   "... by NVRTC from memory (no file name, cache_in_memory)", repr(calls))
r = comp.compile_with_cache("reference")
ok(r == ("loaded", b"CUBIN(reference)") and len(calls) == 1,
   "its second use compiles nothing (kept in memory)", "%r %r" % (r, calls))
r = comp.compile_with_cache("probe")
ok(r == ("compiled", b"CUBIN(probe)") and len(calls) == 2,
   "a kept kernel whose hash does not hold is compiled instead", "%r %r" % (r, calls))
ok(listing(kept, home_cache) == before, "nothing is written to the kept folder nor to HOME's cache",
   repr(listing(kept, home_cache)))

# Without the folder: nothing changes.
cupy = load_fresh(fake_cupy(os.path.join(tmp, "b")))
os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
ok(owner_gpu.kept_kernels(cupy, os.path.join(tmp, "none")) is False
   and os.environ.get("CUPY_CACHE_IN_MEMORY") == "1",
   "without the kept folder: False, CUPY_CACHE_IN_MEMORY kept (every kernel in memory)")
comp = importlib.import_module("cupy.cuda.compiler")
r = comp.compile_with_cache("gen")
ok(r[0] == "compiled" and comp.CALLS and comp.CALLS[0]["cache_in_memory"] is True,
   "... and CuPy compiles in memory as before", repr(r))

# A CuPy without the cache backend API: nothing changes.
cupy = load_fresh(fake_cupy(os.path.join(tmp, "c"), api=False))
ok(owner_gpu.kept_kernels(cupy, kept) is False and os.environ.get("CUPY_CACHE_IN_MEMORY") == "1",
   "a CuPy without the cache backend API: False, nothing changed")
os.chmod(kept, 0o755)
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU, no CuPy): the raw CUDA kernels a Python run's owner builds
with CuPy compile with NVRTC, the compiler CuPy uses, and define the
entry points the owner looks up by name.

A timed sample's work in the owner (each call's fresh inputs, the poison,
the guards, the L2 flush, the embedding's check) is raw kernels, not CuPy
elementwise kernels, which wrote a GiB 4-5 times slower on an H200
(docs/log/2026-12-02-owner-kernels.md). Their source is Python strings:
a mistake in one shows only on a GPU, and in gen.py only as the slow
NumPy-style fallback. So each module is compiled here, as CuPy's RawModule
and RawKernel do (NVRTC, no headers, compute_90):

- gen.py's generators (gen.module_source: gen.cuh and a kernel a
  generator);
- owner_gpu.py's checks, fill and probe (CudaBackend.CHECK_SRC, PROBE_SRC);
- every lab.py's kernels (its module strings named *_SRC).
Prints TAP lines."""
import ctypes
import importlib.util
import os
import re
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "labs", "common", "py"))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

import gen  # noqa: E402
from owner_gpu import CudaBackend  # noqa: E402

NVRTC = "/usr/local/cuda/lib64/libnvrtc.so"


def compile_ptx(lib, src):
    """(status, log, ptx) of NVRTC on src for compute_90."""
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None)
    if r:
        return r, "nvrtcCreateProgram %d" % r, ""
    opts = (ctypes.c_char_p * 1)(b"--gpu-architecture=compute_90")
    r = lib.nvrtcCompileProgram(prog, 1, opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value + 1)
    lib.nvrtcGetProgramLog(prog, log)
    ptx = b""
    if r == 0:
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetPTX(prog, buf)
        ptx = buf.value
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return r, log.value.decode(errors="replace"), ptx.decode(errors="replace")


def check(lib, what, src, names):
    r, log, ptx = compile_ptx(lib, src)
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    missing = [n for n in names if n not in entries]
    ok(r == 0 and not missing, "%s: compiles with NVRTC, entries %s" % (what, ", ".join(names)),
       "status %d, missing %r, entries %r\n%s" % (r, missing, sorted(entries), log))


def lab_sources():
    """(lab, name, source) of every lab.py string named *_SRC."""
    labs = os.path.join(ROOT, "labs")
    for lab in sorted(os.listdir(labs)):
        path = os.path.join(labs, lab, "lab.py")
        if not os.path.isfile(path):
            continue
        spec = importlib.util.spec_from_file_location("lab_" + lab, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(vars(mod)):
            if name.endswith("_SRC") and isinstance(getattr(mod, name), str):
                yield lab, name, getattr(mod, name)


def main():
    try:
        lib = ctypes.CDLL(NVRTC)
    except OSError as e:   # CI's precondition: CUDA's compilers are there
        ok(False, "NVRTC loads from " + NVRTC, str(e))
        return
    check(lib, "gen.py's generators", gen.module_source(),
          ["cugrade_gen_" + g for g in sorted(gen._KERNELS)])
    check(lib, "owner_gpu.py CHECK_SRC", CudaBackend.CHECK_SRC,
          ["cugrade_ne32", "cugrade_ne64", "cugrade_ne_word", "cugrade_fill_word"])
    check(lib, "owner_gpu.py PROBE_SRC", CudaBackend.PROBE_SRC, ["cugrade_probe"])
    found = list(lab_sources())
    ok({"embedding", "reduction"} <= {lab for lab, _, _ in found},
       "the labs' raw kernels are found (embedding's check, reduction's sums)", repr(found))
    for lab, name, src in found:
        entries = re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)', src)
        ok(bool(entries), "%s lab.py %s: declares an extern \"C\" kernel" % (lab, name), src[:300])
        check(lib, "%s lab.py %s" % (lab, name), src, entries)


main()
sys.exit(1 if failures() else 0)

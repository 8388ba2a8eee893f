"""tenant.py - the student's side of a Python run (docs/python.md).

    python3 -I -B tenant.py /work/kernel.py SYMBOL SOCKET_FD
    compute-sanitizer ... python3 -I -B tenant.py --sanitize LAB CASE SEED /work/kernel.py [--gate]

Started by owner.py (the first form), or by the runner under
compute-sanitizer (--sanitize, below). It imports the student's module, then answers the
owner's messages: "load" (import, find the function), "call" (map the
buffers it was sent, call the function, wait for the GPU, answer). Nothing
here is trusted: from the moment the student's module is imported, that code
can change anything in this process, this file's functions included. That
is why this process holds nothing that scores: its answer only tells the
owner "look now", and the owner reads the outputs and the clock itself.

Before the student's code: the NumPy 2.x shim numba-cuda 0.30 needs
(np.row_stack was removed in NumPy 2.5; numba-cuda still names it at import).
"""
import importlib.util
import json
import mmap
import os
import re
import socket
import sys
import traceback

MAX_MSG = 1 << 16


def shim_numpy():
    try:
        import numpy as np
    except ImportError:
        return
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def where(e, path):
    """The traceback's frames in the student's file only, paths cut to the
    file's name: no host or sandbox paths in the feedback."""
    base = os.path.basename(path)
    lines = []
    for fr in traceback.extract_tb(e.__traceback__):
        if fr.filename == path:
            lines.append("%s line %d in %s: %s" % (base, fr.lineno, fr.name,
                                                     (fr.line or "").strip()))
    msg = "".join(traceback.format_exception_only(type(e), e)).strip()
    msg = msg.replace(os.path.dirname(path) + "/", "")
    return "; ".join(lines[-4:]) or base, clean(msg)


def clean(msg):
    """No terminal colours (Numba's messages have some) and no host path:
    any absolute path is cut to its file's name (Numba's messages name its
    own files, and CuPy's the cache's)."""
    import re
    msg = re.sub(r"\x1b\[[0-9;]*m", "", msg)
    return re.sub(r"(?<![\w.])/(?:[^\s\"'/:]+/)+([^\s\"'/:]+)", r"\1", msg)


def quiet_paths():
    """Warnings (Numba's NumbaPerformanceWarning names its own file under
    the Python root) printed without host paths or terminal colours: the
    student reads this process's stderr as feedback."""
    import warnings
    fmt = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        return clean(fmt(message, category, os.path.basename(filename), lineno, line))
    warnings.formatwarning = formatwarning


def is_a(e, mod, name):
    """e is an instance of a library's own type mod.name (only when the
    library is loaded: never imported here)."""
    m = sys.modules.get(mod)
    t = getattr(m, name, None) if m else None
    return t is not None and isinstance(e, t)


def is_compile_error(e):
    """A JIT compile error of Numba or CuPy, by the library's own types."""
    return is_a(e, "numba.core.errors", "NumbaError") or \
        is_a(e, "cupy.cuda.compiler", "CompileException")


def oom_request(e):
    """For an out-of-device-memory error of CuPy or Numba (by the
    libraries' own types, as is_compile_error): the bytes it asked for, 0
    when it does not say; None for any other exception. The owner decides
    whose it is (owner_tenant.py call_oom_whose)."""
    if is_a(e, "cupy.cuda.memory", "OutOfMemoryError"):
        n = re.search(r"allocating ([0-9,]+) bytes", str(e))
        return int(n.group(1).replace(",", "")) if n else 0
    # CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation are both 2.
    for mod, name, attr in (("numba.cuda.cudadrv.driver", "CudaAPIError", "code"),
                            ("cupy_backends.cuda.api.runtime", "CUDARuntimeError", "status"),
                            ("cupy_backends.cuda.api.driver", "CUDADriverError", "status")):
        if is_a(e, mod, name):
            try:
                if int(getattr(e, attr, -1)) == 2:
                    return 0
            except (TypeError, ValueError):
                pass
    return None


class _Iface:
    """A device pointer with __cuda_array_interface__ (version 3)."""

    def __init__(self, ptr, shape, dtype):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype.str,
                                         "data": (ptr, False), "version": 3, "strides": None}


class _Closer:
    def __init__(self, fn):
        self.fn = fn

    def close(self):
        self.fn()


class HostCopies:
    """The host-library policy's count (owner.py host_copy_refused): bytes
    of the call's input buffers that the student's code copied to the host,
    through Numba's copy_to_host (np.asarray of a device array uses it too)
    or cupy.asnumpy. The inputs' device address ranges are set per call.
    The student's code can undo these patches: a rule, not a fence."""

    def __init__(self):
        self.ranges, self.bytes, self.names = [], 0, set()

    def note(self, arr, nbytes):
        try:
            p = arr.__cuda_array_interface__["data"][0]
        except Exception:
            try:
                p = arr.__array_interface__["data"][0]
            except Exception:
                return
        for lo, hi, name in self.ranges:
            if lo <= p < hi:
                self.bytes += int(nbytes)
                self.names.add(name)

    def install(self, sim):
        hc = self

        def wrap(cls):
            orig = cls.copy_to_host

            def copy_to_host(self, *a, **k):
                hc.note(self, getattr(self, "nbytes", 0))
                return orig(self, *a, **k)
            cls.copy_to_host = copy_to_host
        try:
            if sim:
                from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
                wrap(FakeCUDAArray)
            else:
                from numba.cuda.cudadrv.devicearray import DeviceNDArrayBase
                wrap(DeviceNDArrayBase)
                import cupy
                orig = cupy.asnumpy

                def asnumpy(a, *x, **k):
                    hc.note(a, getattr(a, "nbytes", 0))
                    return orig(a, *x, **k)
                cupy.asnumpy = asnumpy
        except Exception:
            pass

    def watch(self, args, descs):
        self.ranges, self.bytes, self.names = [], 0, set()
        for a, d in zip(args, descs):
            if d.get("role") != "in":
                continue
            try:
                p = a.__cuda_array_interface__["data"][0]
            except Exception:
                try:
                    p = a._ary.__array_interface__["data"][0]   # the simulator's FakeCUDAArray
                except Exception:
                    continue
            self.ranges.append((p, p + max(int(a.nbytes), 1), d.get("name", "?")))


_VMM = None   # vmm.Vmm, made on the first shared buffer
_VMM_MODULE = []   # vmm.py, once loaded


def vmm_module():
    """vmm.py beside this file, by its path (-I keeps this folder off
    sys.path), loaded once."""
    if not _VMM_MODULE:
        spec = importlib.util.spec_from_file_location(
            "cugrade_vmm", os.path.join(os.path.dirname(os.path.abspath(__file__)), "vmm.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _VMM_MODULE.append(mod)
    return _VMM_MODULE[0]


class Buffers:
    """The owner's buffers as the student's device arrays."""

    def __init__(self):
        self.sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
        self.maps = []

    def array(self, d, fds):
        """The buffer d describes, as the student's array. Its descriptor
        (fds[d["fd_index"]]) stays open: the message's handler closes every
        descriptor it received, once, when the call is done."""
        import numpy as np
        count = 1
        for s in d["shape"]:
            count *= s
        if d["kind"] == "memfd":
            mm = mmap.mmap(fds[d["fd_index"]], d["size"])   # mmap holds its own copy
            self.maps.append(mm)
            host = np.frombuffer(mm, dtype=d["dtype"], count=count).reshape(d["shape"])
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            return FakeCUDAArray(host)
        return self._vmm(fds[d["fd_index"]], d, np)

    def _vmm(self, fd, d, np):
        """Map the owner's allocation (vmm.py) and hand it over as a Numba
        device array (it has __cuda_array_interface__: CuPy takes it with
        cupy.asarray)."""
        global _VMM
        from numba import cuda
        cuda.current_context()
        if _VMM is None:
            _VMM = vmm_module().Vmm()
        ptr, handle = _VMM.import_fd(fd, d["size"])
        size = d["size"]
        self.maps.append(_Closer(lambda: _VMM.release(ptr, handle, size)))
        return cuda.as_cuda_array(_Iface(ptr, tuple(d["shape"]), np.dtype(d["dtype"])))

    def close(self):
        for m in self.maps:
            try:
                m.close()
            except Exception:
                pass
        self.maps = []


# ---------------------------------------------------------------- --sanitize

POISON = 0x7FDEADED


def jit_default(name, value):
    """Make value the default of numba.cuda.jit's keyword name (numba-cuda
    0.30 has no setting for lineinfo, nor Numba for cache). A student's own
    keyword still wins. Returns True when set."""
    from numba import cuda
    jit = getattr(cuda, "jit", None)
    code = getattr(jit, "__code__", None)
    if code is None:
        return False
    names = code.co_varnames[:code.co_argcount]
    defaults = list(jit.__defaults__ or ())
    first = len(names) - len(defaults)
    if name in names and names.index(name) >= first:
        defaults[names.index(name) - first] = value
        jit.__defaults__ = tuple(defaults)
        return True
    kw = getattr(jit, "__kwdefaults__", None)
    if kw and name in kw:
        kw[name] = value
        return True
    return False


def lineinfo_default():
    """lineinfo=True the default of numba.cuda.jit (NUMBA_CUDA_DEBUGINFO
    turns on debug=True, which changes the code and warns unless
    opt=False), so that compute-sanitizer names the student's file and
    line. Line info only: the code is the same. Returns True when set."""
    return jit_default("lineinfo", True)


def jit_cache_default():
    """Numba's on-disk cache on by default for the student's kernels
    (docs/python.md, "Kernel caches"): cuda.jit's cache=True, in
    NUMBA_CACHE_DIR (main: HOME/.numba-cache, in the sandbox /work, the
    job's folder), as CuPy's kernel cache is. The timing run's tenant then
    loads what the check run's compiled instead of compiling it again after
    its gate, inside the GPU's exclusive hold. Only the student's own
    processes read it. A cache that cannot be made (a kernel defined by
    exec has no file to key it), read or written is no cache, never the
    student's error. Returns True when set."""
    import warnings
    try:
        from numba.cuda import dispatcher as nd
        disp, cache = nd.CUDADispatcher, nd.CUDACache
        enable = disp.enable_caching
        load, save = cache.load_overload, cache.save_overload
    except (ImportError, AttributeError):
        return False

    def enable_caching(self):
        try:
            enable(self)
        except Exception:  # noqa: BLE001 - no locator for its file: compiled, not cached
            pass

    def guarded(fn):
        def call(self, *a, **kw):
            try:
                return fn(self, *a, **kw)
            except Exception:  # noqa: BLE001 - a cache file we cannot use: a miss
                return None
        return call

    disp.enable_caching = enable_caching
    cache.load_overload, cache.save_overload = guarded(load), guarded(save)
    warnings.filterwarnings("ignore", message="Cannot cache compiled function")
    return jit_default("cache", True)


def sanitize_gate():
    """--gate: 'r' on fd 4, then wait for the runner's 'g'; fd 4 closed
    either way, before any of the student's code. No 'g' (the runner
    ended the run): exit 2, ours."""
    import owner_gate
    go = owner_gate.wait_go(4)
    os.close(4)
    if not go:
        sys.stderr.write("harness: the runner closed the sanitizer's gate\n")
        sys.exit(2)


def sanitize_inputs(np, gen, cuda, lab, params, cs):
    """The case's buffers as the call's arguments: its inputs from gen.py
    on case seed cs, its outputs poisoned, each this process's own
    allocation of the exact size (cuda.to_device)."""
    arrays = {}
    for name, dtype, shape, genname, k in lab["INPUTS"]:
        shp = tuple(shape(params))
        count = int(np.prod(shp))
        own = (lab.get("GEN") or {}).get(genname)
        host = gen.generate(np, genname, gen.stream(cs, k), 0, count, params, own)
        arrays[name] = cuda.to_device(np.ascontiguousarray(host.astype(dtype).reshape(shp)))
    for name, dtype, shape in lab["OUTPUTS"]:
        shp = tuple(shape(params))
        host = np.full(shp, POISON, dtype="uint32").view(dtype)
        arrays[name] = cuda.to_device(host)
    return [arrays[n] for n in lab["ARGS"]]


def sanitize(lab_name, case_name, seed_hex, path, gate=False):
    """One call of the student's function on one small case, in this process,
    for compute-sanitizer (the runner starts `compute-sanitizer ... python3
    tenant.py --sanitize ...` in the sandbox; docs/python.md, "Sanitizers").
    Nothing of this run scores but the sanitizer's own findings and exit
    status, so there is no owner and no IPC: the buffers are this process's
    own allocations (cuda.to_device, exact sizes, no guard), which memcheck
    knows the bounds of, as in the CUDA harness's --no-guard run. The seed is
    a throwaway one of the runner's, never the run's.

    fd 3 (the channel) gets one record, "start", once Numba and the CUDA
    context are up and before any of the student's code is imported, and is
    closed then: a run with no such record failed for a reason of ours (not
    charged); after it, a failure is the student's. Exit: 0 done, 1 the
    student's code raised (the message on stderr), 2 ours.

    gate (--gate, fd 4 a socket to the runner): the run was started before
    the job's turn on the GPU (sanitizer.c, the pre-start): the imports and
    the CUDA context come up here first, under the job's memory reservation;
    then we say 'r' and wait for 'g' before any GPU work and before any of
    the student's code; the gate is closed before the student's module is
    imported. A gate closed without 'g' is an exit 2 (ours, never a clean
    run: the runner ended the run it no longer wants).

    NumPy's BLAS runs on one thread here, as in the owner (owner_tenant.py
    one_blas_thread, before NumPy is first imported): nothing of this run
    is timed, and a multi-threaded OpenBLAS's threads spin when they start
    (a bare `import numpy` took 2.1-2.2 s of CPU in 0.32 s on the 16-core
    H200 host), in each of a Python job's two sanitizer runs, which run
    beside the check runs (docs/python.md, "Sanitizers")."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from owner_tenant import one_blas_thread
    one_blas_thread()
    shim_numpy()
    quiet_paths()
    try:
        import numpy as np
        import gen
        lab_dir = os.path.join(os.environ.get("CUGRADE_LABS", os.path.join(here, "..", "..")),
                               lab_name)
        with open(os.path.join(lab_dir, "lab.json")) as f:
            doc = json.load(f)
        lab = {}
        with open(os.path.join(lab_dir, "lab.py")) as f:
            exec(compile(f.read(), os.path.join(lab_dir, "lab.py"), "exec"), lab)
        params = {c["name"]: c["params"] for c in doc["cases"]}[case_name]
        from numba import cuda
        sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
        if not sim:
            cuda.current_context()
        lineinfo = lineinfo_default()
        if gate:
            sanitize_gate()
        args = sanitize_inputs(np, gen, cuda, lab, params,
                               gen.case_seed(gen.seed_parse_wide(seed_hex), case_name))
        symbol = lab["SYMBOL"]
        cuda.synchronize()
    except BaseException as e:  # noqa: B902 - before the student's code: ours
        sys.stderr.write("harness: the Python sanitizer run could not start: %s: %s\n"
                         % (type(e).__name__, e))
        sys.exit(2)
    os.write(3, (json.dumps({"type": "start", "lab": lab_name, "case": case_name,
                             "lineinfo": lineinfo}) + "\n").encode())
    os.close(3)
    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = mod
        spec.loader.exec_module(mod)
        fn = getattr(mod, symbol, None)
        if not callable(fn):
            raise AttributeError("your file defines no function %s(...)" % symbol)
        fn(*args)
        cuda.synchronize()
    except BaseException as e:  # noqa: B902 - the student's
        w, m = where(e, path)
        sys.stderr.write("your code raised %s (at %s)\n" % (m, w))
        sys.stderr.flush()
        os._exit(1)
    # os._exit, not a return: a thread of the student's that never ends
    # would hold sys.exit (and the sanitizer with it) to the run's limit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


WARM = []   # the start-up ops answered so far: jit_cache_default wraps Numba once


def runtime_op(op, sim, cuda, blocking=False):
    """The owner's questions before any of the student's code runs:
    "runtime" (this host's Numba, CuPy where it is installed, and the
    tenant's CUDA context come up: asked as the process starts, beside the
    owner's own start, and before a timing run's gate; the owner believes
    this one answer only, since nothing of the student's has run yet),
    "imports" (the same without the context: a warm check run of the
    runner's pool, owner.py --pool, before its job is known), "sync" (a
    round trip, owner.py round_trip). blocking (a check run's "runtime"):
    the context waits for the GPU asleep (vmm.py blocking_sync). Returns
    (answer, numba.cuda once imported, else the cuda given)."""
    try:
        from numba import cuda
        if op in ("imports", "runtime") and not sim:
            try:
                import cupy  # noqa: F401
            except ImportError:
                pass   # a host with Numba only: the student's import says so
            if op == "runtime":
                if blocking:
                    vmm_module().blocking_sync()
                cuda.current_context()
            if op == "imports" or not WARM:
                jit_cache_default()
            WARM.append(op)
        elif op == "sync":
            cuda.synchronize()
    except BaseException as e:  # noqa: B902
        return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}, cuda
    return {"ok": True}, cuda


def device_held(sim):
    """The owner's "held": the device memory this process holds between
    calls, in bytes. CuPy's pool and Numba's pending frees are handed back
    first (what they keep cached is not the student's to answer for), then
    the live arrays of both allocators are counted: the student's arrays,
    and nothing of the owner's (its buffers are mapped, not allocated here).
    0 in the simulator (no device memory). Memory the student's code takes
    past both allocators is not seen: the owner then calls the GPU full of
    other jobs' memory, a system_error that grades nothing (no gain)."""
    if sim:
        return 0
    held = 0
    cp = sys.modules.get("cupy")
    if cp is not None:
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        held += int(pool.used_bytes())
    nb = sys.modules.get("numba.cuda")
    if nb is not None:
        ctx = nb.current_context()
        ctx.deallocations.clear()
        held += sum(int(getattr(m, "size", 0)) for m in list(ctx.memory_manager.allocations.values())
                    if type(m).__name__ in ("AutoFreePointer", "ManagedMemory"))
    return held


def map_set(mapped, set_id, desc, fds):
    """The owner's buffer set set_id (its description, its descriptors
    among fds) as the student's arrays in mapped, unless it is there."""
    if set_id not in mapped:
        b = Buffers()
        mapped[set_id] = (b, [b.array(x, fds) for x in desc], desc)


def close_fds(fds):
    """Every descriptor a message brought, once: the handler is done."""
    for f in fds:
        try:
            os.close(f)
        except OSError:
            pass


def main():
    if len(sys.argv) in (6, 7) and sys.argv[1] == "--sanitize":
        if len(sys.argv) == 7 and sys.argv[6] != "--gate":
            sys.stderr.write("harness: tenant.py --sanitize: unknown option %r\n" % sys.argv[6])
            sys.exit(2)
        sanitize(*sys.argv[2:6], gate=len(sys.argv) == 7)
        return
    path, symbol, fd = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sock = socket.socket(fileno=fd)
    # Numba reads it once, at its import (runtime_op): the student's
    # kernels' cache (jit_cache_default), in the job's folder.
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(
        os.environ.get("HOME") or os.path.dirname(os.path.abspath(path)), ".numba-cache"))
    shim_numpy()
    quiet_paths()
    fn = None
    bufs = Buffers()
    host = HostCopies()
    cuda = None
    args, cur_id, mapped = [], None, {}   # mapped: set id -> (Buffers, arrays, descriptions)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 253)   # SCM_MAX_FD
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        ans = {"ok": True}
        if msg["op"] in ("imports", "runtime", "sync"):
            ans, cuda = runtime_op(msg["op"], bufs.sim, cuda, bool(msg.get("blocking")))
        elif msg["op"] == "load":
            path = msg.get("path") or path
            try:
                host.install(bufs.sim)
                spec = importlib.util.spec_from_file_location("submission", path)
                mod = importlib.util.module_from_spec(spec)
                sys.modules["submission"] = mod
                spec.loader.exec_module(mod)
                fn = getattr(mod, symbol, None)
                if not callable(fn):
                    ans = {"ok": False, "error": "your file defines no function %s(...)" % symbol,
                           "where": "define it at the top level of your file, as in starter.py"}
                from numba import cuda
            except BaseException as e:  # noqa: B902 - everything is the student's
                w, m = where(e, path)
                ans = {"ok": False, "error": m, "where": w}
        elif msg["op"] == "held":
            try:
                ans = {"ok": True, "held": device_held(bufs.sim)}
            except BaseException as e:  # noqa: B902 - the student's module may have broken it
                ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        elif msg["op"] == "map":
            # A timed batch's new sets (owner.py Timed.map_new), mapped and
            # kept beside those already mapped; the next call names them.
            try:
                for i, d in msg["sets"]:
                    map_set(mapped, i, d, fds)
            except BaseException as e:  # noqa: B902 - the student's module may have broken it
                w, m = where(e, path)
                ans = {"ok": False, "error": m, "where": w}
            finally:
                close_fds(fds)
        elif msg["op"] == "call":
            try:
                # The same buffers as the last call (the timing loop): keep
                # their mappings, so that opening them is never timed.
                # A set's mappings are kept while the owner names it (the
                # timing batch's first set is the warm-up's), and closed
                # once it does not: the owner has freed those buffers.
                # A timed batch names sets the owner sent in "map"
                # messages before it: by id only.
                ids = msg.get("set_ids") or [msg.get("buffers_id")]
                if ids != cur_id:
                    for i in [i for i in mapped if i not in ids]:
                        mapped.pop(i)[0].close()
                    if "args" in msg:   # one set, described in the call itself
                        map_set(mapped, ids[0], msg["args"], fds)
                    args = [mapped[i][1] for i in ids]
                    cur_id = ids
                    host.watch([x for a in args for x in a], [x for i in ids for x in mapped[i][2]])
                host.bytes, host.names = 0, set()
                # A timed batch (owner.py run_time): one call per set of
                # buffers, then one wait for the GPU.
                for a in args:
                    fn(*a)
                cuda.synchronize()
                if host.bytes:
                    ans.update({"host_copy": host.bytes, "host_copy_from": ",".join(sorted(host.names))})
            except BaseException as e:  # noqa: B902
                w, m = where(e, path)
                ans = {"ok": False, "error": m, "where": w, "compile": is_compile_error(e)}
                oom = oom_request(e)
                if oom is not None:
                    ans["oom"] = oom
            finally:
                close_fds(fds)
        sock.send(json.dumps(ans).encode()[:MAX_MSG])


if __name__ == "__main__":
    main()

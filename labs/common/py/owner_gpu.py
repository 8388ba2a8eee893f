"""The owner's two GPU backends (owner.py backend() picks one): Numba's
CUDA simulator in CI and CuPy on a GPU. Each allocates the buffers the
tenant shares (memfd pages, or CUDA virtual memory exported as a
descriptor: vmm.py), views them as arrays, flushes the L2, reads the probe
spots that stop a timed sample's clock (Probe, at the end: which spots),
and writes the device record.
Trusted, like owner.py: started beside it from labs/common/py, shipped with
it in the student's bundle (labs/bundle.json)."""
import importlib
import mmap
import os

PROBES = 64   # output elements read to stop a sample's clock, over the batch
# The lab's CuPy kernels the runner kept at prepare (runner/grade/python.c,
# python_cupy_warm: our code and the lab's only), bound read-only here.
KEPT = "/lab/cupy-kernels"


def kept_kernels(cupy, kept=KEPT):
    """The owner's CuPy kernel cache: the kept kernels, read-only, then
    memory. A kernel found in `kept` (a cubin whose hash prefix holds) is
    loaded, not compiled; any other is compiled in memory (no source file
    in a temporary folder the tenant could reach, as CUPY_CACHE_IN_MEMORY)
    and kept in memory for this process. Nothing is ever written to disk:
    the tenant, the same uid, can write every folder the owner can.
    Through CuPy's cache backend (cupy.cuda.compiler, 14.2's private API).
    Returns True when set; False (CUPY_CACHE_IN_MEMORY as before: every
    kernel compiled in memory) without the folder or that API."""
    try:
        comp = importlib.import_module("cupy.cuda.compiler")
        disk = importlib.import_module("cupy.cuda._compiler_cache").DiskKernelCacheBackend
        set_backend, nvrtc = comp._set_kernel_cache_backend, comp._compile_using_nvrtc_no_warning
    except (ImportError, AttributeError):
        return False
    if not os.path.isdir(kept):
        return False

    class Kept(disk):
        def __init__(self):
            super().__init__(kept)
            self.mem = {}

        def load(self, name):
            if name in self.mem:
                return self.mem[name]
            try:
                return super().load(name)
            except OSError:
                return None

        def save(self, name, cubin, source):
            self.mem[name] = cubin

    def in_memory(source, options=(), arch=None, filename="kern.cu", *args, **kw):
        # _compile_with_cache_cuda's compile when its cache is on "disk"
        # (ours): NVRTC from memory, as CUPY_CACHE_IN_MEMORY does (a file
        # name "" and cache_in_memory True, its 7th argument).
        if len(args) >= 3:
            args = args[:2] + (True,) + args[3:]
        else:
            kw["cache_in_memory"] = True
        return nvrtc(source, options, arch, "", *args, **kw)

    set_backend(Kept())
    comp._compile_using_nvrtc_no_warning = in_memory
    os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
    return True


class SimBackend:
    """Numba's CUDA simulator (CI, no GPU): "device" buffers are memfd pages
    shared with the tenant; NumPy does the owner's work."""
    name = "sim"
    oom = ()   # host memory: what runs out is the run's, as before (owner.py new_case)

    def __init__(self):
        import numpy
        self.xp = numpy
        self.np = numpy

    def device_record(self):
        return {"type": "device", "name": "Numba CUDA simulator", "cc": "0.0", "sms": 0,
                "copy_gbs": 0.0, "peak_fp32_gflops": 0, "clock_mhz": 0, "l2_bytes": 0,
                "mem_bytes": 0, "runtime": 0, "driver": 0}

    def alloc(self, nbytes):
        fd = os.memfd_create("cugrade-buf", os.MFD_CLOEXEC)
        size = max(nbytes, 1)
        os.ftruncate(fd, size)
        mm = mmap.mmap(fd, size)
        return {"fd": fd, "mm": mm, "bytes": nbytes, "size": size}

    def view(self, buf, dtype, count, offset=0):
        return self.np.frombuffer(buf["mm"], dtype=dtype, count=count, offset=offset)

    def free(self, buf):
        os.close(buf["fd"])
        try:
            buf["mm"].close()
        except BufferError:   # a view of ours still exists: the GC unmaps it
            pass

    def export(self, buf):
        return {"kind": "memfd", "size": buf["size"]}, [buf["fd"]]

    def to_host(self, arr):
        return self.np.array(arr, copy=True)

    def sync(self):
        pass

    def flush_l2(self):
        pass

    def spare_bytes(self):
        return 1 << 62

    def free_bytes(self):
        return 1 << 62

    def count_ne(self, a, b):
        """How many elements of a and b (same dtype and size) differ, bit
        for bit (a NaN equals the same NaN)."""
        w = {4: "uint32", 8: "uint64"}.get(a.dtype.itemsize)
        return int((a.view(w) != b.view(w)).sum()) if w else int((a != b).sum())

    def count_ne_word(self, a, word):
        """How many 32-bit words of a (a uint32 view) are not word."""
        return int((a != self.np.uint32(word)).sum())

    def fill_word(self, a, word, sync=True):
        """Every 32-bit word of a (a uint32 view) set to word."""
        a[:] = self.np.uint32(word)

    def probe_plan(self, spots):
        """spots: (buf, byte offsets) pairs. What probe_read reads."""
        np = self.np
        return [(np.frombuffer(b["mm"], dtype="uint8"), offs) for b, offs in spots]

    def probe_read(self, plan):
        """The planned bytes, now, as one bytes object."""
        return b"".join(v[offs].tobytes() for v, offs in plan)


class CudaBackend:
    """A GPU, through CuPy. Shared buffers are allocations of their own
    (never the memory pool's: the tenant maps a whole allocation, and a pool
    chunk would carry our other arrays with it) made and exported with
    CUDA's virtual memory management (vmm.py says why not legacy IPC: a
    freed buffer the tenant still mapped came back as our next
    allocation). Kernel cache: the lab's kept kernels read-only, then
    memory (kept_kernels); never a cache on disk in /work, which the tenant
    can write (a poisoned cached kernel)."""
    name = "cuda"

    def __init__(self, cache_in_memory=True, blocking=False):
        import vmm
        # Before CuPy makes the context: a check run's waits asleep.
        self.sync_mode = "blocking" if blocking and vmm.blocking_sync() else "auto"
        if cache_in_memory:
            os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
        else:   # owner.py warm: our kernels and the lab's, for the runner to keep
            os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
        import numpy
        import cupy
        self.np, self.xp, self.cp = numpy, cupy, cupy
        if cache_in_memory:
            kept_kernels(cupy)
        self.oom = cupy.cuda.memory.OutOfMemoryError   # alloc's, owner.py new_case
        cupy.cuda.Device(0).use()
        l2 = int(cupy.cuda.runtime.getDeviceProperties(0).get("l2CacheSize", 0))
        # Evicting the inputs before a sample, as the CUDA harness does.
        self.flush = cupy.empty(max(2 * l2, 64 << 20) // 4, dtype=cupy.uint32)
        self.round = 0

    def device_record(self):
        rt = self.cp.cuda.runtime
        p = rt.getDeviceProperties(0)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        return {"type": "device", "name": name, "cc": "%d.%d" % (p["major"], p["minor"]),
                "sms": p["multiProcessorCount"], "copy_gbs": 0.0, "peak_fp32_gflops": 0,
                "clock_mhz": p.get("clockRate", 0) // 1000, "l2_bytes": p.get("l2CacheSize", 0),
                "mem_bytes": p["totalGlobalMem"], "runtime": rt.runtimeGetVersion(),
                "driver": rt.driverGetVersion(), "sync": self.sync_mode}

    def alloc(self, nbytes):
        if not hasattr(self, "vmm"):
            import vmm
            self.vmm = vmm.Vmm()
        size = self.vmm.round(max(nbytes, 4))
        try:
            ptr, handle = self.vmm.alloc(size)
        except Exception as e:   # as CuPy says it, for the callers' out-of-memory paths
            raise self.cp.cuda.memory.OutOfMemoryError(size, 0, 0) from e
        return {"ptr": ptr, "handle": handle, "bytes": nbytes, "size": size, "fd": None}

    def view(self, buf, dtype, count, offset=0):
        cp = self.cp
        mem = cp.cuda.UnownedMemory(buf["ptr"], buf["size"], None)
        return cp.ndarray((count,), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, offset))

    def free(self, buf):
        # Our kernels on it must be done before the mapping goes.
        self.sync()
        if buf["fd"] is not None:
            os.close(buf["fd"])
        self.vmm.release(buf["ptr"], buf["handle"], buf["size"])

    def export(self, buf):
        """The descriptor is exported once per buffer and kept until free:
        every message that names the buffer carries a copy (SCM_RIGHTS)."""
        if buf["fd"] is None:
            buf["fd"] = self.vmm.export(buf["handle"])
        return {"kind": "vmm", "size": buf["size"]}, [buf["fd"]]

    def to_host(self, arr):
        return self.cp.asnumpy(arr)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def flush_l2(self):
        self.round += 1
        self.fill_word(self.flush, self.round & 0xFF)

    def spare_bytes(self):
        return int(self.cp.cuda.runtime.memGetInfo()[0]) // 2

    def free_bytes(self):
        """The GPU's free memory now (owner_tenant.py call_oom_whose)."""
        return int(self.cp.cuda.runtime.memGetInfo()[0])

    # The owner's own checks after every case (inputs modified, guards) as
    # grid-stride kernels in one module: CuPy's "!=" and ".sum()" would
    # compile a reduction per size class in every run (its cache is in
    # memory only here: seen on an H200, 3.2 s for case 1 and 3.0 s more
    # for case 1000 of the reduction lab, every check run). The poison,
    # the guards and the L2 flush are a kernel of it too: CuPy's fill, an
    # elementwise kernel, wrote 4-5 times slower on an H200 (0.33 ms for
    # an embedding output, every timed call; gen.py says more).
    CHECK_SRC = r"""
    template <typename T>
    __device__ void count_ne(const T *a, const T *b, unsigned long long n, unsigned long long *bad) {
        unsigned long long k = 0;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (unsigned long long)gridDim.x * blockDim.x)
            k += a[i] != b[i];
        if (k) atomicAdd(bad, k);
    }
    extern "C" __global__ void cugrade_ne32(const unsigned *a, const unsigned *b, unsigned long long n,
                                            unsigned long long *bad) { count_ne(a, b, n, bad); }
    extern "C" __global__ void cugrade_ne64(const unsigned long long *a, const unsigned long long *b,
                                            unsigned long long n, unsigned long long *bad) {
        count_ne(a, b, n, bad);
    }
    extern "C" __global__ void cugrade_ne_word(const unsigned *a, unsigned w, unsigned long long n,
                                               unsigned long long *bad) {
        unsigned long long k = 0;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (unsigned long long)gridDim.x * blockDim.x)
            k += a[i] != w;
        if (k) atomicAdd(bad, k);
    }
    extern "C" __global__ void cugrade_fill_word(unsigned *a, unsigned w, unsigned long long n) {
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (unsigned long long)gridDim.x * blockDim.x)
            a[i] = w;
    }"""

    def _module(self):
        if not hasattr(self, "check_mod"):
            self.check_mod = self.cp.RawModule(code=self.CHECK_SRC)
        return self.check_mod

    def _launch(self, name, n, args):
        """Kernel name of the module over n elements (n > 0), grid-stride,
        in gen.py's geometry (gen.blocks)."""
        import gen
        self._module().get_function(name)((gen.blocks(n),), (gen.BLOCK,), args)

    def _check(self, name, args, n):
        bad = self.cp.zeros(1, dtype=self.cp.uint64)
        if n:
            self._launch(name, n, args + (self.np.uint64(n), bad))
        return int(bad.get()[0])

    def count_ne(self, a, b):
        """How many elements of a and b (same dtype and size, contiguous)
        differ, bit for bit (a NaN equals the same NaN)."""
        assert a.dtype == b.dtype and a.size == b.size
        size = a.dtype.itemsize
        if size not in (4, 8) or not (a.flags.c_contiguous and b.flags.c_contiguous):
            return int((a != b).sum())
        w = "uint32" if size == 4 else "uint64"
        return self._check("cugrade_ne32" if size == 4 else "cugrade_ne64",
                           (a.view(w), b.view(w)), a.size)

    def count_ne_word(self, a, word):
        """How many 32-bit words of a (a contiguous uint32 view) are not word."""
        return self._check("cugrade_ne_word", (a, self.np.uint32(word)), a.size)

    def fill_word(self, a, word, sync=True):
        """Every 32-bit word of a (a contiguous uint32 view) set to word;
        then waits for the GPU unless told not to."""
        assert a.dtype == self.np.uint32 and a.flags.c_contiguous
        if a.size:
            n = self.np.uint64(a.size)
            self._launch("cugrade_fill_word", a.size, (a, self.np.uint32(word), n))
        if sync:
            self.sync()

    PROBE_SRC = r"""
    extern "C" __global__ void cugrade_probe(const unsigned long long *a, unsigned char *o,
                                             long long n) {
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) o[i] = *(const volatile unsigned char *)a[i];
    }"""

    def probe_plan(self, spots):
        """spots: (buf, byte offsets) pairs. The bytes' addresses, on the
        device in our own memory (not an exported buffer: the tenant's
        context cannot see it), and where they are read to: one kernel and
        one copy whatever the batch (probe_read)."""
        cp, np = self.cp, self.np
        if not hasattr(self, "probe_kernel"):
            self.probe_kernel = cp.RawKernel(self.PROBE_SRC, "cugrade_probe")
        addrs = np.concatenate([np.uint64(b["ptr"]) + offs.astype("uint64") for b, offs in spots])
        return cp.asarray(addrs), cp.empty(addrs.size, dtype=cp.uint8)

    def probe_read(self, plan):
        """The planned bytes, read in our context now (our read waits for
        nothing of the tenant's: what is not written yet is the poison)."""
        addrs, out = plan
        n = addrs.size
        self.probe_kernel(((n + 255) // 256,), (256,), (addrs, out, self.np.int64(n)))
        return self.cp.asnumpy(out).tobytes()


class Probe:
    """What stops a sample's clock: PROBES output elements spread over the
    batch's cases (every element of an output that has fewer), at positions
    drawn from os.urandom before the call and kept in our memory and our
    own device allocation, which the tenant's process cannot read. read()
    copies them to the host in our context, in one kernel and one copy: it
    waits for the GPU or finds the poison. Every output is checked whole
    after the clock, and same() says whether the probed bytes still hold
    what the clock's read saw (nothing was still being written)."""

    def __init__(self, be, cases):
        np = be.np
        outs = [(c, m) for c in cases for m in c.outs()]
        per = max(2, PROBES // len(outs))
        spots = []
        for c, m in outs:
            n, size = m["count"], m["itemsize"]
            pos = np.arange(n, dtype="uint64") if n <= per else \
                np.frombuffer(os.urandom(8 * per), dtype="uint64") % np.uint64(n)
            offs = (pos[:, None] * np.uint64(size) + np.arange(size, dtype="uint64")).ravel()
            spots.append((c.bufs[m["name"]], offs))
        self.be, self.plan = be, be.probe_plan(spots)

    def read(self):
        return self.be.probe_read(self.plan)

    def same(self, seen):
        return self.read() == seen

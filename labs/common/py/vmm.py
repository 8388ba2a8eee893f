"""vmm.py - the owner's shared device buffers through CUDA's virtual memory
management (driver API, by ctypes), for the owner (owner.py CudaBackend) and
the tenant (tenant.py Buffers).

Why not cudaIpcGetMemHandle: a legacy IPC mapping does not keep the memory
alive. Once the owner frees a buffer, the driver may give the same memory to
the owner's next allocation while the tenant still maps it: seen on an H200
(tests/gpu/solutions-py/reduction/hostile_stale_ipc.py, a tenant that never
closes its mappings, saw a freed d_out change in call 33 of a timing run).
The tenant could then read or write what the owner keeps there next: the
probe's addresses, the next sample's inputs before the clock starts.

Here a buffer is a physical allocation (cuMemCreate) mapped into the owner's
address space and exported as a file descriptor; the tenant imports the
descriptor and maps the same allocation. The allocation lives while any
handle or mapping of it does: when the owner releases its own, memory the
tenant still maps stays the tenant's, unchanged, and is never the owner's
again (a tenant that hoards mappings only runs itself out of memory).
"""
import ctypes

_PINNED, _POSIX_FD, _DEVICE, _READWRITE, _GRAN_MIN = 1, 1, 1, 3, 0


class _Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Flags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Loc), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _Flags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Loc), ("flags", ctypes.c_int)]


_U64, _SZ, _P = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.POINTER


class VmmError(RuntimeError):
    pass


_BLOCKING_SYNC = 4   # CU_CTX_SCHED_BLOCKING_SYNC


def blocking_sync():
    """Before this process's first CUDA context: the device's primary
    context (CuPy's and Numba's both) waits for the GPU asleep on a
    blocking sync instead of spinning on a core. A process with one context
    on a host of many cores spins by default (CU_CTX_SCHED_AUTO); in a burst
    every check run's owner and tenant then burn a core for each wait on a
    GPU that other jobs' contexts share (tests/bench/sync_probe.sh). Check
    runs only: a timing run holds the GPU alone and waits as the baselines'
    runs do; a sanitizer run with it came back dirty (docs/python.md,
    "Waiting for the GPU"). Returns True when
    the flag is set; False without a driver (the simulator) or when the
    driver refuses (the default then stands)."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    dev = ctypes.c_int()
    if cu.cuInit(0) != 0 or cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return False
    setf = getattr(cu, "cuDevicePrimaryCtxSetFlags_v2", None) or cu.cuDevicePrimaryCtxSetFlags
    return setf(dev, ctypes.c_uint(_BLOCKING_SYNC)) == 0


class Vmm:
    """Allocate, export, import and release shareable device memory on the
    current context's device. Needs a current CUDA context (CuPy's or
    Numba's: both use the device's primary context)."""

    def __init__(self):
        cu = ctypes.CDLL("libcuda.so.1")
        sig = {
            "cuCtxGetDevice": [_P(ctypes.c_int)],
            "cuMemGetAllocationGranularity": [_P(_SZ), _P(_Prop), ctypes.c_int],
            "cuMemCreate": [_P(_U64), _SZ, _P(_Prop), _U64],
            "cuMemAddressReserve": [_P(_U64), _SZ, _SZ, _U64, _U64],
            "cuMemMap": [_U64, _SZ, _SZ, _U64, _U64],
            "cuMemSetAccess": [_U64, _SZ, _P(_Access), _SZ],
            "cuMemUnmap": [_U64, _SZ],
            "cuMemAddressFree": [_U64, _SZ],
            "cuMemRelease": [_U64],
            "cuMemExportToShareableHandle": [_P(ctypes.c_int), _U64, ctypes.c_int, _U64],
            "cuMemImportFromShareableHandle": [_P(_U64), ctypes.c_void_p, ctypes.c_int],
        }
        self.f = {}
        for name, args in sig.items():
            fn = getattr(cu, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
            self.f[name] = fn
        dev = ctypes.c_int()
        self._ok("cuCtxGetDevice", ctypes.byref(dev))
        self.prop = _Prop(_PINNED, _POSIX_FD, _Loc(_DEVICE, dev.value), None, _Flags())
        self.access = _Access(_Loc(_DEVICE, dev.value), _READWRITE)
        g = _SZ()
        self._ok("cuMemGetAllocationGranularity", ctypes.byref(g), ctypes.byref(self.prop), _GRAN_MIN)
        self.gran = max(int(g.value), 1)

    def _ok(self, name, *args):
        r = self.f[name](*args)
        if r != 0:
            raise VmmError("%s failed (CUresult %d)" % (name, r))

    def round(self, nbytes):
        """nbytes rounded up to the allocation granularity (2 MiB on the GPUs
        seen): the size every call below takes."""
        return max(-(-nbytes // self.gran) * self.gran, self.gran)

    def _map(self, handle, size):
        ptr = _U64()
        self._ok("cuMemAddressReserve", ctypes.byref(ptr), size, 0, 0, 0)
        try:
            self._ok("cuMemMap", ptr.value, size, 0, handle, 0)
        except VmmError:
            self.f["cuMemAddressFree"](ptr.value, size)
            raise
        try:
            self._ok("cuMemSetAccess", ptr.value, size, ctypes.byref(self.access), 1)
        except VmmError:
            self.f["cuMemUnmap"](ptr.value, size)
            self.f["cuMemAddressFree"](ptr.value, size)
            raise
        return ptr.value

    def alloc(self, size):
        """(device pointer, allocation handle) of a new allocation of size
        bytes (already rounded), mapped read-write here."""
        h = _U64()
        self._ok("cuMemCreate", ctypes.byref(h), size, ctypes.byref(self.prop), 0)
        try:
            return self._map(h.value, size), h.value
        except VmmError:
            self.f["cuMemRelease"](h.value)
            raise

    def export(self, handle):
        """A new file descriptor for the allocation (the caller closes it)."""
        fd = ctypes.c_int(-1)
        self._ok("cuMemExportToShareableHandle", ctypes.byref(fd), handle, _POSIX_FD, 0)
        return fd.value

    def import_fd(self, fd, size):
        """(device pointer, handle) of the allocation behind fd (another
        process's export), mapped read-write here. fd stays the caller's:
        the allocation holds on without it."""
        h = _U64()
        self._ok("cuMemImportFromShareableHandle", ctypes.byref(h), ctypes.c_void_p(fd), _POSIX_FD)
        try:
            return self._map(h.value, size), h.value
        except VmmError:
            self.f["cuMemRelease"](h.value)
            raise

    def release(self, ptr, handle, size):
        """Unmap and release this process's hold on the allocation (the
        memory itself goes when no process holds it)."""
        self.f["cuMemUnmap"](ptr, size)
        self.f["cuMemAddressFree"](ptr, size)
        self.f["cuMemRelease"](handle)

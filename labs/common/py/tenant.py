"""tenant.py - the student's side of a Python run (docs/python.md).

    python3 -I -B tenant.py /work/kernel.py SYMBOL SOCKET_FD

Started by owner.py. It imports the student's module, then answers the
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
    return "; ".join(lines[-4:]) or base, msg


def is_compile_error(e):
    """A JIT compile error of Numba or CuPy, by the library's own types."""
    for mod, name in (("numba.core.errors", "NumbaError"),
                      ("cupy.cuda.compiler", "CompileException")):
        m = sys.modules.get(mod)
        t = getattr(m, name, None) if m else None
        if t is not None and isinstance(e, t):
            return True
    return False


class _Iface:
    """A device pointer with __cuda_array_interface__ (version 3)."""

    def __init__(self, ptr, shape, dtype):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype.str,
                                         "data": (ptr, False), "version": 3, "strides": None}


class _Exit:
    def __init__(self, cm):
        self.cm = cm

    def close(self):
        self.cm.__exit__(None, None, None)


class _Closer:
    def __init__(self, fn):
        self.fn = fn

    def close(self):
        self.fn()


class Buffers:
    """The owner's buffers as the student's device arrays."""

    def __init__(self):
        self.sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
        self.maps = []

    def array(self, d, fds):
        import numpy as np
        count = 1
        for s in d["shape"]:
            count *= s
        if d["kind"] == "memfd":
            fd = fds[d["fd_index"]]
            mm = mmap.mmap(fd, d["size"])
            os.close(fd)
            self.maps.append(mm)
            host = np.frombuffer(mm, dtype=d["dtype"], count=count).reshape(d["shape"])
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            return FakeCUDAArray(host)
        return self._ipc(bytes.fromhex(d["handle"]), d, np)

    def _ipc(self, h, d, np):
        """Open the owner's allocation (CUDA IPC) and hand it over as a Numba
        device array (it has __cuda_array_interface__: CuPy takes it with
        cupy.asarray). Numba's own opener first, CuPy's if that fails."""
        from numba import cuda
        shape, dtype = tuple(d["shape"]), np.dtype(d["dtype"])
        try:
            cm = cuda.open_ipc_array(h, shape=shape, dtype=dtype)
            arr = cm.__enter__()
            self.maps.append(_Exit(cm))
            return arr
        except Exception:
            import cupy
            ptr = cupy.cuda.runtime.ipcOpenMemHandle(h)
            self.maps.append(_Closer(lambda: cupy.cuda.runtime.ipcCloseMemHandle(ptr)))
            return cuda.as_cuda_array(_Iface(ptr, shape, dtype))

    def close(self):
        for m in self.maps:
            try:
                m.close()
            except Exception:
                pass
        self.maps = []


def main():
    path, symbol, fd = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sock = socket.socket(fileno=fd)
    shim_numpy()
    fn = None
    bufs = Buffers()
    cuda = None
    args, cur_id = [], None
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 16)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        ans = {"ok": True}
        if msg["op"] == "runtime":
            # Before any of the student's code: whether this host's Numba
            # (and its CUDA context) comes up. The owner believes this one
            # answer only, since nothing of the student's has run yet.
            try:
                from numba import cuda
                if not bufs.sim:
                    cuda.current_context()
            except BaseException as e:  # noqa: B902
                ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        elif msg["op"] == "load":
            try:
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
        elif msg["op"] == "call":
            try:
                # The same buffers as the last call (the timing loop): keep
                # their mappings, so that opening them is never timed.
                if msg.get("buffers_id") != cur_id:
                    bufs.close()
                    args, cur_id = [bufs.array(d, fds) for d in msg["args"]], msg.get("buffers_id")
                fn(*args)
                cuda.synchronize()
            except BaseException as e:  # noqa: B902
                w, m = where(e, path)
                ans = {"ok": False, "error": m, "where": w, "compile": is_compile_error(e)}
            finally:
                for f in fds:
                    try:
                        os.close(f)
                    except OSError:
                        pass
        sock.send(json.dumps(ans).encode()[:MAX_MSG])


if __name__ == "__main__":
    main()

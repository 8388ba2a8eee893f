# expect: status=graded correctness=fail note="hostile: walks gc.get_objects() and every thread's frames for the harness's state -- the seed, a case seed, a reference or expected value, the owner's Case/backend objects, its gen module -- and computes the right sum only if it finds any (a broken fence shows as correctness=pass); finding none, it rewrites what it can reach (every device and host float32 array, the tenant's message dicts, __main__'s helpers, json.dumps of its answer) and returns a wrong sum"
import gc
import json
import os
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

SECRET_NAMES = ("seed", "seed2", "cs", "case_seed", "ref", "reference", "expected")
SECRET_KEYS = ("CUGRADE_SEED", "case_seed", "seed2")
OWNER_TYPES = ("Case", "CudaBackend", "SimBackend", "Tenant")


def secrets():
    found = []
    if any(k.startswith("CUGRADE_") for k in os.environ):
        found.append("environment: " + ",".join(k for k in os.environ if k.startswith("CUGRADE_")))
    if "gen" in sys.modules or "owner" in sys.modules:
        found.append("the owner's modules")
    for o in gc.get_objects():
        t = type(o).__name__
        if t in OWNER_TYPES:
            found.append("object " + t)
        elif isinstance(o, dict):
            for k in SECRET_KEYS:
                try:
                    v = o.get(k)
                except Exception:  # noqa: BLE001
                    continue
                if isinstance(v, (int, str)) and not isinstance(v, bool):
                    found.append("dict key %s" % k)
    for tid, f in sys._current_frames().items():
        while f is not None:
            if f.f_code.co_filename != __file__:
                for k in SECRET_NAMES:
                    if k in f.f_locals and isinstance(f.f_locals[k], (int, tuple)):
                        found.append("frame %s local %s" % (f.f_code.co_name, k))
            f = f.f_back
    return found


def vandalize(d_in, d_out):
    hits = {"device": 0, "host": 0, "dicts": 0}
    for o in gc.get_objects():
        try:
            if hasattr(o, "__cuda_array_interface__") and getattr(o, "dtype", None) == np.float32 \
                    and o is not d_out and getattr(o, "size", 1 << 30) <= (1 << 20):
                cuda.as_cuda_array(o)[...] = 7.0
                hits["device"] += 1
            elif isinstance(o, np.ndarray) and o.dtype == np.float32 and o.flags.writeable:
                o[...] = 7.0
                hits["host"] += 1
            elif isinstance(o, dict) and "op" in o:
                o["op"] = "none"
                o["buffers_id"] = -1
                hits["dicts"] += 1
        except Exception:  # noqa: BLE001
            pass
    main = sys.modules.get("__main__")
    for name in ("where", "clean", "is_compile_error"):
        if hasattr(main, name):
            setattr(main, name, lambda *a, **k: ("", ""))
    real = json.dumps
    json.dumps = lambda obj, *a, **k: real(dict(obj, ok=True, forged=1) if isinstance(obj, dict) else obj)
    return hits


def reduce_sum(d_in, d_out):
    found = secrets()
    if found:
        print("FOUND the harness's state:", found[:10], flush=True)
        honest(d_in, d_out)
        return
    # A wrong answer; the case's message says what the walk did.
    raise RuntimeError("nothing of the owner here; rewrote %s" % vandalize(d_in, d_out))

# expect: status=graded correctness=pass tier=none flagged=no note="hostile: right answers, each call slowed by 100 ms, with every timer of its process patched to say 0 (time.perf_counter/monotonic/time/_ns, Numba's cuda.event and event_elapsed_time, CuPy's Event and get_elapsed_time) and the tenant's own functions (__main__'s helpers, json.dumps of its answer) replaced: the samples are the owner's clock in another process (~100 ms: no tier); a believed patch would show as a tier"
import json
import sys
import time

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

_sleep = time.sleep


class _Ev:
    def __init__(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def synchronize(self, *a, **k):
        pass

    def query(self, *a, **k):
        return True

    def elapsed_time(self, *a, **k):
        return 0.0

    def wait(self, *a, **k):
        pass


def patch():
    done = []
    for name in ("perf_counter", "monotonic", "time", "process_time", "thread_time"):
        setattr(time, name, lambda: 0.0)
        done.append("time." + name)
    for name in ("perf_counter_ns", "monotonic_ns", "time_ns"):
        setattr(time, name, lambda: 0)
    cuda.event = _Ev
    cuda.event_elapsed_time = lambda a, b: 0.0
    done.append("numba.cuda.event")
    try:
        import cupy
        cupy.cuda.Event = _Ev
        cupy.cuda.get_elapsed_time = lambda a, b: 0.0
        cupy.cuda.stream.Event = _Ev
        cupy.cuda.stream.get_elapsed_time = lambda a, b: 0.0
        done.append("cupy.cuda.Event")
    except Exception as e:  # noqa: BLE001 - whatever CuPy allows
        done.append("cupy: %s" % e)
    main = sys.modules.get("__main__")
    # The tenant's own helpers, replaced by ones of the same types (a
    # replacement of the wrong type only breaks this process's own answers:
    # is_compile_error returning a truthy tuple turned every exception into
    # a compile error on the H100).
    if hasattr(main, "where"):
        main.where = lambda e, path: ("patched", "%s: %s" % (type(e).__name__, e))
        done.append("tenant.where")
    if hasattr(main, "is_compile_error"):
        main.is_compile_error = lambda e: False
        done.append("tenant.is_compile_error")
    real_dumps = json.dumps

    def dumps(obj, *a, **k):
        if isinstance(obj, dict) and "ok" in obj:
            obj = dict(obj, elapsed_ms=0.001, median_ms=0.001, timed_by="tenant")
        return real_dumps(obj, *a, **k)
    json.dumps = dumps
    return done


PATCHED = patch()
print("patched", PATCHED, flush=True)


def reduce_sum(d_in, d_out):
    honest(d_in, d_out)
    cuda.synchronize()
    _sleep(0.1)

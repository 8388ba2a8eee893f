"""Where a Python sample's time goes (issue 31 diagnostic, GPU host only).

    python3 tests/gpu/py_roundtrip_probe.py [N]

An owner (this process, CuPy) and a tenant (a child, Numba IPC arrays as in
labs/common/py/tenant.py) on a SOCK_SEQPACKET pair; prints the median of
each step of the owner's sample loop, in microseconds.
"""
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

REPS = 40


def med(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def tenant(fd):
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda
    import cupy as cp
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "solutions-py", "reduction"))
    import cupy_sum
    import fast_numba
    sock = socket.socket(fileno=fd)
    arrs = []
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return
        m = json.loads(data)
        op = m["op"]
        if op == "open":
            arrs = []
            for h, n in m["bufs"]:
                cm = cuda.open_ipc_array(bytes.fromhex(h), shape=(n,), dtype=np.float32)
                arrs.append(cm.__enter__())
            cuda.current_context()
        elif op == "nop":
            pass
        elif op == "sync":
            cuda.synchronize()
        elif op in ("cupy", "numba"):
            fn = cupy_sum.reduce_sum if op == "cupy" else fast_numba.reduce_sum
            k = m.get("k", 1)
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for i in range(k):
                fn(arrs[2 * i], arrs[2 * i + 1])
            b.record()
            cuda.synchronize()
            sock.send(json.dumps({"ok": True, "us": cp.cuda.get_elapsed_time(a, b) * 1e3 / k}).encode())
            continue
        elif op in ("cupy_ev", "numba_ev"):
            fn = cupy_sum.reduce_sum if op == "cupy_ev" else fast_numba.reduce_sum
            ts = []
            flush = cp.empty(1 << 26, dtype=cp.float32)
            for r in range(REPS):
                flush.fill(r)
                a, b = cp.cuda.Event(), cp.cuda.Event()
                cuda.synchronize()
                a.record()
                fn(arrs[0], arrs[1])
                b.record()
                b.synchronize()
                cuda.synchronize()
                ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
            sock.send(json.dumps({"ok": True, "us": med(ts)}).encode())
            continue
        sock.send(b'{"ok":true}')


def owner(n, kmax):
    import cupy as cp
    rt = cp.cuda.runtime
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    p = subprocess.Popen([sys.executable, __file__, "--tenant", str(b.fileno())],
                         pass_fds=(b.fileno(),))
    b.close()
    bufs, views = [], []
    for i in range(kmax):
        pi = rt.malloc(4 * n)
        po = rt.malloc(4)
        vi = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(pi, 4 * n, None), 0))
        vo = cp.ndarray((1,), cp.float32, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(po, 4, None), 0))
        vi[...] = cp.random.standard_normal(n, dtype=cp.float32)
        views.append((vi, vo))
        bufs += [[bytes(rt.ipcGetMemHandle(pi)).hex(), n], [bytes(rt.ipcGetMemHandle(po)).hex(), 1]]
    rt.deviceSynchronize()

    def ask(m):
        a.send(json.dumps(m).encode())
        return json.loads(a.recv(1 << 16))

    ask({"op": "open", "bufs": bufs})
    flush = cp.empty(1 << 26, dtype=cp.float32)
    rows = []

    def step(name, fn, reps=REPS):
        ts = []
        for r in range(reps):
            flush.fill(r)
            rt.deviceSynchronize()
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e6)
        rows.append((name, med(ts), min(ts)))

    idx = cp.zeros(64, dtype=cp.int64)
    step("owner: nothing", lambda: None)
    step("owner: deviceSynchronize idle", lambda: rt.deviceSynchronize())
    step("owner: probe 64 (take+asnumpy)", lambda: cp.asnumpy(views[0][1][idx[:1]]))
    step("owner: poison out (fill)", lambda: views[0][1].fill(np.nan))
    step("round trip nop", lambda: ask({"op": "nop"}))
    step("round trip + tenant cuda.synchronize", lambda: ask({"op": "sync"}))
    step("round trip + sync + probe", lambda: (ask({"op": "sync"}), cp.asnumpy(views[0][1][idx[:1]])))
    tev = []

    def refill_batch(k, refill):
        if refill:
            for i in range(k):
                views[i][0][...] = cp.random.standard_normal(n, dtype=cp.float32)
            views[0][0].sum()
        ans = ask({"op": "cupy", "k": k})
        tev.append(ans["us"])
    for refill in (False, True):
        for k in (1, 9):
            ts = []
            tev.clear()
            for r in range(15):
                if refill:
                    for i in range(k):
                        views[i][0][...] = cp.random.standard_normal(n, dtype=cp.float32)
                flush.fill(r)
                rt.deviceSynchronize()
                t0 = time.perf_counter()
                ans = ask({"op": "cupy", "k": k})
                cp.asnumpy(views[0][1][idx[:1]])
                ts.append((time.perf_counter() - t0) * 1e6 / k)
                tev.append(ans["us"])
            rows.append(("cupy k=%d refill=%s owner/call" % (k, refill), med(ts), min(ts)))
            rows.append(("cupy k=%d refill=%s tenant events/call" % (k, refill), med(tev), min(tev)))
    for kind in ():
        for _ in range(3):
            ask({"op": kind})
        step("%s sum 1 call + probe" % kind, lambda: (ask({"op": kind}), cp.asnumpy(views[0][1][idx[:1]])))
        for k in (2, 4, 8, 16):
            if k <= kmax:
                step("%s sum batch k=%d + probe, per call" % (kind, k),
                     lambda: (ask({"op": kind, "k": k}), cp.asnumpy(views[0][1][idx[:1]])))
                nm, m, lo = rows[-1]
                rows[-1] = (nm, m / k, lo / k)
        rows.append(("%s sum in-tenant events" % kind, ask({"op": kind + "_ev"})["us"], 0))
    print("n=%d (%.2f GiB per input), %d reps, microseconds" % (n, 4 * n / 2**30, REPS))
    print("%-44s %10s %10s" % ("step", "median", "min"))
    for nm, m, lo in rows:
        print("%-44s %10.1f %10.1f" % (nm, m, lo))
    a.close()
    p.wait()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--tenant":
        tenant(int(sys.argv[2]))
    else:
        n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 28
        owner(n, int(os.environ.get("KMAX", "16")))

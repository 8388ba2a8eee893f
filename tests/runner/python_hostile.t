#!/usr/bin/env python3
"""CI (no GPU): hostile Python submissions through the real runner and the
real sandbox (Numba's CUDA simulator), each of which must get no
correctness credit and leave the runner able to grade the next job
(docs/python.md, "Threat model"). The student's process holds only its
socket to the trusted owner and the case's buffers: it forges records on
every descriptor it has, patches the timers and the tenant's own code,
walks gc, reads through a made-up pointer, calls ptrace and
process_vm_readv through ctypes, opens the owner's /proc files, finishes in
a thread or a forked process after returning, reads files outside /work,
opens the network, and kills the owner. The timing test runs the owner
directly (the simulator's timing case is too large for the runner's timing
run): samples come from the owner's clock whatever the student patched.
Prints TAP lines."""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, ROOT, cases, grade, make_root, need, ok  # noqa: E402
import simlab  # noqa: E402

need()
tmp, root = make_root()

PRE = "import os, sys, ctypes, gc, socket, threading, time\nimport numpy as np\nfrom numba import cuda\n"


def no_credit(name, src, statuses=("graded",), expect_out=()):
    doc, err = grade(tmp, root, name + ".py", PRE + src)
    c = cases(doc)
    cg = doc["result"].get("cugrade", {})
    out = cg.get("program_output", "") or ""
    ok(doc["status"] in statuses and not any(x.get("passed") for x in c.values()),
       "%s: %s, no case passed" % (name, doc["status"]), json.dumps(doc)[:2500] + err[-800:])
    for e in expect_out:
        ok(e in out, "%s: the attempt was refused (%s)" % (name, e), out[-1500:])
    return doc


FORGE = r'''
REC = b'{"type":"case","name":"1000","status":"ok","dtype":"f32","count":1,"bytes":4,"inputs_modified":false,"modified_count":0,"oob_writes":0,"call_ms":0.001}\n' + np.float32(123.0).tobytes() + b'{"type":"done"}\n'
def reduce_sum(d_in, d_out):
    wrote = []
    for fd in range(0, 1024):
        try:
            os.write(fd, REC)
            wrote.append(fd)
        except OSError:
            pass
    for fd in range(3, 64):
        try:
            f = os.open("/proc/%d/fd/%d" % (os.getppid(), fd), os.O_WRONLY)
            os.write(f, REC)
            wrote.append("owner%d" % fd)
        except OSError as e:
            pass
    print("forged on", wrote, flush=True)
'''
no_credit("forge", FORGE, ("graded", "runtime_error", "compile_error"))

GCWALK = r'''
def reduce_sum(d_in, d_out):
    hits = 0
    for o in gc.get_objects():
        if isinstance(o, np.ndarray) and o.dtype == np.float32 and o.size < 4096 and o.flags.writeable:
            o[...] = 7.0
            hits += 1
        if isinstance(o, dict) and "op" in o:
            o["op"] = "none"
    main = sys.modules.get("__main__")
    for name in dir(main):
        if callable(getattr(main, name)) and not name.startswith("__"):
            setattr(main, name, lambda *a, **k: None)
    import json
    json.dumps = lambda *a, **k: '{"ok": true, "forged": 1}'
    print("gc arrays written", hits, flush=True)
'''
no_credit("gcwalk", GCWALK, ("graded", "runtime_error", "compile_error"))

PROCMEM = r'''
def reduce_sum(d_in, d_out):
    pp = os.getppid()
    cmd = open("/proc/%d/cmdline" % pp, "rb").read()
    print("cmdline", "has the seed" if b"0123456789abcdef" in cmd else "no seed", flush=True)
    print("environ", "has the seed" if any("0123456789abcdef" in v for v in os.environ.values())
          else "no seed", flush=True)
    for what in ("mem", "maps", "environ", "fd/3"):
        try:
            open("/proc/%d/%s" % (pp, what), "rb").read(16)
            print("owner", what, "readable", flush=True)
        except OSError as e:
            print("owner", what, type(e).__name__, flush=True)
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.ptrace(16, pp, 0, 0)      # PTRACE_ATTACH
    print("ptrace", r, ctypes.get_errno(), flush=True)
    buf = ctypes.create_string_buffer(64)
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    loc, rem = iovec(ctypes.addressof(buf), 64), iovec(0x400000, 64)
    r = libc.syscall(310, pp, ctypes.byref(loc), 1, ctypes.byref(rem), 1, 0)  # process_vm_readv
    print("process_vm_readv", r, ctypes.get_errno(), flush=True)
    # A made-up pointer: an array "at" an address this process never mapped.
    class Fake:
        __array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0x10, False), "version": 3}
    np.asarray(Fake())[0] = 1.0
'''
no_credit("procmem", PROCMEM, ("runtime_error",),
          ("cmdline no seed", "environ no seed", "owner environ PermissionError",
           "owner mem PermissionError", "owner fd/3 PermissionError", "ptrace -1 1",
           "process_vm_readv -1 1"))

LATE = r'''
@cuda.jit
def add_all(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])

def finish(d_in, d_out):
    time.sleep(0.5)
    d_out[0] = 0.0
    add_all[(d_in.shape[0] + 255) // 256, 256](d_in, d_out)

def reduce_sum(d_in, d_out):
    threading.Thread(target=finish, args=(d_in, d_out)).start()
'''
no_credit("thread_after_return", LATE)

FORK = r'''
def reduce_sum(d_in, d_out):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.3)
        d_out[0] = float(np.asarray(d_in.copy_to_host(), dtype=np.float64).sum())
        try:
            os.write(3, b'{"ok": true}')
        except OSError:
            pass
        os._exit(0)
'''
no_credit("fork_after_return", FORK)

FILES = r'''
def reduce_sum(d_in, d_out):
    for p in ("/etc/shadow", "/root", "%s", "/lab/labs/../../etc/passwd", "/proc/1/environ",
              "/etc/passwd", "/lab/reference/reduction/judge.cu", "%s"):
        try:
            if os.path.isdir(p):
                print(p, "lists", os.listdir(p)[:5], flush=True)
            else:
                print(p, "reads", len(open(p, "rb").read()), flush=True)
        except OSError as e:
            print(p, type(e).__name__, flush=True)
    try:
        open("/lab/labs/common/py/owner.py", "a").write("# pwned")
        print("owner.py writable", flush=True)
    except OSError as e:
        print("owner.py", type(e).__name__, flush=True)
    os._exit(9)   # a run that ends badly keeps its prints as the feedback
''' % (tmp, os.path.join(ROOT, "reference/reduction/judge.cu"))
no_credit("files", FILES, ("runtime_error",), expect_out=("/etc/shadow FileNotFoundError", tmp + " FileNotFoundError",
                                      "owner.py PermissionError", "/etc/passwd FileNotFoundError",
                                      "/lab/reference/reduction/judge.cu FileNotFoundError",
                                      os.path.join(ROOT, "reference/reduction/judge.cu") + " FileNotFoundError"))

NET = r'''
def reduce_sum(d_in, d_out):
    try:
        socket.create_connection(("1.1.1.1", 80), timeout=2)
        print("net connected", flush=True)
    except OSError as e:
        print("net", type(e).__name__, flush=True)
    try:
        socket.socket(17, socket.SOCK_RAW)   # AF_PACKET
        print("packet socket", flush=True)
    except OSError as e:
        print("packet", e.errno, flush=True)
    os._exit(9)
'''
no_credit("network", NET, ("runtime_error",), expect_out=("net OSError", "packet 97"))

# The seed in the tenant's own memory: every readable anonymous mapping,
# read through made-up __array_interface__ pointers, searched for this
# job's seed itself (its hex text in either case, either half of it) -- not
# for a "CUGRADE_SEED=" in front of it: the seed reaches the owner on a
# descriptor, so no copy of it would carry that prefix (a search for it
# passed with the seed sent into the tenant's heap). Each pattern travels as
# a list of byte values, compared one by one, so that neither the
# student's source nor its memory ever holds it whole; a word the tenant
# builds at run time must be found (else the scan read nothing). The
# tenant was exec'd, not forked from the owner, and no message of the
# owner's carries the seed.
MEMSEED = "5eedc0de7a1e9b3c4d2f8a6e1c0b7d93"
MEMSCAN = r"""
PATS = %r
CONTROL = b"memscan" + b"-control-" + b"%%d" %% 20261202
class View:
    def __init__(self, a, n):
        self.__array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (a, True), "version": 3}
def holds(a, p):
    n = len(a) - len(p) + 1
    if n <= 0:
        return False
    for i in np.flatnonzero((a[:n] == p[0]) & (a[1:n + 1] == p[1])):
        if all(int(a[i + k]) == p[k] for k in range(2, len(p))):
            return True
    return False
def reduce_sum(d_in, d_out):
    found, scanned, seen = [], 0, 0
    for line in open("/proc/self/maps"):
        p = line.split()
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        path = p[5] if len(p) > 5 else ""
        if p[1][0] != "r" or (path and path not in ("[heap]", "[stack]")) or hi - lo > (64 << 20):
            continue
        scanned += hi - lo
        a = np.asarray(View(lo, hi - lo))
        seen += holds(a, list(CONTROL))
        if any(holds(a, x) for x in PATS):
            found.append(hex(lo))
    print("memscan %%d MiB," %% (scanned >> 20), "control %%s," %% ("seen" if seen else "NOT SEEN"),
          "seed found at %%s" %% found if found else "seed not in memory", flush=True)
    os._exit(9)   # a run that ends badly keeps its prints as the feedback
""" % [list(x.encode()) for x in (MEMSEED[:16], MEMSEED[16:], MEMSEED[:16].upper(), MEMSEED[16:].upper())]
doc, err = grade(tmp, root, "memscan.py", PRE + MEMSCAN, seed=MEMSEED)
out = (doc["result"].get("cugrade", {}).get("program_output", "") or "")
ok(doc["status"] == "runtime_error" and not any(x.get("passed") for x in cases(doc).values()),
   "memscan: %s, no case passed" % doc["status"], json.dumps(doc)[:2500] + err[-800:])
ok("control seen, seed not in memory" in out,
   "memscan: the seed is nowhere in the tenant's memory (a word it made itself is found)", out[-1500:])

# ctypes into libcudart: reset the device, copy to and free made-up device
# addresses. CI has no driver (every call fails), so this shows only that the
# calls reach nothing of the owner's; tests/gpu/solutions-py/reduction/
# hostile_cuda_ctypes.py makes them on a GPU.
CUDART = r'''
import glob
def reduce_sum(d_in, d_out):
    libs = sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"))
    rt = ctypes.CDLL(libs[0])
    junk = ctypes.create_string_buffer(4096)
    r = [rt.cudaMemcpy(ctypes.c_void_p(0x200000000), junk, ctypes.c_size_t(4096), 1),
         rt.cudaFree(ctypes.c_void_p(0x200000000)), rt.cudaDeviceReset()]
    print("cudart calls", r, flush=True)
    os._exit(9)
'''
no_credit("cudart", CUDART, ("runtime_error",), expect_out=("cudart calls",))

# Processes meant to outlive the job: a forked, setsid'd sleep with a
# marker argument, a double-forked Python daemon in its own session, a
# thread that never ends. They die with the run's cgroup and pid namespace.
MARK = "%d.25" % (4000 + os.getpid() % 1000)
DAEMON = r'''
import subprocess
def forever():
    while True:
        time.sleep(1)
def reduce_sum(d_in, d_out):
    if "--sanitize" in sys.argv:   # the sanitizer run would wait for them to its limit
        raise RuntimeError("not under the sanitizer")
    if os.fork() == 0:
        os.setsid()
        os.execv("/usr/bin/sleep", ["sleep", "%s"])
        os._exit(0)
    subprocess.Popen([sys.executable, "-c", "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                      "    time.sleep(%s)\nos._exit(0)\n"], start_new_session=True).wait()
    threading.Thread(target=forever, daemon=False).start()
    raise RuntimeError("spawned")   # the tenant lives on (see below); the case says so
''' % (MARK, MARK)
# (The tenant must not die here: its forked children hold its end of the
# owner's socket, so the owner would wait for an answer until the run's wall
# limit -- docs/python.md, "The hostile suite on a GPU".)
doc = no_credit("daemon", DAEMON)
m = cases(doc).get("1", {}).get("message", "")
ok("spawned" in m, "daemon: the processes were started (the case's message says so)", m)


def marked():
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if MARK.encode() in cmd or any(MARK.encode() in c and b"sleep" in c for c in cmd):
            left.append((pid, cmd))
    return left


for _ in range(50):
    if not marked():
        break
    time.sleep(0.2)
ok(not marked(), "daemon: no process of the run is left once it is graded", marked())

KILL = r'''
import signal
def reduce_sum(d_in, d_out):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(1)
'''
no_credit("kill_owner", KILL, ("runtime_error",))

# Timers: the owner's samples are its own clock, whatever the student's
# process patches. A call that sleeps 100 ms with every timer it can reach
# patched to say 0 is still timed at >= 100 ms. The owner stops sampling at
# twice --max-ms whatever the count: on a loaded CI host a simulated call
# takes 1.5-2 s, so the budget is wide and two samples are enough.
TIMERS = GOOD + r'''
import time, numba.cuda as nc
_real = reduce_sum
for name in ("perf_counter", "monotonic", "time", "perf_counter_ns", "monotonic_ns"):
    setattr(time, name, lambda: 0)
class _Ev:
    def record(self, *a): pass
    def synchronize(self): pass
    def elapsed_time(self, other): return 0.0
nc.event = lambda *a, **k: _Ev()
nc.event_elapsed_time = lambda a, b: 0.0
import time as _t
_sleep = _t.sleep
def reduce_sum(d_in, d_out):
    _real(d_in, d_out)
    _sleep(0.1)
'''
src = os.path.join(tmp, "timers.py")
open(src, "w").write(TIMERS)
chan = os.path.join(tmp, "timers.chan")
with open(chan, "wb") as f:
    p = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
                        "reduction", "time", "--seed", simlab.SEED, "--case", "1", "--max-ms", "5000",
                        "--file", src], pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True,
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), timeout=120,
                       **({"preexec_fn": lambda: os.dup2(f.fileno(), 3)}))
recs = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
tim = [r for r in recs if r.get("type") == "timing"]
ok(p.returncode == 0 and tim and len(tim[0]["samples_ms"]) >= 2 and
   min(tim[0]["samples_ms"]) >= 100 and tim[0]["timed_by"] == "owner" and tim[0]["wrong_samples"] == 0,
   "patched timers and events: the owner's samples still see the 100 ms call",
   json.dumps(tim)[:800] + p.stderr.decode()[-800:])
rc = [r for r in recs if r.get("name") == "1@recheck"]
ok(rc and rc[0]["status"] == "ok", "the re-check on fresh inputs ran after the samples", recs)

# Returning before the answer is there: a thread writes it once the owner
# has read the output (when the next call on the same output buffer
# begins). Every timed sample's clock stopped at the owner's own read (the
# poison, or an earlier call's answer), so every sample is wrong and the
# re-check record tells the judge so: the timing is flagged. The thread
# sums a host copy of the input, not with a kernel: the simulator runs one
# kernel at a time, and a thread's simulated kernel 50 ms late could land
# its answer for the next sample's inputs inside that sample's clock under
# load (python_batch.t's LATE is the batch's version of this check).
LAZY = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
import threading
_due = {}


def _key(a):
    return a.__cuda_array_interface__["data"][0] if hasattr(a, "__cuda_array_interface__") else id(a)


def reduce_sum(d_in, d_out):
    k = _key(d_out)
    if k in _due:
        _due.pop(k).set()
    x, go = d_in.copy_to_host(), threading.Event()
    _due[k] = go

    def later():
        go.wait()
        d_out[0] = np.float32(x.astype(np.float64).sum())
    threading.Thread(target=later, daemon=True).start()
'''
src = os.path.join(tmp, "lazy.py")
open(src, "w").write(LAZY)
chan = os.path.join(tmp, "lazy.chan")
with open(chan, "wb") as f:
    p = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
                        "reduction", "time", "--case", "1", "--max-ms", "600", "--file", src],
                       pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True,
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", CUGRADE_SEED=simlab.SEED),
                       timeout=120, preexec_fn=lambda: os.dup2(f.fileno(), 3))
recs = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
tim = [r for r in recs if r.get("type") == "timing"]
rc = [r for r in recs if r.get("name") == "1@recheck"]
ok(tim and tim[0]["wrong_samples"] == len(tim[0]["samples_ms"]) and rc and
   rc[0].get("error_name") == "python_timing",
   "answers that arrive after the call returned: every timed sample is wrong, the re-check "
   "record says so (the judge flags the timing)", json.dumps(recs)[:1200] + p.stderr.decode()[-600:])

# Replaying an answer: cached on the first call by the input's pointer and
# size. Every timed call gets fresh inputs in the same buffers (a seed from
# os.urandom), so every timed sample is wrong.
REPLAY = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
_memo = {}
def reduce_sum(d_in, d_out):
    key = (id(d_in), d_in.shape[0])
    if key not in _memo:
        _real(d_in, d_out)
        _memo[key] = float(d_out[0])
    d_out[0] = _memo[key]
'''
src = os.path.join(tmp, "replay.py")
open(src, "w").write(REPLAY)
chan = os.path.join(tmp, "replay.chan")
with open(chan, "wb") as f:
    p = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
                        "reduction", "time", "--case", "1000", "--max-ms", "300", "--file", src],
                       pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True,
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", CUGRADE_SEED=simlab.SEED),
                       timeout=300, preexec_fn=lambda: os.dup2(f.fileno(), 3))
recs = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
tim = [r for r in recs if r.get("type") == "timing"]
# A replayed sum can fall within the tolerance of a fresh one by chance
# (case 1000: the sums differ by about 13, the tolerance is about 0.002,
# and half the fresh inputs have the replayed one's sign: about 1 sample
# in 10,000), so a few such samples are allowed, never a run of them: one
# wrong sample already flags the timing.
n = len(tim[0]["samples_ms"]) if tim else 0
bad = tim[0]["wrong_samples"] if tim else 0
ok(n >= 3 and bad >= n - max(1, n // 100),
   "an answer replayed by pointer: every timed call had fresh inputs, every sample is wrong "
   "(%d of %d; a chance agreement within the tolerance allowed)" % (bad, n),
   json.dumps([{k: v for k, v in r.items() if k != "samples_ms"} for r in tim])[:800] +
   p.stderr.decode()[-600:])

# Forbidden libraries by absence: a lab whose lab.json hides cuBLAS from
# Python runs ("python": {"hide": [...]}) gets /dev/null bound over every
# copy the patterns match; loading it fails whatever the student's code
# does (ctypes here; CuPy's matmul and PyTorch load the same files), and the
# owner words the failure with the lab's message.
import glob
libs = [p for p in glob.glob("/usr/local/cuda*/lib64/libcublas*.so*") if os.path.isfile(p)]
ok(libs, "CI has cuBLAS in its CUDA toolkit to hide", glob.glob("/usr/local/cuda*/lib64/*")[:20])
htmp, hroot = make_root({"python": {"hide": ["/usr/local/cuda*/lib64/libcublas*.so*"], "hide_names": ["cublas"],
                                    "hide_message": "cuBLAS is not allowed in this lab"}})
CUBLAS = r'''
def reduce_sum(d_in, d_out):
    import ctypes, glob
    for p in sorted(glob.glob("/usr/local/cuda*/lib64/libcublas.so*")):
        ctypes.CDLL(p)            # raises: the file is /dev/null in this sandbox
    raise RuntimeError("loaded libcublas")
'''
doc, err = grade(htmp, hroot, "cublas.py", PRE + CUBLAS)
c = cases(doc)
m = c.get("1000", {}).get("message", "")
ok(doc["status"] == "graded" and not any(x.get("passed") for x in c.values()) and
   "cuBLAS is not allowed in this lab" in m and "OSError" in m and "loaded libcublas" not in m,
   "a hidden cuBLAS cannot be loaded, and the case says it is not allowed", json.dumps(doc)[:2000] + err[-600:])
doc, err = grade(htmp, hroot, "good.py", GOOD)
ok(doc["status"] == "graded" and doc["result"].get("score") == 20,
   "the same lab still grades a file that needs no cuBLAS", json.dumps(doc)[:800] + err[-500:])

doc, err = grade(tmp, root, "good.py", GOOD)
ok(doc["status"] == "graded" and doc["result"].get("score") == 20,
   "after every attack the runner grades a correct file 20 of 20", json.dumps(doc)[:800] + err[-500:])
sys.exit(1 if simlab.failures() else 0)

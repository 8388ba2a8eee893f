"""labs/common/py/owner_tenant.py - the owner's side of the tenant
(labs/common/py/tenant.py): the student's process, started with `python3 -I
-B`, a clean environment and no descriptor but its end of one SOCK_SEQPACKET
socket, and the messages we send it (owner.py says what each means). The
profiling lab's owner (labs/profiling/lab.py) starts its trainers the same
way, with its own script. Trusted: imported by owners, and for
one_blas_thread by a sanitizer run's tenant.py before the student's code
and by the pipeline lab's judge."""
import json
import os
import select
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_MSG = 1 << 16
# The owner's own NumPy runs its BLAS on one thread (one_blas_thread): a
# multi-threaded BLAS keeps its idle threads spinning after every call
# (OpenBLAS, about 0.1 s each), and on the 16-core GPU host that was 35 s
# of CPU in each profiling timing run, whose owner multiplies once per
# call to make its labels (docs/log/2026-12-01-hold-priority.md). The
# tenant's environment is the student's own: these never reach it.
OWNER_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# The student's process keeps its thread count, but an idle OpenBLAS
# thread there sleeps at once instead of spinning first (OpenBLAS's
# minimum spin, 2^4 cycles): its threads start spinning as NumPy is
# imported, before any of the student's code, and a bare `import numpy`
# took 2.1-2.2 s of CPU in 0.32 s on the 16-core H200 host, in both of a
# Python job's tenants (docs/log/2026-12-02-owner-kernels.md).
TENANT_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4"}


def one_blas_thread():
    """Our BLAS on one thread: called before NumPy is first imported
    (owner.py, at its own import), as the libraries read it once."""
    for k in OWNER_THREADS:
        os.environ[k] = "1"


class Tenant:
    """The student's process and our socket to it."""

    def __init__(self, args, timeout, script=os.path.join(HERE, "tenant.py"), env=None):
        """`python3 -I -B script ARGS... FD`: tenant.py's ARGS are the
        student's file and its symbol; env adds variables (where unset)."""
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = a
        self.timeout = timeout
        self.asked = False  # a message is out (send), its answer not read
        # CuPy's kernel cache: ours in memory only (CudaBackend), the
        # student's on disk under their HOME (/work, one job's folder), so
        # the timing run's tenant finds what the check run's compiled; only
        # the student's processes ever read it.
        child = {k: v for k, v in os.environ.items()
                 if not k.startswith("CUGRADE_") and k != "CUPY_CACHE_IN_MEMORY" and
                 k not in OWNER_THREADS}
        for k, v in list((env or {}).items()) + list(TENANT_ENV.items()):
            child.setdefault(k, v)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", script] + list(args) + [str(b.fileno())],
            pass_fds=(b.fileno(),), close_fds=True, env=child, stdin=subprocess.DEVNULL)
        b.close()

    def ask(self, msg, fds=()):
        """Send one message (and descriptors), wait for one answer. Returns
        the answer (a dict), or None when the tenant died or sent garbage."""
        return self.answer() if self.send(msg, fds) else None

    def send(self, msg, fds=()):
        """Send one message (and descriptors); False when the tenant is gone."""
        try:
            socket.send_fds(self.sock, [json.dumps(msg).encode()], list(fds))
        except OSError:
            return False
        self.asked = True
        return True

    def answer(self):
        """The answer to the message sent last (ask)."""
        self.asked = False
        try:
            # Not a plain recv: a child the tenant forked keeps its end of
            # the socket open after the tenant died, and recv would wait for
            # the sandbox's wall limit. An answer sent just before the
            # tenant died is still read first.
            deadline = time.monotonic() + self.timeout
            while not select.select([self.sock], [], [], 0.2)[0]:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    return None
            data = self.sock.recv(MAX_MSG)
        except (OSError, socket.timeout):
            return None
        if not data:
            return None
        try:
            ans = json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            return None
        return ans if isinstance(ans, dict) else None

    def held(self):
        """The device memory the student's process holds between calls, in
        bytes (tenant.py's "held": its allocators' live arrays, once they
        have handed back what they keep cached); None when it does not
        answer."""
        ans = self.ask({"op": "held"})
        try:
            return max(0, int(ans["held"])) if ans and ans.get("ok") else None
        except (KeyError, TypeError, ValueError):
            return None

    def death(self):
        """Why the tenant is gone, in words."""
        try:
            rc = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "your code sent the harness a message it could not read (do not use fd %s)" \
                   % "the harness's socket"
        if rc < 0:
            import signal
            return "your process was killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)
        return "your process exited with status %d during the call" % rc

    def close(self):
        try:
            self.sock.close()
            self.proc.kill()
            self.proc.wait(timeout=5)
        except Exception:
            pass


def runtime_msg(mode):
    """The tenant's "runtime" question: a check run's contexts wait for the
    GPU asleep, a timing run's as the baselines' do (vmm.py blocking_sync)."""
    return {"op": "runtime", "blocking": mode == "check"}


# Out of device memory for a case's buffers (owner.py new_case): as the CUDA
# harness tells it (harness_common.cu hc_setup). While the student's process
# holds less than OOM_STUDENT_BYTES, other jobs have the GPU's memory: wait
# OOM_WAIT_S and try again, OOM_TRIES in all, then it is ours (system_error,
# retried, never charged). Once it keeps more past its calls, the case is
# the student's.
OOM_TRIES, OOM_WAIT_S, OOM_STUDENT_BYTES = 4, 0.5, 1 << 20
# The device memory a job's code may use besides its inputs and outputs:
# what GPU memory admission reserves for it (runner/gpu/lock.h
# ADMIT_STUDENT_MB) and the CUDA harness's budget (harness_common.cu
# HC_STUDENT_DEVICE_MB); tests/labs/owner_oom.t checks the three agree.
STUDENT_DEVICE_BYTES = 2048 << 20


def call_oom_whose(held, request, free, name, attempt):
    """(record, message) for a call of the student's function that ran out
    of device memory (tenant.py oom_request: request, the bytes asked for,
    0 when unknown): the student's case record (not fatal: the next cases
    run), a failure of ours to die with, or (None, None): wait OOM_WAIT_S
    and call again. held: what the tenant holds once it has handed back
    its caches (None: no answer); free: the GPU's free memory now. Within
    STUDENT_DEVICE_BYTES (held + request) the job asked for no more than
    admission reserved for it, so the memory was other jobs' (ours: a
    system_error, retried, never charged). Past it, or asking for an
    unknown amount with the GPU still that much free after every try, the
    student's."""
    budget = STUDENT_DEVICE_BYTES >> 20
    def theirs(error):
        return {"type": "case", "name": name, "status": "runtime_error", "error": error,
                "error_name": "device_memory",
                "cause": "a job may use %d MiB of device memory besides its inputs and outputs: "
                         "allocate less at once (work in chunks, reuse one buffer, avoid a "
                         "float64 copy of the whole input)" % budget, "fatal": False}, None
    h = held or 0
    if request > 0 and h + request > STUDENT_DEVICE_BYTES:
        return theirs("your code ran out of device memory asking for %d MiB at once while "
                      "holding %d MiB" % (request >> 20, h >> 20))
    if h > STUDENT_DEVICE_BYTES:
        return theirs("your code ran out of device memory holding %d MiB" % (h >> 20))
    if attempt + 1 < OOM_TRIES:
        return None, None
    if request == 0 and held is not None and free is not None and \
            free >= STUDENT_DEVICE_BYTES - held:
        return theirs("your code ran out of device memory while the GPU had %d MiB free: it "
                      "asked for more than that at once" % (free >> 20))
    return None, ("case %s: your code ran out of device memory within its %d MiB (it holds %d "
                  "MiB): the GPU's memory is taken by other jobs" % (name, budget, h >> 20))


def oom_whose(held, name, attempt):
    """(record, message): the student's fatal case record, or a failure of
    ours to die with, or (None, None): wait and try again. held: the
    tenant's answer (None: no answer; 0 before its code ran)."""
    if held is not None and held >= OOM_STUDENT_BYTES:
        return {"type": "case", "name": name, "status": "runtime_error",
                "error": "case %s: could not allocate its buffers: your code kept %d MiB of "
                         "device memory allocated after it returned" % (name, held >> 20),
                "error_name": "harness",
                "cause": "free what you allocate before your function returns (del the arrays, "
                         "or let CuPy's pool reuse them), and keep nothing on the device "
                         "between calls", "fatal": True}, None
    if attempt + 1 < OOM_TRIES:
        return None, None
    return None, ("case %s: could not allocate its buffers: the GPU's memory is taken by other "
                  "jobs (your code holds %s)" % (name, "%d KiB" % (held >> 10)
                                                 if held is not None else "what it does not say"))

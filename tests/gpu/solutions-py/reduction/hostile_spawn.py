# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="hostile: right answers, and on its first call (not under compute-sanitizer, which would wait for them) it leaves processes and threads behind to outlive the job: a forked, setsid'd 'sleep 3600', a double-forked Python daemon with its own session that loops for an hour, and a non-daemon thread that never ends; the sandbox's cgroup and pid namespace end them with each run (e2e's row '(host) processes left' must say none, and hostile_zz_next_job.py, graded after every other file, still passes)"
import os
import subprocess
import sys
import threading
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

_started = []


def forever():
    while True:
        time.sleep(1)


def spawn():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.execv("/usr/bin/sleep", ["sleep", "3600"])
        finally:
            os._exit(0)
    p = subprocess.Popen([sys.executable, "-c",
                          "import os, time\n"
                          "if os.fork() == 0:\n"
                          "    os.setsid()\n"
                          "    t = time.time()\n"
                          "    while time.time() - t < 3600: time.sleep(0.5)\n"
                          "os._exit(0)\n"],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    p.wait()
    threading.Thread(target=forever, daemon=False).start()
    return pid


def reduce_sum(d_in, d_out):
    # Not under compute-sanitizer (--sanitize): the tool waits for every
    # process of its target, so the sleepers would hold it to its time limit
    # (96 s on the H100; charged as "ran past the time limit under the tool").
    if not _started and "--sanitize" not in sys.argv:
        _started.append(spawn())
        print("left behind: sleep pid", _started[0], flush=True)
    honest(d_in, d_out)

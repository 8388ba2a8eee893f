"""owner_gate.py - the owner's gate: fd 4, a socket to the runner, the
owner's alone (owner.py moves it to a private close-on-exec descriptor; the
tenant's Popen closes every other one, and the owner is not dumpable).
Two uses (docs/python.md):

  - a timing run's (--gate, runner/grade/job_time.c): the start-up done
    under the GPU's shared lock, the owner says 'r' and waits for 'g',
    which the runner sends holding the GPU alone;
  - a warm check run's (--pool, runner/grade/pool.c): the interpreters and
    their libraries up, no CUDA context, nothing of a student's loaded,
    the owner says 'r' and waits for its job, one line of JSON.

Trusted, like owner.py; shipped with it in the student's bundle
(labs/bundle.json)."""
import importlib
import json
import os

LINE_MAX = 8192


def _read(fd, n):
    while True:
        try:
            return os.read(fd, n)
        except InterruptedError:
            continue


def wait_go(fd):
    """Say 'r', wait for 'g'. True when it came, False when the runner
    closed the gate instead."""
    os.write(fd, b"r")
    return _read(fd, 1) == b"g"


def wait_job(fd):
    """Say 'r', wait for the job: {"file": "/work/NAME.py", "cases":
    "a,b", "seed": HEX} and a newline. Returns the dict, or None when the
    runner closed the gate without one (it let this warm run go unused).
    Raises ValueError for a line that is not that."""
    os.write(fd, b"r")
    data = b""
    while not data.endswith(b"\n"):
        b = _read(fd, 4096)
        if not b:
            return None
        data += b
        if len(data) > LINE_MAX:
            raise ValueError("longer than %d bytes" % LINE_MAX)
    job = json.loads(data)
    if not (isinstance(job, dict) and all(isinstance(job.get(k), str)
                                          for k in ("file", "cases", "seed"))):
        raise ValueError("not {file, cases, seed}")
    return job


def preload():
    """The owner's libraries before its job is known, as its backend will
    import them, without a CUDA context (no GPU memory is taken before the
    job holds its reservation): NumPy, and CuPy on a GPU."""
    importlib.import_module("numpy")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
        try:
            importlib.import_module("cupy")
        except ImportError:
            pass   # the backend says it, after the job arrived

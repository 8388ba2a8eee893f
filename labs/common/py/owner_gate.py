"""owner_gate.py - how the owner gets its job from the runner: the seed on
its own pipe (--seed-fd), and the gate: fd 4, a socket to the runner, the
owner's alone (owner.py moves it to a private close-on-exec descriptor; the
tenant's Popen closes every other one, and the owner is not dumpable).
The gate's two uses (docs/python.md):

  - a timing run's (--gate, runner/grade/job_time.c): the start-up done
    under the GPU's shared lock, the owner says 'r' and waits for 'g',
    which the runner sends holding the GPU alone;
  - a warm run's (--pool, runner/grade/pool.c; a check run, or a time run
    whose timing gate follows on the same socket): the interpreters and
    their libraries up, no CUDA context, nothing of a student's loaded,
    the owner says 'r' and waits for its job, one line of JSON (its file
    and seed).

tenant.py's sanitizer run uses wait_go too (--sanitize ... --gate,
runner/grade/sanitizer.c): started before the job's turn on the GPU, it
says 'r' with its libraries and context up and waits for 'g'.

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


def read_seed(fd):
    """--seed-fd: the seed, the text on fd (a pipe only the owner holds) to
    its end (at most 256 bytes), fd closed. Raises ValueError, OSError or
    UnicodeError for anything else."""
    data = b""
    while True:
        b = _read(fd, 256)
        if not b:
            break
        data += b
        if len(data) > 256:
            raise ValueError("longer than a seed")
    os.close(fd)
    return data.decode("ascii").strip()


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

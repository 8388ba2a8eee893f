"""Shared by tests/labs/owner_*.t: Python code run as a Python run's owner,
in a process of its own (labs/common/py/owner.py imported, its result
channel a pipe of ours, the student's code taken to have run), and what it
left: exit status, stderr, the records on its channel."""
import json
import os
import subprocess
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PY = os.path.join(ROOT, "labs", "common", "py")


def run_owner(body):
    """(exit status, stderr, records) of `body` run after the owner's set-up."""
    r, w = os.pipe()
    code = ("import json, os, sys; sys.path.insert(0, %r); import owner\n"
            "owner.CHANNEL = %d; owner.STUDENT_RAN = True\n" % (PY, w)) + body
    p = subprocess.Popen([sys.executable, "-I", "-c", code], pass_fds=(w,), stderr=subprocess.PIPE,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
    os.close(w)
    out = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        out += b
    os.close(r)
    err = p.stderr.read().decode()
    p.wait()
    # a case record's payload (raw bytes) may follow its line: not JSON, not UTF-8
    recs = [json.loads(x) for x in out.decode("utf-8", "replace").splitlines() if x.startswith("{")]
    return p.returncode, err, recs

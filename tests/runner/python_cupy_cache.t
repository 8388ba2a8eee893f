#!/usr/bin/env python3
"""CI (no GPU): a Python job's CuPy kernel cache starts with the lab's kept
kernels (runner/grade/python.c python_cupy_seed; docs/python.md). The
runner's prepare keeps the kernels CuPy compiled for the lab's cupy_warm
(on a GPU: CI's simulator has no CuPy), in the lab's build folder as
cupy-kernels/; each Python job gets a copy in /work/.cupy/kernel_cache,
owned by the job's box, so the student's CuPy finds them and adds its own.
Here the kept folder is made by hand: a kernel file, a dot file and a link
to a host file. The student's file checks, at import, that the kernel is
there with its bytes (or with those an earlier run of the same job, whose
/work it shares, wrote), that neither the dot file nor the link came, and
that it may change its copy and add a file, and that the owner's view of
the kept folder (/lab/cupy-kernels, python_run_kept; read by owner_gpu.py
kept_kernels) has the kernel and can be neither written nor added to;
else it raises SEEDMISSING. The kept kernel is unchanged after the job.
Prints TAP lines."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, cases, failures, grade, make_root, need, ok  # noqa: E402

need()
tmp, root = make_root()

# A first job builds the lab into the cache (cache/sm_90/reduction).
doc, err = grade(tmp, root, "first.py", GOOD)
ok(doc.get("status") == "graded", "a first job builds the lab", "%s\n%s" % (doc, err[-2000:]))
kept = os.path.join(tmp, "cache", "sm_90", "reduction", "cupy-kernels")
os.makedirs(kept, exist_ok=True)
with open(os.path.join(kept, "seed_kernel.cubin"), "w") as f:
    f.write("SEEDKERNEL")
with open(os.path.join(kept, ".hidden"), "w") as f:
    f.write("no")
os.symlink("/etc/hostname", os.path.join(kept, "link.cubin"))

CHECK = '''import os as _os
import sys as _sys
_d = _os.path.expanduser("~/.cupy/kernel_cache")


def _seed_check():
    try:
        with open(_d + "/seed_kernel.cubin") as f:
            if f.read() not in ("SEEDKERNEL", "CHANGED"):   # CHANGED: an earlier run of this job
                return "its bytes changed"
        if _os.path.lexists(_d + "/.hidden") or _os.path.lexists(_d + "/link.cubin"):
            return "a dot file or a link came too"
        with open(_d + "/seed_kernel.cubin", "w") as f:
            f.write("CHANGED")     # our own copy
        with open(_d + "/mine.cubin", "w") as f:
            f.write("x")           # and our own kernels beside it
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
    # The owner's view of the kept folder (owner_gpu.py kept_kernels): the
    # same kernels, read-only to every process of the run (an owner run's:
    # a sanitizer run has no owner).
    if "--sanitize" in _sys.argv:
        return ""
    try:
        with open("/lab/cupy-kernels/seed_kernel.cubin") as f:
            if f.read() != "SEEDKERNEL":
                return "the owner's kept kernel differs"
    except OSError as e:
        return "no owner's view: %s: %s" % (type(e).__name__, e)
    try:
        with open("/lab/cupy-kernels/seed_kernel.cubin", "w") as f:
            f.write("POISON")
        return "the owner's kept kernel could be written"
    except OSError:
        pass
    try:
        with open("/lab/cupy-kernels/new.cubin", "w") as f:
            f.write("POISON")
        return "a kernel could be added to the owner's folder"
    except OSError:
        return ""


_why = _seed_check()
if _why:
    raise RuntimeError("SEEDMISSING " + _why)
'''
doc, err = grade(tmp, root, "seeded.py", CHECK + GOOD)
c = cases(doc)
text = "%s\n%s" % (doc, err[-3000:])
ok(doc.get("status") == "graded" and c and all(x.get("passed") for x in c.values())
   and "SEEDMISSING" not in text,
   "the job's CuPy cache holds the lab's kept kernel, writable by the student, no dot file or "
   "link; the owner's view at /lab/cupy-kernels has it, read-only",
   text)
with open(os.path.join(kept, "seed_kernel.cubin")) as f:
    ok(f.read() == "SEEDKERNEL", "the kept kernel is unchanged after the job")
sys.exit(1 if failures() else 0)

#!/usr/bin/env python3
"""CI (no GPU): the host-library policy (docs/python.md, "Host libraries"),
through the real runner and sandbox in Numba's CUDA simulator. In the
reduction lab (a kernel lab), a file that copies d_in to the host and sums
it with NumPy -- the right answer -- gets no correctness credit, and each
case says why ("copied ... bytes of its inputs (d_in) to the host"); the
correct kernel is graded as before; a copy of a slice counts as well;
copying its own scratch array (not an input) back is fine. Prints TAP lines."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, cases, failures, grade, make_root, need, ok  # noqa: E402

need()
tmp, root = make_root()

HOST = '''import numpy as np
from numba import cuda

@cuda.jit
def put(out, v):
    out[0] = v

def reduce_sum(d_in, d_out):
    x = d_in.copy_to_host()                      # the whole input to the host
    put[1, 1](d_out, np.float32(x.astype(np.float64).sum()))
'''
SLICE = HOST.replace("x = d_in.copy_to_host()", "x = d_in[:d_in.shape[0]].copy_to_host()")
SCRATCH = GOOD + '''
_orig = reduce_sum
def reduce_sum(d_in, d_out):
    _orig(d_in, d_out)
    d_out.copy_to_host()          # reading the answer back (an output): fine
    cuda.to_device(np.zeros(4, np.float32)).copy_to_host()   # a scratch array: fine
'''

for name, src in (("host_numpy.py", HOST), ("host_slice.py", SLICE)):
    doc, err = grade(tmp, root, name, src)
    c = cases(doc)
    ok(doc.get("status") == "graded" and c and not any(x.get("passed") for x in c.values()),
       "%s: a right answer computed on the host gets no correctness credit" % name,
       json.dumps(doc)[:2500] + err[-1500:])
    msgs = " ".join(x.get("message", "") for x in c.values())
    ok("copied" in msgs and "(d_in) to the host" in msgs and "GPU kernel" in msgs,
       "%s: each case says why (the input copied to the host; the lab grades a GPU kernel)" % name,
       msgs[:1500])

for name, src in (("good.py", GOOD), ("readback.py", SCRATCH)):
    doc, err = grade(tmp, root, name, src)
    c = cases(doc)
    ok(doc.get("status") == "graded" and c and all(x.get("passed") for x in c.values()),
       "%s: a kernel that computes on the device is graded as before" % name,
       json.dumps(doc)[:2500] + err[-1500:])
sys.exit(1 if failures() else 0)

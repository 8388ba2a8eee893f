"""On a GPU host: what tenant.py's "held" says (owner.py new_case asks it
when a case's buffers cannot be allocated) for a student's file that keeps
device arrays between calls, and for one that keeps none. Prints one line
per file: held MiB. Usage: python3 tests/gpu/held_probe.py"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "labs",
                                "common", "py"))
from owner_tenant import Tenant  # noqa: E402

FILES = {
    "keeps 64 MiB (CuPy) + 32 MiB (Numba)": (
        "import cupy, numpy\nfrom numba import cuda\n"
        "KEEP = cupy.zeros(16 << 20, dtype=cupy.float32)\n"
        "NB = cuda.device_array(8 << 20, dtype=numpy.float32)\n"
        "def reduce_sum(x, out):\n    pass\n"),
    "keeps nothing (128 MiB freed in CuPy's pool, 32 MiB Numba freed)": (
        "import cupy, numpy\nfrom numba import cuda\n"
        "t = cupy.zeros(32 << 20, dtype=cupy.float32)\ndel t\n"
        "n = cuda.device_array(8 << 20, dtype=numpy.float32)\ndel n\n"
        "def reduce_sum(x, out):\n    pass\n"),
}
for what, src in FILES.items():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "kernel.py")
    with open(path, "w") as f:
        f.write(src)
    t = Tenant([path, "reduce_sum"], 120)
    r = t.ask({"op": "runtime"})
    a = t.ask({"op": "load", "path": path})
    h = t.held()
    print("%-70s runtime %s load %s held %s MiB" % (what, r and r.get("ok"), a and a.get("ok"),
                                                    None if h is None else round(h / 2**20, 1)))
    t.close()

"""Experiment (issue 31): where the embedding gather's in-process time goes.
The fast.cu kernel compiled by nvcc (cubin) and by NVRTC (fast_rawkernel.py's
source), each on CuPy's own allocations and on the owner's VMM buffers, timed
with CUDA events after an L2 flush, x1 and x10 per call, on the lab's timing case."""
import os, subprocess, sys, tempfile
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "labs", "common", "py"))
import numpy as np  # noqa: E402
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
import owner  # noqa: E402
import cupy as cp  # noqa: E402

KSRC = open(os.path.join(ROOT, "tests/gpu/solutions-py/embedding/fast_rawkernel.py")).read().split('r"""')[1].split('"""')[0]


def timeit(be, launch, reps):
    xs = []
    for _ in range(15):
        be.flush_l2()
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(reps):
            launch()
        b.record()
        b.synchronize()
        xs.append(cp.cuda.get_elapsed_time(a, b) / reps)
    return sorted(xs)[len(xs) // 2]


def main():
    be = owner.backend()
    doc, lab, cases = owner.load_lab(os.path.join(ROOT, "labs", "embedding"))
    name = doc["timing_case"]
    p = cases[name]
    num, dim, vocab = p["num_indices"], p["dim"], p["vocab"]
    cc = "".join(map(str, cp.cuda.Device().compute_capability))
    d = tempfile.mkdtemp()
    src = os.path.join(d, "k.cu")
    open(src, "w").write(KSRC + '\ntemplate __global__ void gather<float4>(const float4*, const long long*, float4*, unsigned long long, unsigned int);\n')
    cubin = os.path.join(d, "k.cubin")
    subprocess.run(["/usr/local/cuda/bin/nvcc", "-O3", "-std=c++17", "-cubin", "-arch=sm_" + cc, src, "-o", cubin], check=True)
    mods = {"nvcc": cp.RawModule(path=cubin), "nvrtc": cp.RawModule(code=KSRC, options=("-std=c++17",), name_expressions=("gather<float4>",))}
    def fn(m):
        if m == "nvcc":
            import re
            out = subprocess.run(["/usr/local/cuda/bin/cuobjdump", "-symbols", cubin], capture_output=True, text=True).stdout
            sym = [s for s in re.findall(r"(_Z\w+)", out) if "gather" in s][0]
            return mods[m].get_function(sym)
        return mods[m].get_function("gather<float4>")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    total = num * dim // 4
    blocks = max(1, min((total + 255) // 256, sms * 32))
    rng = np.random.default_rng(1)
    idx_h = rng.integers(0, vocab, num).astype(np.int64)
    mem = {}
    mem["cupy"] = (cp.asarray(rng.random((vocab, dim), dtype=np.float32)), cp.asarray(idx_h), cp.empty((num, dim), np.float32))
    c = owner.Case(be, lab, p, 1234, False)
    mem["vmm"] = (c.views["weight"], c.views["indices"], c.views["out"])
    print("case %s, %d blocks, cc %s" % (name, blocks, cc))
    print("%-6s %-5s %9s %9s" % ("code", "mem", "x1 ms", "x10 ms"))
    for m in ("nvcc", "nvrtc"):
        k = fn(m)
        for mm, (w, i, o) in mem.items():
            launch = lambda: k((blocks,), (256,), (w, i, o, cp.uint64(total), cp.uint32(dim // 4)))
            launch(); cp.cuda.Device().synchronize()
            print("%-6s %-5s %9.4f %9.4f" % (m, mm, timeit(be, launch, 1), timeit(be, launch, 10)))
    c.free()


if __name__ == "__main__":
    main()

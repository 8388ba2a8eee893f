#!/usr/bin/python3
"""CI (no GPU): the matmul and embedding labs' Python interfaces
(labs/<lab>/lab.py) through the trusted owner in Numba's CUDA simulator, run
directly (CI has no judge of these labs: theirs needs a GPU): the student's
function gets arrays of the right shapes and dtypes, the channel carries
the outputs the seed's inputs call for (computed here with NumPy from
gen.py), a timed sample passes the owner's own check (Freivalds' test for
matmul, bit-exact rows for embedding), and a wrong answer fails it."""
import functools, json, os, subprocess, sys, tempfile
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None, chars=2000)  # a failure prints 2000 characters of its detail
sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))
import gen  # noqa: E402
SEED = "00c0ffee5eed1234"


def owner(lab, mode, case, src):
    tmp = tempfile.mkdtemp(prefix="cugrade-pylab-")
    f = os.path.join(tmp, "k.py")
    open(f, "w").write(src)
    chan = os.path.join(tmp, "chan")
    args = ["--cases", case] if mode == "check" else ["--case", case, "--max-ms", "200"]
    with open(chan, "wb") as c:
        p = subprocess.run(["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
                            lab, mode] + args + ["--file", f], pass_fds=(3,),
                           preexec_fn=lambda: os.dup2(c.fileno(), 3), stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=300,
                           env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", CUGRADE_SEED=SEED))
    data = open(chan, "rb").read()
    recs, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        r = json.loads(data[pos:nl])
        pos = nl + 1
        if r.get("bytes"):
            r["_out"] = np.frombuffer(data[pos:pos + r["bytes"]], dtype=np.float32)
            pos += r["bytes"]
        recs.append(r)
    return p, recs


def inputs(lab, case, k):
    params = {c["name"]: c["params"] for c in json.load(open(os.path.join(ROOT, "labs", lab, "lab.json")))["cases"]}[case]
    s = gen.stream(gen.case_seed(gen.seed_parse_wide(SEED), case), k)
    return params, s


MATMUL = '''from numba import cuda
@cuda.jit
def mm(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc
def matmul(A, B, C):
    assert A.shape[1] == B.shape[0] and C.shape == (A.shape[0], B.shape[1]), (A.shape, B.shape, C.shape)
    mm[((C.shape[0] + 7) // 8, (C.shape[1] + 7) // 8), (8, 8)](A, B, C)
'''
p, recs = owner("matmul", "check", "17x31x13", MATMUL)
case = [r for r in recs if r.get("type") == "case"]
pr, sa = inputs("matmul", "17x31x13", 0)
_, sb = inputs("matmul", "17x31x13", 1)
A = gen.f32_sym(np, sa, 0, 17 * 13).reshape(17, 13).astype(np.float64)
B = gen.f32_sym(np, sb, 0, 13 * 31).reshape(13, 31).astype(np.float64)
ok(p.returncode == 0 and case and case[0]["status"] == "ok" and
   np.allclose(case[0]["_out"].reshape(17, 31), A @ B, atol=1e-4),
   "matmul: A (17x13) and B (13x31) from the seed, C = A B in the channel",
   (case[:1], p.stderr.decode()[-1500:]))

p, recs = owner("matmul", "time", "17x31x13", MATMUL)
tim = [r for r in recs if r.get("type") == "timing"]
ok(p.returncode == 0 and tim and tim[0]["wrong_samples"] == 0,
   "matmul timed: every sample passes Freivalds' test", (tim, p.stderr.decode()[-800:]))
p, recs = owner("matmul", "time", "17x31x13",
                MATMUL.replace("C[i, j] = acc", "C[i, j] = acc + (1.0 if i == 3 and j == 5 else 0.0)"))
tim = [r for r in recs if r.get("type") == "timing"]
ok(tim and tim[0]["wrong_samples"] == len(tim[0]["samples_ms"]),
   "matmul timed: one wrong element fails every sample", (tim, p.stderr.decode()[-800:]))

EMB = '''from numba import cuda
@cuda.jit
def gather(w, idx, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = w[idx[i], j]
def embedding_lookup(weight, indices, out):
    assert str(indices.dtype) == "int64" and weight.shape[1] == out.shape[1]
    gather[((out.shape[0] + 15) // 16, (out.shape[1] + 15) // 16), (16, 16)](weight, indices, out)
'''
p, recs = owner("embedding", "check", "1000x33", EMB)
case = [r for r in recs if r.get("type") == "case"]
pe, sw = inputs("embedding", "1000x33", 0)
_, si = inputs("embedding", "1000x33", 1)
W = gen.f32_sym(np, sw, 0, pe["vocab"] * pe["dim"]).reshape(pe["vocab"], pe["dim"])
I = gen.index(np, si, 0, pe["num_indices"], pe["vocab"])
ok(p.returncode == 0 and case and case[0]["status"] == "ok" and
   np.array_equal(case[0]["_out"].reshape(1000, 33).view(np.uint32), W[I].view(np.uint32)),
   "embedding: weight (5000x33) and int64 indices from the seed, out = weight[indices] bit for bit",
   (case[:1], p.stderr.decode()[-1500:]))
p, recs = owner("embedding", "time", "1x1", EMB)
tim = [r for r in recs if r.get("type") == "timing"]
ok(p.returncode == 0 and tim and tim[0]["wrong_samples"] == 0,
   "embedding timed: every sample's rows are the weight rows", (tim, p.stderr.decode()[-800:]))
sys.exit(1 if failures() else 0)

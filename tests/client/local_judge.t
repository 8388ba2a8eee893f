#!/usr/bin/python3
# `cugrade test`'s judge (labs/common/py/local.py) on the student's machine
# regenerates a case's inputs to check its outputs. It must do that in
# bounded host memory: the embedding lab's 8192x4096-bigvocab table is
# 19.7 GB of float32, and NumPy's generator makes some 15 passes over
# 64-bit temporaries (over 100 GB at once; on the GPU host the local run
# of embedding/bug_grid_y.cu died without a word after 150 s).
#   - gen.generate at positions gives the same bits as the same elements
#     of a range, for every built-in generator;
#   - a large input is generated in chunks, the same bits as in one go;
#   - the bigvocab case is judged in a process limited to 6 GiB of address
#     space: a correct output passes, one changed element fails.
import json
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from client_test import Tap, ROOT  # noqa: E402

PY = os.path.join(ROOT, "labs", "common", "py")
LIMIT = 6 << 30

# The child: judge bigvocab under the limit. Its expected rows come from
# ranges (gen.generate(start, count)), never from positions.
BIGVOCAB = r'''
import json, os, resource, sys
sys.path.insert(0, sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
import numpy as np
import gen, local
doc, ns = local.load_lab("embedding")
name = "8192x4096-bigvocab"
params = {c["name"]: c["params"] for c in doc["cases"]}[name]
seed = "0123456789abcdef0123456789abcdef"
cs = gen.case_seed(gen.seed_parse_wide(seed), name)
dim = params["dim"]
idx = gen.generate(np, "index", gen.stream(cs, 1), 0, params["num_indices"], params)
rows = {}
out = np.empty((idx.size, dim), dtype=np.float32)
for i, r in enumerate(idx.tolist()):
    if r not in rows:
        rows[r] = gen.generate(np, "f32_sym", gen.stream(cs, 0), r * dim, dim, params)
    out[i] = rows[r]
rec = {"type": "case", "name": name, "status": "ok", "_payload": out.tobytes()}
good, _ = local.judge_all([rec], "embedding", ns, {name: params}, seed, [name])
out[4000, 17] += 1.0
rec["_payload"] = out.tobytes()
bad, _ = local.judge_all([rec], "embedding", ns, {name: params}, seed, [name])
print(json.dumps({"good": good[name], "bad": bad[name]}))
'''


def check_positions(t):
    sys.path.insert(0, PY)
    import numpy as np
    import gen
    params = {"vocab": 1200000, "n": 1 << 20, "signs": 2}
    at = np.array([0, 1, 7, 4095, 4096, 123457, 999999, 1 << 19], dtype=np.int64)
    for genname in ("f32_sym", "index", "f32_reduction"):
        whole = gen.generate(np, genname, 0x1234567887654321, 0, 1 << 20, params)
        part = gen.generate(np, genname, 0x1234567887654321, 0, 0, params, at=at)
        t.ok(part.dtype == whole.dtype and (part.view(np.uint8) ==
                                            whole[at].view(np.uint8)).all(),
             "gen %s at positions: the same bits as those elements of a range" % genname)


def check_chunks(t):
    import numpy as np
    import gen
    import local
    _, ns = local.load_lab("reduction")
    params = {"n": 10007, "signs": 2}
    want = gen.generate(np, "f32_reduction", gen.stream(99, 0), 0, 10007, params)  # < gen.CHUNK
    _, pl = local.load_lab("pipeline")
    feat = pl["GEN"]["f32_features"]
    want_own = feat(np, gen.stream(99, 0), 5, 10007)  # a lab's own generator, in one go
    old = gen.CHUNK
    gen.CHUNK = 1000
    try:
        got = local.regen_inputs(np, gen, ns, params, 99)["d_in"]
        got_own = gen.generate(np, "f32_features", gen.stream(99, 0), 5, 10007, {}, feat)
    finally:
        gen.CHUNK = old
    t.ok(got.dtype == want.dtype and (got.view(np.uint32) == want.view(np.uint32)).all(),
         "a large input generated 1000 elements at a time: the same bits as in one go")
    t.ok(got_own.dtype == want_own.dtype and
         (got_own.view(np.uint32) == want_own.view(np.uint32)).all(),
         "a lab's own generator (the pipeline's features, from element 5) a chunk at a time: "
         "the same bits as in one go")


def check_bigvocab(t):
    r = subprocess.run([sys.executable, "-c", BIGVOCAB, PY, str(LIMIT)], capture_output=True,
                       text=True, timeout=900)
    try:
        d = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        d = {}
    t.ok(d.get("good", {}).get("passed") is True,
         "bigvocab (a 19.7 GB table) judged within %d GiB of address space: a correct output "
         "passes" % (LIMIT >> 30), (r.stdout + r.stderr)[-1500:])
    t.ok(d.get("bad", {}).get("passed") is False and "wrong output" in d["bad"].get("message", ""),
         "and one changed element fails", (r.stdout + r.stderr)[-1500:])


def main(t):
    check_positions(t)
    check_chunks(t)
    check_bigvocab(t)


resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
t = Tap()
t.run(main)
t.exit()

#!/usr/bin/env python3
"""The suites' nvcc cache (tests/tools/nvcc_cached.py) gives back only what
nvcc would: a hit is the stored object byte for byte (a real compile never
is: nvcc's temporary names, with its pid, are in every object), and a change
to any file the compile read (a header here) is a miss; a failed compile is
never stored; a command it does not know runs the real nvcc. Needs nvcc (CI has it). Prints TAP lines."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
WRAP = os.path.join(ROOT, "tests/tools/nvcc_cached.py")
NVCC = "/usr/local/cuda/bin/nvcc"
fails = 0


def ok(cond, name, detail=""):
    global fails
    print(("ok" if cond else "not ok") + " - " + name)
    if not cond:
        fails += 1
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)


if not os.access(NVCC, os.X_OK):
    print("not ok - nvcc at %s (CI installs the CUDA toolkit)" % NVCC)
    sys.exit(1)
tmp = tempfile.mkdtemp(prefix="cugrade-nvcc-cache-")
cache = os.path.join(tmp, "cache")
env = dict(os.environ, CUGRADE_TEST_NVCC_CACHE=cache, CUGRADE_TEST_NVCC_REAL=NVCC)


def cc(out, src="a.cu", extra=()):
    p = subprocess.run([WRAP, "-arch=sm_90", "-O3"] + list(extra) + ["-c", src, "-o", out],
                       cwd=tmp, env=env, capture_output=True)
    data = open(os.path.join(tmp, out), "rb").read() if os.path.exists(os.path.join(tmp, out)) else None
    return p, data


try:
    with open(os.path.join(tmp, "h.h"), "w") as f:
        f.write("#define V 1\n")
    with open(os.path.join(tmp, "a.cu"), "w") as f:
        f.write('#include "h.h"\n#warning "from a.cu"\nextern "C" int v() { return V; }\n')
    p1, o1 = cc("a1.o")
    ok(p1.returncode == 0 and o1 and b"from a.cu" in p1.stderr, "a miss compiles, with nvcc's warning",
       p1.stderr.decode(errors="replace"))
    p2, o2 = cc("a2.o")
    ok(p2.returncode == 0 and o2 == o1 and p2.stderr == p1.stderr,
       "the same compile again is a hit: the stored object byte for byte, its warning replayed",
       p2.stderr.decode(errors="replace"))
    with open(os.path.join(tmp, "h.h"), "w") as f:
        f.write("#define V 2\n")
    p3, o3 = cc("a3.o")
    ok(p3.returncode == 0 and o3 and o3 != o1, "a changed header (a file the compile read) is a miss")
    with open(os.path.join(tmp, "h.h"), "w") as f:
        f.write("#define V 1\n")
    p4, o4 = cc("a4.o")
    ok(o4 == o1, "the header as it was: the first object again")
    p5, o5 = cc("a5.o", extra=["-DW=1"])
    ok(o5 and o5 != o1, "another command line is another key")
    with open(os.path.join(tmp, "bad.cu"), "w") as f:
        f.write("int f() { return }\n")
    b1 = subprocess.run([NVCC, "-arch=sm_90", "-c", "bad.cu", "-o", "b0.o"], cwd=tmp, capture_output=True)
    b2, _ = cc("b1.o", src="bad.cu")
    b3, _ = cc("b2.o", src="bad.cu")
    stored = [f for f in os.listdir(cache) if f.endswith(".json")]
    ok(b2.returncode == b1.returncode != 0 and b2.stderr == b1.stderr == b3.stderr and len(stored) == 2,
       "a failed compile: nvcc's status and message, never stored (%d manifests)" % len(stored),
       b2.stderr.decode(errors="replace"))
    p6 = subprocess.run([WRAP, "--version"], env=env, capture_output=True)
    ok(p6.returncode == 0 and b"Cuda compilation tools" in p6.stdout, "a command it does not cache runs the real nvcc")
    man = [json.load(open(os.path.join(cache, f))) for f in stored]
    deps = [d for m in man for e in m for d in e["deps"]]
    ok(any(d.endswith("h.h") for d in deps) and any("cuda_runtime.h" in d for d in deps),
       "an entry lists every file nvcc read (the source's header and the toolkit's)", deps[:5])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if fails else 0)

#!/usr/bin/env python3
"""CI (no GPU): the student's Numba kernels are cached on disk in the job's
folder (labs/common/py/tenant.py jit_cache_default; docs/python.md "Kernel
caches"), so that a timing run's tenant loads what the check run's
compiled instead of compiling it again after its gate, inside the GPU's
exclusive hold. Debian's Numba, its real CUDA target (not the simulator):
decorating needs no GPU; compiling does, so the cache's hit is measured
on a GPU (tests/bench/alone_bench.sh, a Numba file's time_run).

Checks: cuda.jit caches by default after the tenant's set-up, in
NUMBA_CACHE_DIR; a student's own cache=False still wins; a kernel that
cannot be cached (made by exec: no file to key it) is decorated anyway,
not an error of the student's (plain Numba raises there); a cache that
fails to save or load is a miss, never an exception. Prints TAP."""
import importlib.util, os, shutil, subprocess, sys, tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PY = "/usr/bin/python3"

PROBE = r'''
import importlib.util, json, os, sys
sys.path.insert(0, sys.argv[1])
import tenant
out = {"set": tenant.jit_cache_default()}
from numba import cuda
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
m = load(sys.argv[2], "student")
out["cache"] = type(m.k._cache).__name__
out["own_false"] = type(m.k_off._cache).__name__
out["dir"] = m.k._cache._cache_path
ns = {}
try:
    exec("def g(x):\n    pass\n", {}, ns)
    out["exec"] = type(cuda.jit(ns["g"])._cache).__name__
except Exception as e:
    out["exec"] = "raised %s: %s" % (type(e).__name__, e)
impl = m.k._cache._impl
def broken(*a, **kw):
    raise RuntimeError("cannot pickle")
impl.reduce = broken
try:
    out["save"] = repr(m.k._cache.save_overload(("sig",), object()))
except Exception as e:
    out["save"] = "raised %s" % type(e).__name__
m.k._cache._cache_file.load = broken
try:
    out["load"] = repr(m.k._cache.load_overload(("sig",), cuda.descriptor.cuda_target.target_context))
except Exception as e:
    out["load"] = "raised %s" % type(e).__name__
print(json.dumps(out))
'''

KERNELS = '''from numba import cuda

@cuda.jit
def k(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 2 * i

@cuda.jit(cache=False)
def k_off(x):
    pass
'''

n = 0
fails = 0


def ok(cond, name, detail=""):
    global n, fails
    n += 1
    print(("ok %d - " if cond else "not ok %d - ") % n + name)
    if not cond:
        fails += 1
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)


if importlib.util.find_spec("numba") is None and subprocess.run(
        [PY, "-c", "import numba"], capture_output=True).returncode != 0:
    print("ok 1 - kernel cache # SKIP no Numba (make test-deps installs python3-numba)")
    print("1..1")
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="cugrade-kcache-")
try:
    src = os.path.join(tmp, "kernel.py")
    with open(src, "w") as f:
        f.write(KERNELS)
    cache_dir = os.path.join(tmp, "home", ".numba-cache")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = cache_dir
    p = subprocess.run([PY, "-I", "-B", "-c", PROBE, os.path.join(ROOT, "labs/common/py"), src],
                       capture_output=True, text=True, env=env, timeout=120)
    import json
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        out = {}
    detail = p.stdout[-1500:] + p.stderr[-1500:]
    ok(out.get("set") is True and out.get("cache") == "CUDACache",
       "after the tenant's set-up cuda.jit caches a student's kernel by default", detail)
    ok(str(out.get("dir", "")).startswith(cache_dir),
       "in NUMBA_CACHE_DIR (the tenant's: HOME/.numba-cache, the job's folder)", out)
    ok(out.get("own_false") == "NullCache", "a student's own cache=False still wins", out)
    ok(out.get("exec") == "NullCache",
       "a kernel with no file to key it (made by exec) is decorated, uncached, not an error", out)
    ok(out.get("save") == "None" and out.get("load") == "None",
       "a cache that fails to save or to load is a miss, never the student's exception", out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("1..%d" % n)
sys.exit(1 if fails else 0)

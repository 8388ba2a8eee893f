"""local.py - `cugrade test`: a student's file against a lab's public cases,
on the student's own machine, with the grader's own harness.

    python3 local.py LAB FILE [--sim] [--cases a,b] [--json]

Runs from an unpacked lab bundle (GET /api/labs/LAB/bundle, which ships this
file): labs/common/py/{owner,tenant,gen}.py, labs/common/*.cu[h],
labs/LAB/{lab.json,lab.py,harness.cu}. The bundle's lab.json lists the
public cases only; the seed is drawn here, per run, like the runner's.

  .py  the trusted owner (owner.py) runs the file in its tenant process,
       exactly as on the grader; on a GPU with CuPy, else (or with --sim) in
       Numba's CUDA simulator on the small cases, saying so.
  .cu  nvcc compiles the file with the lab's flags, the symbol rules of the
       grader's inspection are applied (undefined names against the lab's
       allow-list, names the file may not define, static constructors), and
       it is linked with the lab's harness; on a GPU the harness then runs
       the cases. Without a GPU it stops after the link, saying so.

Each case's output is checked here with the lab's own check (lab.py
reference/sample_ok: the same test the owner applies to every timed sample)
plus the harness's guards (inputs changed, writes past the output). The
grader's judge may say more (its messages, the bug catalogue); pass or fail
agree on these cases (tests/client/local_test.t).

Exit: 0 every case run passed (or: compiled and linked, no GPU to run);
1 a case failed; 2 compile_error or rejected; 4 something this machine lacks
(no Numba, no nvcc, ...), with what to do. Nothing here is a grade.
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LABS = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

NOTE = "local, public cases only, not a grade"
DEFAULT_ARCH = "sm_90"
SIM_MAX_ELEMENTS = 1 << 16   # the simulator runs a thread at a time: small cases only
POISON = 0x7FDEADED
EXIT_OK, EXIT_FAILED, EXIT_VERDICT, EXIT_MISSING = 0, 1, 2, 4


class Missing(Exception):
    """Something this machine lacks: what, and what to do."""


def load_lab(lab):
    with open(os.path.join(LABS, lab, "lab.json")) as f:
        doc = json.load(f)
    ns = {}
    path = os.path.join(LABS, lab, "lab.py")
    if os.path.exists(path):
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), ns)
    return doc, ns


def case_elements(lab_ns, params):
    """Elements of every buffer of a case (inputs and outputs)."""
    n = 0
    for spec in lab_ns.get("INPUTS", []) + lab_ns.get("OUTPUTS", []):
        size = 1
        for d in spec[2](params):
            size *= int(d)
        n += size
    return n


def need_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise Missing("NumPy is not installed here; the local checks need it.\n"
                      "Install it (pip install numpy), or use the course's NGC container.")


def have_gpu():
    """(True, name) when nvidia-smi sees a GPU, else (False, why)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "no nvidia-smi"
    try:
        r = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "nvidia-smi failed (%s)" % e
    line = r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else ""
    return (True, line) if line else (False, "nvidia-smi sees no GPU")


# ------------------------------------------------------------ the channel

def read_records(path):
    data = open(path, "rb").read()
    recs, pos = [], 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        try:
            r = json.loads(data[pos:nl])
        except ValueError:
            break
        pos = nl + 1
        n = int(r.get("bytes") or 0)
        r["_payload"] = data[pos:pos + n]
        pos += n
        recs.append(r)
    return recs


def regen_input(np, gen, lab_ns, params, case_seed, name, at=None):
    """One input of the case as the harness made it, flat: the whole of it
    (gen.generate makes it a chunk at a time); or, given at (an array of
    positions), only the elements there."""
    for iname, _, shape, genname, k in lab_ns["INPUTS"]:
        if iname == name:
            break
    else:
        raise KeyError(name)
    count = 1
    for d in shape(params):
        count *= int(d)
    own = (lab_ns.get("GEN") or {}).get(genname)
    seed = gen.stream(case_seed, k)
    if at is not None:
        return gen.generate(np, genname, seed, 0, 0, params, own, at=at)
    return gen.generate(np, genname, seed, 0, count, params, own)


def regen_inputs(np, gen, lab_ns, params, case_seed):
    """The inputs the judge needs, by name: the lab's judge_inputs (lab.py)
    when it has one (it asks for the parts it needs), else every input."""
    def make(name, at=None):
        return regen_input(np, gen, lab_ns, params, case_seed, name, at)
    if "judge_inputs" in lab_ns:
        return lab_ns["judge_inputs"](np, make, params)
    return {name: make(name) for name, *_ in lab_ns["INPUTS"]}


def outputs_of(np, lab_ns, rec):
    """The case's output(s) from its record: one float32 array, or (a lab
    with several outputs) a dict by name."""
    payload = rec["_payload"]
    if rec.get("dtype") != "mixed":
        return np.frombuffer(payload, dtype=np.float32)
    outs, pos = {}, 0
    for o in rec.get("outputs", []):
        dt = np.dtype(o["dtype"])
        outs[o["name"]] = np.frombuffer(payload[pos:pos + o["count"] * dt.itemsize], dtype=dt)
        pos += o["count"] * dt.itemsize
    return outs


def judge(np, gen, lab_ns, params, seed, rec):
    """(passed, message) for one case record."""
    if rec.get("status") != "ok":
        msg = rec.get("error") or rec.get("message") or rec.get("status")
        return False, "%s: %s" % (rec.get("status"), msg)
    if rec.get("inputs_modified"):
        return False, "your code changed its input (%s elements)" % rec.get("modified_count")
    if rec.get("oob_writes"):
        return False, "your code wrote past the end of the output (%s guard words changed)" \
            % rec.get("oob_writes")
    out = outputs_of(np, lab_ns, rec)
    first = out if not isinstance(out, dict) else next(iter(out.values()))
    if first.dtype == np.float32 and first.size and \
            (first.view(np.uint32) == POISON).any():
        k = int((first.view(np.uint32) == POISON).sum())
        return False, "%d output element%s never written (still the harness's poison NaN)" \
            % (k, "" if k == 1 else "s")
    cs = gen.case_seed(gen.seed_parse_wide(seed), rec["name"])
    ref = lab_ns["reference"](np, regen_inputs(np, gen, lab_ns, params, cs))
    if lab_ns["sample_ok"](np, ref, out):
        return True, ""
    return False, "wrong output: the lab's check fails (submit for the grader's detailed message)"


def judge_all(recs, lab, lab_ns, cases, seed, names):
    """{case: {"passed", "message", "ms"}} for the case records, and the
    compile_error / harness_error message if one came."""
    import numpy as np
    import gen
    got, problem = {}, None
    for r in recs:
        if r.get("type") == "compile_error":
            problem = ("compile_error", r.get("message", ""))
        elif r.get("type") == "harness_error":
            problem = ("harness_error", r.get("message", ""))
        elif r.get("type") == "case" and r.get("name") in names:
            ok, msg = judge(np, gen, lab_ns, cases[r["name"]], seed, r)
            got[r["name"]] = {"passed": ok, "message": msg, "ms": r.get("call_ms")}
    for n in names:
        if n not in got and not problem:
            got[n] = {"passed": False, "message": "not run: the program stopped before this case",
                      "ms": None}
    return got, problem


def new_seed():
    return os.urandom(16).hex()


# ------------------------------------------------------------ Python files

def run_python(lab, path, doc, lab_ns, opts):
    need_numpy()
    try:
        import numba  # noqa: F401
    except ImportError:
        raise Missing("Numba is not installed here: this lab's Python files use it.\n"
                      "Install it (pip install numba), or use the course's NGC container.")
    sim = opts["sim"] or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    where = ""
    if not sim:
        gpu, why = have_gpu()
        if gpu:
            try:
                import cupy  # noqa: F401
                where = "GPU: " + why
            except ImportError:
                sim = True
                where = ("Numba's CUDA simulator: the grader's harness needs CuPy on a GPU, and "
                         "CuPy is not installed here (pip install cupy-cuda12x)")
        else:
            sim = True
            where = "Numba's CUDA simulator (no GPU here: %s)" % why
    if sim and not where:
        where = "Numba's CUDA simulator"
    cases = {c["name"]: c["params"] for c in doc["cases"]}
    names, skipped = pick_cases(doc, lab_ns, cases, opts, sim)
    seed = new_seed()
    tmp = tempfile.mkdtemp(prefix="cugrade-test-")
    try:
        chan = os.path.join(tmp, "channel")
        env = dict(os.environ, CUGRADE_SEED=seed, CUGRADE_LABS=LABS)
        if sim:
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        recs, rc, err = [], 0, ""
        if names:
            with open(chan, "wb") as c:
                p = subprocess.run([sys.executable, "-I", "-B", os.path.join(HERE, "owner.py"), lab,
                                    "check", "--cases", ",".join(names), "--file",
                                    os.path.abspath(path)],
                                   pass_fds=(3,), preexec_fn=lambda: os.dup2(c.fileno(), 3),
                                   stdin=subprocess.DEVNULL, capture_output=True, env=env,
                                   timeout=opts["timeout"])
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
            recs = read_records(chan)
        got, problem = judge_all(recs, lab, lab_ns, cases, seed, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if problem is None and rc not in (0, 3) and not got:
        problem = ("harness_error", err[-1500:])
    return {"lab": lab, "file": os.path.basename(path), "where": where, "sim": sim,
            "status": problem[0] if problem else "ran", "message": problem[1] if problem else "",
            "cases": got, "order": names, "skipped": skipped}


def pick_cases(doc, lab_ns, cases, opts, sim):
    names = [c["name"] for c in doc["cases"]]
    if opts.get("cases"):
        want = opts["cases"].split(",")
        bad = [w for w in want if w not in cases]
        if bad:
            raise Missing("no public case %s in this lab (public: %s)" % (", ".join(bad),
                                                                          ", ".join(names)))
        names = want
    skipped = []
    if sim:
        keep = [n for n in names if case_elements(lab_ns, cases[n]) <= SIM_MAX_ELEMENTS]
        skipped = [n for n in names if n not in keep]
        names = keep
    return names, skipped


# ------------------------------------------------------------ CUDA files

def find_nvcc():
    """$NVCC, else nvcc on PATH, else $CUDA_HOME/bin/nvcc or
    /usr/local/cuda/bin/nvcc."""
    todo = ("Install the CUDA toolkit 12 or newer and add its bin/ to PATH (or set NVCC), or "
            "use the course's NGC container. `cugrade submit` works without it.")
    if os.environ.get("NVCC"):
        if os.access(os.environ["NVCC"], os.X_OK):
            return os.environ["NVCC"]
        raise Missing("NVCC is set to %s, which is not an executable nvcc.\n%s"
                      % (os.environ["NVCC"], todo))
    for p in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME") or "/nonexistent",
                                                 "bin", "nvcc"), "/usr/local/cuda/bin/nvcc"):
        if p and os.access(p, os.X_OK):
            return p
    raise Missing("nvcc is not installed here (or not on PATH): a .cu file needs the CUDA "
                  "toolkit.\n" + todo)


def nvcc_version(nvcc):
    r = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"release (\d+)\.(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def clean(text, *paths):
    for p in paths:
        if p:
            text = text.replace(p + "/", "").replace(p, "")
    return text


def symbol_allowed(allow, name):
    """(allowed, reason) under lab.json "allow" (common/lab.c's order: a
    forbidden pattern's reason wins)."""
    for pat, why in (allow.get("forbidden") or {}).items():
        if fnmatch.fnmatchcase(name, pat):
            return False, why
    return any(fnmatch.fnmatchcase(name, p) for p in allow.get("undefined") or []), None


COMPILER_UNDEFINED = {
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterManagedVar",
    "__cudaRegisterTexture", "__cudaRegisterSurface", "__cudaInitModule",
    "__cudaPushCallConfiguration", "__cudaPopCallConfiguration", "__cudaLaunchKernel",
    "__cudaLaunchKernel_ptsz", "__cudaGetKernel", "atexit", "exit", "__cxa_guard_acquire",
    "__cxa_guard_release", "__cxa_guard_abort", "__gxx_personality_v0", "_Unwind_Resume",
    "__stack_chk_fail", "_GLOBAL_OFFSET_TABLE_", "__dso_handle"}
DENY_PREFIX = ("cuda", "__cuda", "cublas", "cufft", "curand", "cusparse", "cusolver", "nvrtc",
               "nvtx", "nvJitLink", "__nv", "__libc_", "_IO_", "__cxa_", "__gxx_", "_Unwind_",
               "pthread_", "_ZNSt", "_ZSt", "_ZNKSt", "_Znw", "_Zna", "_Zdl", "_Zda")
DENY_EXACT = {"main", "_start", "_init", "_fini", "malloc", "free", "calloc", "realloc", "write",
              "read", "open", "close", "mmap", "syscall", "fopen", "printf", "fprintf", "puts",
              "fork", "system", "exit", "abort", "dlopen", "dlsym", "clock_gettime",
              "gettimeofday", "getenv", "memcpy", "memset"}


def nm(obj, *flags):
    r = subprocess.run(["nm", "-P"] + list(flags) + [obj], capture_output=True, text=True,
                       timeout=60)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.split()]


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return list(names)
    r = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                       text=True, timeout=60)
    out = r.stdout.splitlines()
    return out if len(out) == len(names) else list(names)


def inspect(obj, doc):
    """None, or (symbol, reason) for the first rule broken; the grader's
    inspection (runner/grade/inspect.c) checks the same rules, and a few more."""
    if not shutil.which("nm"):
        return None   # binutils comes with every nvcc install; without it: the grader decides
    allow = doc.get("allow") or {}
    und = nm(obj, "-u")
    for raw, dem in zip(und, demangle(und)):
        base = dem.split("(")[0]
        if raw in COMPILER_UNDEFINED:
            continue
        oks = [symbol_allowed(allow, n) for n in (raw, dem, base)]
        why = next((r for ok, r in oks if not ok and r), None)
        if why:
            return base, "your file uses %s: %s" % (base, why)
        if not any(ok for ok, _ in oks):
            return base, "your file uses %s, which is not on this lab's list of allowed " \
                         "functions." % base
    defined = nm(obj, "-g", "--defined-only")
    for raw, dem in zip(defined, demangle(defined)):
        if raw == doc.get("symbol") or raw.startswith("_Z") and "(" in dem and \
                not dem.startswith(("std::", "operator new", "operator delete")):
            continue
        if raw in DENY_EXACT or raw.startswith(DENY_PREFIX) or \
                (raw[:2] == "cu" and raw[2:3].isupper()):
            return raw, ("your file defines %s: it is a name of the CUDA runtime or the C "
                         "library; defining it would replace the real one inside the grading "
                         "program. Rename it or make it static." % raw)
    ctor = static_constructor(obj)
    if ctor is not None:
        ctor = demangle([ctor])[0] if ctor else ctor
        return ctor, ("your file has a static constructor (%s): code that would run before "
                      "main, before the harness owns the process. Do that work inside your "
                      "function." % (ctor or "a global object's initialisation"))
    if doc.get("symbol") not in defined:
        return doc.get("symbol"), "your file does not define %s (the lab's interface: %s)" % (
            doc.get("symbol"), doc.get("interface"))
    return None


def static_constructor(obj):
    """None, or the name of a function that .init_array would run other
    than nvcc's own registration (__sti____cudaRegisterAll)."""
    if not shutil.which("objdump"):
        return None
    rel = subprocess.run(["objdump", "-r", "-j", ".init_array", obj], capture_output=True,
                         text=True, timeout=60)
    syms = subprocess.run(["objdump", "-t", obj], capture_output=True, text=True, timeout=60)
    funcs = []   # (section, start, size, name)
    for ln in syms.stdout.splitlines():
        m = re.match(r"^([0-9a-f]+)\s.{6}F\s+(\S+)\s+([0-9a-f]+)\s+(.*)$", ln)
        if m:
            funcs.append((m.group(2), int(m.group(1), 16), int(m.group(3), 16), m.group(4)))
    for ln in rel.stdout.splitlines():
        f = ln.split()
        if len(f) < 3 or not f[1].startswith("R_"):
            continue
        sec, _, off = f[2].partition("+")
        off = int(off, 16) if off else 0
        name = next((n for s_, a, z, n in funcs if s_ == sec and a <= off < a + max(z, 1)), sec)
        if "__sti____cudaRegisterAll" not in name:
            return "" if name == sec else name
    return None


def run_cuda(lab, path, doc, lab_ns, opts):
    nvcc = find_nvcc()
    ver = nvcc_version(nvcc)
    res = {"lab": lab, "file": os.path.basename(path), "cases": {}, "order": [], "skipped": [],
           "sim": False, "message": ""}
    if ver and ver < (12, 0):
        raise Missing("this nvcc is CUDA %d.%d; the grader and the lab's harness need CUDA 12 or "
                      "newer.\nInstall a newer CUDA toolkit, or use the course's NGC container."
                      % ver)
    if not os.path.exists(os.path.join(LABS, lab, "harness.cu")):
        raise Missing("this lab takes Python files only (it has no CUDA harness).")
    gpu, why = have_gpu()
    # The GPU's own arch; without one, $CUGRADE_ARCH or sm_90 (the grader's
    # H100/H200 class: code for sm_80+ features such as TF32 compiles).
    arch = "sm_" + why.rsplit(",", 1)[1].strip().replace(".", "") if gpu and "," in why \
        else os.environ.get("CUGRADE_ARCH") or DEFAULT_ARCH
    arch = ["-arch=" + arch] if re.match(r"^sm_\d+a?$", arch) else []
    res["where"] = ("GPU: " + why) if gpu else \
        "no GPU here (%s): compile for %s, inspect and link only, nothing runs" % (
            why, arch[0][6:] if arch else "nvcc's default arch")
    tmp = tempfile.mkdtemp(prefix="cugrade-test-")
    try:
        src = os.path.abspath(path)
        obj = os.path.join(tmp, "student.o")
        r = subprocess.run([nvcc, "-c"] + list(doc.get("nvcc_flags") or []) + arch +
                           [src, "-o", obj], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            res.update(status="compile_error",
                       message=clean(r.stdout + r.stderr, os.path.dirname(src), tmp))
            return res
        bad = inspect(obj, doc)
        if bad:
            res.update(status="rejected", message=bad[1], symbol=bad[0])
            return res
        prog = build_harness(nvcc, lab, doc, arch, obj, tmp, res)
        if not prog:
            return res
        if not gpu:
            res.update(status="compiled", message="compiled, inspected and linked with the "
                       "lab's harness; no GPU here, so no case ran")
            return res
        return run_cuda_cases(prog, lab, doc, lab_ns, opts, tmp, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build_harness(nvcc, lab, doc, arch, obj, tmp, res):
    """The lab's harness built with the public cases and linked with obj;
    the program's path, or None (res says why: ours, not the student's)."""
    with open(os.path.join(tmp, "cases.h"), "w") as f:
        r = subprocess.run([sys.executable, os.path.join(LABS, "common", "gen-cases.py"),
                            os.path.join(LABS, lab, "lab.json")], stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 0:
        res.update(status="harness_error", message="the lab's cases.h: " + r.stderr[-800:])
        return None
    # The harness object depends on the bundle (this folder's version), the
    # GPU's arch and nvcc: kept beside the bundle, built once.
    key = re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(arch) or "default") + "-" + \
        re.sub(r"[^A-Za-z0-9_.-]", "_", nvcc)[-40:]
    cache = os.path.join(LABS, "..", ".build", lab, key)
    harness = os.path.join(cache, "harness.o")
    part = "%s.%d.tmp" % (harness, os.getpid())   # runs at once build their own, one wins
    prog = os.path.join(tmp, "prog")
    steps = [[nvcc, "-c", "-O2", "-I", tmp, "-I", os.path.join(LABS, "common")] + arch +
             [os.path.join(LABS, lab, "harness.cu"), "-o", part],
             [nvcc] + arch + ["-cudart", "static", harness, obj, "-o", prog] +
             ["-l" + x for x in doc.get("link_libs") or []]]
    if os.path.exists(harness):
        steps = steps[1:]
    else:
        os.makedirs(cache, exist_ok=True)
    for cmd in steps:
        i = 0 if part in cmd else 1
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if i == 0 and r.returncode == 0:
            os.replace(part, harness)
        if r.returncode != 0:
            what = "building the lab's harness" if i == 0 else "linking with the lab's harness"
            res.update(status="compile_error" if i == 1 else "harness_error",
                       message="%s failed (is this nvcc the CUDA 12+ the lab needs?):\n%s"
                               % (what, clean(r.stdout + r.stderr, tmp)[-2000:]))
            return None
    return prog


def run_cuda_cases(prog, lab, doc, lab_ns, opts, tmp, res):
    need_numpy()
    cases = {c["name"]: c["params"] for c in doc["cases"]}
    names, _ = pick_cases(doc, lab_ns, cases, opts, False)
    seed = new_seed()
    chan = os.path.join(tmp, "channel")
    with open(chan, "wb") as c:
        p = subprocess.run([prog, "check", "--seed", seed, "--cases", ",".join(names)],
                           pass_fds=(3,), preexec_fn=lambda: os.dup2(c.fileno(), 3),
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=opts["timeout"])
    got, problem = judge_all(read_records(chan), lab, lab_ns, cases, seed, names)
    res.update(status=problem[0] if problem else "ran", cases=got, order=names,
               message=problem[1] if problem else "")
    if p.returncode not in (0, 3) and not got:
        res.update(status="runtime_error", message=p.stderr.decode("utf-8", "replace")[-1500:])
    return res


# ------------------------------------------------------------ report

def exit_status(res):
    if res["status"] in ("compile_error", "rejected"):
        return EXIT_VERDICT
    if res["status"] == "harness_error":
        return EXIT_MISSING
    if any(not c["passed"] for c in res["cases"].values()) or res["status"] == "runtime_error":
        return EXIT_FAILED
    return EXIT_OK


def render(res):
    out = ["cugrade test %s %s (%s)" % (res["lab"], res["file"], NOTE),
           "where: " + res.get("where", "")]
    if res["status"] in ("compile_error", "rejected", "harness_error", "runtime_error"):
        out.append({"compile_error": "did not compile:", "rejected": "rejected:",
                    "harness_error": "the local harness failed (not your code):",
                    "runtime_error": "crashed while running:"}[res["status"]])
        out.append(res["message"].rstrip())
    elif res["status"] == "compiled":
        out.append(res["message"])
    rows = [(n, "pass" if res["cases"][n]["passed"] else "FAIL",
             "%.2f ms" % res["cases"][n]["ms"] if res["cases"][n].get("ms") is not None else "-",
             res["cases"][n]["message"]) for n in res["order"] if n in res["cases"]]
    if rows:
        w = max(len(r[0]) for r in rows + [("case",)])
        out.append("%-*s  %-6s %-10s %s" % (w, "case", "result", "call", "message"))
        out += ["%-*s  %-6s %-10s %s" % ((w,) + r) for r in rows]
        out.append("%d of %d public cases passed here." % (
            sum(r[1] == "pass" for r in rows), len(rows)))
    if res.get("skipped"):
        out.append("not run in the simulator (too large for it): %s; they run on a GPU and on "
                   "the grader." % ", ".join(res["skipped"]))
    out.append("This is a local test on public cases only, not a grade: submit to be graded "
               "(hidden cases, sanitizers and timing run there).")
    return "\n".join(out) + "\n"


def main(argv):
    opts = {"sim": False, "cases": None, "json": False, "timeout": 1800}
    args = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--sim", "--json"):
            opts[a[2:]] = True
        elif a in ("--cases", "--timeout") and i + 1 < len(argv):
            opts[a[2:]] = argv[i + 1] if a == "--cases" else float(argv[i + 1])
            i += 1
        else:
            args.append(a)
        i += 1
    if len(args) != 2:
        sys.stderr.write("usage: local.py LAB FILE [--sim] [--cases a,b] [--json]\n")
        return EXIT_MISSING
    lab, path = args
    try:
        doc, lab_ns = load_lab(lab)
        if path.endswith(".py"):
            if "INPUTS" not in lab_ns or "sample_ok" not in lab_ns:
                raise Missing("this lab's Python files cannot be tested locally yet (its bundle "
                              "has no lab.py checks); submit them to be graded.")
            res = run_python(lab, path, doc, lab_ns, opts)
        elif path.endswith(".cu"):
            res = run_cuda(lab, path, doc, lab_ns, opts)
        else:
            raise Missing("%s: cugrade test takes a .cu or a .py file." % path)
    except Missing as e:
        sys.stderr.write("cugrade test: %s\n" % e)
        return EXIT_MISSING
    except subprocess.TimeoutExpired:
        sys.stderr.write("cugrade test: the run took longer than %d s and was stopped "
                         "(--timeout).\n" % opts["timeout"])
        return EXIT_FAILED
    if opts["json"]:
        sys.stdout.write(json.dumps(res, indent=1) + "\n")
    else:
        sys.stdout.write(render(res))
    return exit_status(res)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

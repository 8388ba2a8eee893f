"""Shared by tests/runner/python*.t: a root with the real labs/ (the owner,
the tenant, the reduction lab's lab.json and lab.py), a rubric of the
reduction lab with the cases the CUDA simulator can run (1 and 1000; no
speed lines: the simulator's times mean nothing), and a lab build that
installs CI's stand-in judge (tests/runner/simjudge.py; the real judge
needs a GPU). grade() runs the real runner binary: `cugrade-runner grade`
with CUGRADE_NO_GPU=1, in the real sandbox."""
import functools, json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakelab"))
from suite import ROOT, RUNNER, failures, link_cuda, ok as suite_ok  # noqa: E402,F401  (paths, TAP: failures for the suites)
ok = functools.partial(suite_ok, lines=40)  # a failure prints 40 lines of its detail
SEED = "0123456789abcdef0123456789abcdef"


def need():
    """CI runs as root with nvcc and Debian's python3-numba: a suite that
    cannot run there is a failure, not a skip."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (the sandbox)")
    if subprocess.run(["/usr/bin/python3", "-c", "import numba, numpy"],
                      capture_output=True).returncode != 0:
        missing.append("python3-numba (sh deploy/install-deps.sh test)")
    if missing:
        print("not ok - needs " + ", ".join(missing))
        sys.exit(1)


def make_root(lab_extra=None):
    tmp = tempfile.mkdtemp(prefix="cugrade-py-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "rubrics"))
    shutil.copytree(os.path.join(ROOT, "labs/common"), os.path.join(root, "labs/common"))
    shutil.copytree(os.path.join(ROOT, "labs/reduction"), os.path.join(root, "labs/reduction"))
    if lab_extra:   # keys merged into the copy's lab.json (e.g. "python": {"hide": ...})
        lj = os.path.join(root, "labs/reduction/lab.json")
        with open(lj) as f:
            doc = json.load(f)
        doc.update(lab_extra)
        with open(lj, "w") as f:
            json.dump(doc, f)
    judge = os.path.join(tmp, "simjudge.sh")
    with open(judge, "w") as f:
        f.write('#!/bin/sh\nCUGRADE_ROOT=%s exec /usr/bin/python3 %s "$@"\n'
                % (root, os.path.join(ROOT, "tests/runner/simjudge.py")))
    with open(os.path.join(root, "labs/build-lab.sh"), "w") as f:
        f.write('#!/bin/sh\nset -eu\nmkdir -p "$2"\ncp %s "$2/judge"\nchmod 755 "$2/judge"\n' % judge)
    with open(os.path.join(ROOT, "rubrics/reduction.json")) as f:
        rub = json.load(f)
    rub["correctness"] = [c for c in rub["correctness"] if c["case"] in ("1", "1000")]
    rub["speed"] = []
    with open(os.path.join(root, "rubrics/reduction.json"), "w") as f:
        json.dump(rub, f)
    fake_cuda(tmp)
    for d, _, files in os.walk(tmp):
        os.chmod(d, 0o755)
        for x in files:
            os.chmod(os.path.join(d, x), 0o755)
    return tmp, root


def make_timed_root(case, run_seconds, timing_device_mb=None):
    """make_root for a suite that times through the runner: the case named
    case is the timing case (the simulator's speed: "1" or "1000"), every
    run capped at run_seconds (no naive measure in CI, so no derived
    limit), and a speed line in the rubric (the bandwidth share, one tier).
    Returns (tmp, root)."""
    with open(os.path.join(ROOT, "labs/reduction/lab.json")) as f:
        lab = json.load(f)
    limits = {"compile_seconds": 60, "run_seconds": run_seconds, "memory_mb": 16384,
              "device_mb": 64, "derive": {"factor": 1, "floor_seconds": 1, "startup_seconds": 0}}
    if timing_device_mb is not None:
        limits["timing_device_mb"] = timing_device_mb
    tmp, root = make_root({"timing_case": case, "baselines": [], "limits": limits,
                           "cases": [dict(c, timing=(c["name"] == case)) for c in lab["cases"]]})
    rp = os.path.join(root, "rubrics/reduction.json")
    with open(rp) as f:
        rub = json.load(f)
    rub["speed"] = [{"name": "share of copy bandwidth", "metric": "bandwidth_share",
                     "requires_correct": True, "tiers": [{"name": "half", "threshold": 0.5, "points": 5}]}]
    with open(rp, "w") as f:
        json.dump(rub, f)
    return tmp, root


# A stand-in compute-sanitizer (CI has none, and no GPU): it prints the
# tool's banner, runs its target (the Python harness, in the simulator) and
# exits with its status, or, when the student's file names a fixture
# ("# cugrade-fixture: pysan-racecheck.txt", a real capture from a GPU under
# tests/runner/fixtures/), prints that capture, the student's file renamed
# to this run's, and exits 86 as the real tool
# does when it found errors. "# cugrade-fixture: nostart" runs the harness
# with a lab that does not exist (the harness fails before the student's
# code); "# cugrade-fixture: nobanner" is a tool that does not start at all.
STANDIN = """#!/bin/sh
tool=$2
shift 8
for a in "$@"; do [ "$a" = --gate ] || last=$a; done
fx=$(sed -n 's/^# cugrade-fixture: *//p' "$last" | head -1)
[ "$fx" = nobanner ] && { echo "error while loading shared libraries" >&2; exit 127; }
echo "========= COMPUTE-SANITIZER"
if [ "$fx" = nostart ]; then
  a1=$1 a2=$2 a3=$3 a4=$4 a5=$5; shift 6
  "$a1" "$a2" "$a3" "$a4" "$a5" nolab "$@"; exit $?
fi
"$@"
rc=$?
# (the capture's student file was /work/kernel.py: this run's is $last)
case "$fx" in pysan-$tool*) sed "s|/work/kernel\.py|$last|g; s| kernel\.py:| ${last##*/}:|g" "$(dirname "$0")/../fixtures/$fx"; exit 86;; esac
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
"""


FAKE_CUDA = {}   # tmp -> its stand-in CUDA_HOME


def fake_cuda(tmp):
    """A CUDA_HOME whose bin/ links the real toolkit's programs and holds
    the stand-in compute-sanitizer, with the fixtures beside it (the sandbox
    binds CUDA_HOME at its path: it lives outside tmp, which the hostile
    suite checks the student cannot see; removed at exit)."""
    import atexit
    fake = tempfile.mkdtemp(prefix="cugrade-cuda-")
    os.chmod(fake, 0o755)
    atexit.register(shutil.rmtree, fake, True)
    FAKE_CUDA[tmp] = fake
    cs = os.path.join(link_cuda(fake, own=("compute-sanitizer",)), "compute-sanitizer")
    with open(cs, "w") as f:
        f.write(STANDIN)
    shutil.copytree(os.path.join(ROOT, "tests/runner/fixtures"), os.path.join(fake, "fixtures"),
                    ignore=shutil.ignore_patterns("*.cu"))
    for d, _, files in os.walk(fake):
        os.chmod(d, 0o755)
        for x in files:
            os.chmod(os.path.join(d, x), 0o755)
    return fake


def grade(tmp, root, name, source, seed=SEED):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(source)
    env = dict(os.environ, CUGRADE_NO_GPU="1", CUDA_HOME=FAKE_CUDA.get(tmp, "/usr/local/cuda"))
    p = subprocess.run([RUNNER, "grade", "--root", root, "--lab", "reduction", "--file", path,
                        "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                        "--arch", "sm_90", "--seed", seed],
                       capture_output=True, text=True, timeout=300, env=env)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return {"status": "unparsable", "result": {}}, p.stderr + p.stdout
    return doc, p.stderr


# The judges' own record parser (labs/common/judge_parse.h) built with the
# host's C compiler: it prints each string field of a record it reads, then
# END, or MALFORMED for one it refuses (a record that is not flat, ...).
PARSER = r'''
#include "judge_parse.h"
static struct jd_obj o;
static char line[1 << 20];
int main(void)
{
    while (fgets(line, sizeof line, stdin)) {
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n')
            line[--l] = 0;
        jd_obj_clear(&o);
        if (jd_parse_obj(line, l, &o) != 0) {
            printf("MALFORMED\n");
            continue;
        }
        for (int k = 0; k < o.n; k++)
            if (o.v[k].type == JD_STR)
                printf("%s=%zu:%s\n", o.v[k].key, strlen(o.v[k].str), o.v[k].str);
        printf("END\n");
    }
    return 0;
}
'''


def judge_parser(tmp):
    """Build the judges' parser in tmp; returns (parse, cc's stderr or "").
    parse(data) reads channel bytes of one record per line and returns,
    per record, {key: (length, value)} of its string fields, or None where
    the judge would refuse it; and the parser's raw output."""
    src, exe = os.path.join(tmp, "parser.c"), os.path.join(tmp, "parser")
    with open(src, "w") as f:
        f.write(PARSER)
    cc = subprocess.run(["cc", "-std=c17", "-O1", "-I", os.path.join(ROOT, "labs/common"), src,
                         "-o", exe], capture_output=True, text=True)

    def parse(data):
        out = subprocess.run([exe], input=data, capture_output=True).stdout.decode()
        parsed, cur = [], {}
        for ln in out.split("\n"):
            if ln in ("END", "MALFORMED"):
                parsed.append(cur if ln == "END" else None)
                cur = {}
            elif "=" in ln:
                k, rest = ln.split("=", 1)
                n, _, v = rest.partition(":")
                cur[k] = (int(n), v)
            elif cur and ln:   # a field with a newline in it: the rest of its value
                k = list(cur)[-1]
                cur[k] = (cur[k][0], cur[k][1] + "\n" + ln)
        return parsed, out
    return parse, "" if cc.returncode == 0 else cc.stderr[-2000:] or "cc failed"


def cases(doc):
    return {c["name"]: c for c in doc["result"].get("cugrade", {}).get("cases", [])}


GOOD = '''from numba import cuda
import numpy as np

THREADS = 256


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * THREADS + t
    s[t] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    k = THREADS // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def reduce_sum(d_in, d_out):
    zero[1, 1](d_out)
    blocks = (d_in.shape[0] + THREADS - 1) // THREADS
    partial[blocks, THREADS](d_in, d_out)
'''

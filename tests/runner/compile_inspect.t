#!/usr/bin/env python3
"""CI (no GPU, real nvcc, real sandbox): student files through
`cugrade-runner grade --stop-after inspect`: good files compile and pass the
symbol inspection; cuBLAS, dlopen/dlsym, a redefined cudaEventElapsedTime, a
static constructor, a syntax error and an #include of /etc/shadow each get
the right status and message. The compiler's full steps run at nice 10
(CUGRADE_COMPILE_NICE), the front pass at nice -5 (COMPILE_FRONT_NICE):
seen from outside, in /proc, while a file compiles. Prints TAP lines."""
import json, os, shutil, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FIX, ROOT, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import grade as run_grade  # noqa: E402  (a starved compile retried)
from suite import ours  # noqa: E402  (its runner's compiles, not other suites' at their own niceness)

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-runner-t-")
os.chmod(tmp, 0o755)  # the sandbox may drop to an unprivileged uid before bwrap: it must traverse

def grade(lab, fixture, stop="inspect", env=None, extra=()):
    return run_grade(["--lab", lab, "--file", os.path.join(FIX, fixture), "--stop-after", stop,
                      "--root", ROOT, "--cache", os.path.join(tmp, "cache"),
                      "--work", os.path.join(tmp, "work"), "--arch", "sm_90"] + list(extra), env=env)[0]

TOOLS = {"cicc", "cudafe++"}  # both name the file they work on


def niceness_seen(env):
    """Compile good_matmul.cu (to the link) while polling /proc: the set
    of (program, niceness) of the toolchain's processes seen."""
    seen, stop = set(), threading.Event()

    def poll():
        while not stop.is_set():
            for pid in os.listdir("/proc"):
                try:
                    st = open(f"/proc/{pid}/stat").read()
                except OSError:
                    continue
                comm, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
                if comm not in TOOLS:
                    continue
                try:  # the student's file, not the lab's harness built at the start
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
                except OSError:
                    continue
                if "orig_src_file_name" in cmd.replace("-", "_") and ROOT not in cmd and ours(int(pid)):
                    seen.add((comm, int(rest[16])))  # field 19: nice
                    try:  # "/autogroup-123 nice 10": the session's share (bwrap.c)
                        ag = open(f"/proc/{pid}/autogroup").read().split()
                        seen.add((comm, "autogroup", int(ag[-1])))
                    except (OSError, ValueError, IndexError):
                        pass
                    try:
                        envs = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                    except OSError:
                        continue
                    if b"GLIBC_TUNABLES=glibc.malloc.hugetlb=1" in envs:
                        seen.add((comm, "hugetlb"))
            time.sleep(0.01)
    t = threading.Thread(target=poll)
    t.start()
    try:
        d = grade("matmul", "good_matmul.cu", stop="link", env=env)
    finally:
        stop.set()
        t.join()
    return d, seen


try:
    p = subprocess.run([RUNNER, "--help"], capture_output=True, text=True)
    ok(p.returncode == 0 and "--token-file" in p.stdout and "grade --lab" in p.stdout, "--help prints the usage")

    for lab, f in [("matmul", "good_matmul.cu"), ("reduction", "good_reduction.cu"), ("embedding", "good_embedding.cu")]:
        d = grade(lab, f)
        ok(d["status"] == "graded" and d["result"]["cugrade"].get("stopped_after") == "inspect"
           and d["result"]["cugrade"].get("rejection") is None,
           f"{f} compiles in the sandbox and passes inspection", json.dumps(d)[:2000])

    # Front pass at -5, the full compile's and the link's steps at 10 (the
    # lab's harness, built by the first grade above at the runner's start,
    # is cached by now).
    d, seen = niceness_seen({"CUGRADE_COMPILE_NICE": None})  # tests/run.sh sets 0
    full = {x[1] for x in seen if x[0] == "cicc" and len(x) == 2}
    ok(d["status"] == "graded" and full == {10} and ("cudafe++", -5) in seen,
       "the full compile runs at nice 10, the front pass at -5", sorted(seen, key=str))
    # This kernel groups CPU time by session (sched_autogroup_enabled=1 on
    # the CI machine, as on most distributions'): the run's session has the
    # same nice, or its task's nice would weigh only inside the session.
    agon = open("/proc/sys/kernel/sched_autogroup_enabled").read().strip() == "1" \
        if os.path.exists("/proc/sys/kernel/sched_autogroup_enabled") else False
    ok(agon and {x[2] for x in seen if x[0] == "cicc" and len(x) == 3} == {10} and
       ("cudafe++", "autogroup", -5) in seen,
       "and so do their sessions (autogroup nice 10 and -5: a share of the CPUs against other sessions)",
       sorted(seen, key=str))
    ok(("cudafe++", -5) in seen and not any(x[1] == "hugetlb" for x in seen),
       "no toolchain step asks glibc for huge pages (GLIBC_TUNABLES: ~1 s more a front pass here)",
       sorted(seen, key=str))
    d, seen = niceness_seen({"CUGRADE_COMPILE_NICE": "0", "CUGRADE_FRONT_SECONDS": "0"})
    ok(d["status"] == "graded" and {x[1] for x in seen if x[0] == "cicc" and len(x) == 2} == {0},
       "CUGRADE_COMPILE_NICE=0: the full compile at the runner's priority", sorted(seen, key=str))

    # Harmless parts of libstdc++ (containers, std::string, exceptions) are
    # allowed; its file, stream and thread APIs are not (docs/runner.md).
    d = grade("matmul", "std_containers_matmul.cu")
    ok(d["status"] == "graded" and d["result"]["cugrade"].get("rejection") is None,
       "std::map, std::string, std::unordered_map and a std::runtime_error pass inspection", json.dumps(d)[:2000])
    d = grade("matmul", "std_fstream_matmul.cu")
    rej = d["result"]["cugrade"].get("rejection") or {}
    ok(d["status"] == "rejected" and rej.get("symbol", "").startswith("std::"),
       "std::ifstream is rejected", json.dumps(d)[:2000])

    cases = [
        ("std_thread_matmul.cu", "rejected", "std::thread::_M_start_thread", "threads are not allowed"),
        ("cublas_matmul.cu", "rejected", "cublasCreate_v2", "cuBLAS is not allowed"),
        ("dlopen_matmul.cu", "rejected", "dlopen", "loading libraries at run time"),
        ("define_event_elapsed.cu", "rejected", "cudaEventElapsedTime", "CUDA runtime"),
        ("define_write.cu", "rejected", "write", "C library"),
        ("static_ctor.cu", "rejected", "_GLOBAL__sub_I", "static constructor"),
        ("attr_ctor.cu", "rejected", "before_main", "static constructor"),
        ("raw_syscall.cu", "rejected", "matmul", "raw syscall"),
    ]
    for f, status, sym, why in cases:
        d = grade("matmul", f)
        rej = d["result"]["cugrade"].get("rejection") or {}
        ok(d["status"] == status and sym in rej.get("symbol", "") and why in rej.get("reason", "")
           and why in d["result"]["output"] and d["result"]["score"] == 0,
           f"{f}: {status}, names {sym} and why", json.dumps(d)[:2000])

    d = grade("matmul", "syntax_error.cu")
    log = d["result"]["cugrade"].get("compile_log") or ""
    ok(d["status"] == "compile_error" and "syntax_error.cu(6): error" in log, "a syntax error: compile_error with file(line)", json.dumps(d)[:2000])
    ph = d["result"]["cugrade"].get("phases") or {}
    ok("front" in ph and "compile" not in ph, "the front pass answered it: no full compile ran", ph)
    # The front pass has its own short limit (compile.h: a hostile file
    # that is slow to parse gives its front slot back): past it, the job
    # goes on to the full compile, which gives the verdict. Here the limit
    # is cut to 0.05 s so that any file passes it.
    d = grade("matmul", "syntax_error.cu", env={"CUGRADE_FRONT_SECONDS": "0.05"})
    ph = d["result"]["cugrade"].get("phases") or {}
    log = d["result"]["cugrade"].get("compile_log") or ""
    ok(d["status"] == "compile_error" and "syntax_error.cu(6): error" in log and "compile" in ph and
       ph.get("front", 9) < 1.0,
       "past the front pass's limit (0.05 s here) the full compile answers the syntax error "
       "(front %.2f s, compile %.2f s)" % (ph.get("front", -1), ph.get("compile", -1)), json.dumps(d)[:2000])
    d = grade("matmul", "good_matmul.cu", env={"CUGRADE_FRONT_SECONDS": "0.05"})
    ok(d["status"] == "graded" and d["result"]["cugrade"].get("stopped_after") == "inspect",
       "and a correct file past it compiles as before", json.dumps(d)[:2000])

    # The compile log has no sandbox paths (compile.c, compile_log_clean).
    # The syntax error above cannot show it: nvcc names the file as given,
    # relative to /work, so its raw log never held one. These two do: ptxas
    # names nvcc's intermediate /tmp/tmpxft_* file, and an #include of an
    # absolute path under /work names that path.
    good = open(os.path.join(FIX, "good_matmul.cu")).read()
    for name, src, said, path in [
            ("ptx_error.cu", '__global__ void kx(float* o) { asm volatile("not_a_ptx_op;"); }\n' + good,
             "not_a_ptx_op", "/tmp/tmpxft"),
            ("include_work.cu", '#include "/work/no_such_header.cuh"\n' + good,
             "no_such_header.cuh", "/work/")]:
        with open(os.path.join(tmp, name), "w") as f:
            f.write(src)
        d = grade("matmul", os.path.join(tmp, name))
        log = d["result"]["cugrade"].get("compile_log") or ""
        ok(d["status"] == "compile_error" and said in log and path not in log,
           "%s: the compile log names the error (%s) and has no sandbox path (%s)" % (name, said, path),
           log)

    # The sandbox failing before nvcc starts is ours, never a compile_error:
    # no bwrap at all, and a "bwrap" that exits at once without starting the
    # command (as it does when a bind source is missing or namespaces are
    # refused: the ready pipe never gets its byte).
    for bw, what in [("/nonexistent/bwrap", "a missing bwrap"), ("/bin/false", "a bwrap that fails to set up")]:
        d = grade("matmul", "good_matmul.cu", env={"CUGRADE_BWRAP": bw})
        out = d["result"].get("output", "")
        ok(d["status"] == "system_error" and "compile sandbox failed" in out and
           not d["result"]["cugrade"].get("compile_log"),
           f"{what} ({bw}): the compile step is a system_error, not a compile_error", json.dumps(d)[:2000])

    d = grade("matmul", "include_shadow.cu")
    log = d["result"]["cugrade"].get("compile_log") or ""
    shadow = open("/etc/shadow").read() if os.path.exists("/etc/shadow") else ""
    root_line = shadow.split("\n")[0] if shadow else "root:"
    ok(d["status"] == "compile_error" and root_line not in log and "/etc/shadow" in log,
       "#include \"/etc/shadow\" shows nothing of it: compile_error", log)
    # Not there at all (bwrap.c binds only the few files of /etc the
    # toolchain reads), not merely unreadable: the box's uid would hide a
    # bound /etc/shadow too ("Permission denied"), and the check above would
    # pass with the whole of /etc in the sandbox.
    ok("No such file" in log and "Permission denied" not in log,
       "/etc/shadow is not in the compile sandbox at all (No such file, not Permission denied)", log)

    # The link wraps the student's CUDA allocators into the harness's ledger
    # (labs/common/harness_common.cu): an out-of-memory in the harness is
    # then charged to whoever holds the memory. With --wrap the harness's
    # weak __real_ references are resolved to the runtime; without it they
    # would stay weak and undefined.
    work = os.path.join(tmp, "work")
    d = grade("reduction", "leak_reduction.cu", stop="link", extra=["--keep-jobs"])
    progs = [os.path.join(dp, "prog") for dp, dn, fn in os.walk(work) if "prog" in fn]
    syms = subprocess.run(["nm", progs[0]], capture_output=True, text=True).stdout if progs else ""
    ok(d["status"] == "graded" and d["result"]["cugrade"].get("stopped_after") == "link" and
       " T __wrap_cudaMalloc" in syms and " T __wrap_cudaFree" in syms and "__real_cudaMalloc" not in syms,
       "the student's program is linked with the harness's allocation ledger (--wrap cudaMalloc/cudaFree)",
       json.dumps(d)[:1500] + " progs: %s" % progs)
    if progs:
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", progs[0]], capture_output=True, text=True).stdout
        body = dis.split("<reduce_sum>:", 1)[1].split("\n\n", 1)[0] if "<reduce_sum>:" in dis else ""
        ok("__wrap_cudaMalloc" in body or "cudaMallocIf" in body,
           "the student's cudaMalloc goes through the ledger", body[:1500])
finally:
    # The job kept above (--keep-jobs) keeps its work tmpfs mounted on
    # the host, by design: it is for looking into. Ours to take down.
    for line in open("/proc/self/mounts").read().splitlines():
        if line.split()[1].startswith(tmp + "/"):
            subprocess.run(["umount", "-l", line.split()[1]], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)

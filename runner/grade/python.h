/*
 * python.h - Python submissions (Numba, CuPy): how their runs are started
 * (docs/python.md). A .py file is not compiled and linked with a harness:
 * the trusted owner (labs/common/py/owner.py) runs in the sandbox, owns the
 * result channel, the buffers and the clock, and starts the student's code
 * in a process of its own (labs/common/py/tenant.py). The job's phases are
 * the same as for CUDA C (job.h) less the inspection and the link.
 */
#ifndef CUGRADE_PYTHON_H
#define CUGRADE_PYTHON_H

#include "runner/run/run.h"
#include "runner/grade/score.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Seconds added to a Python run's derived wall limit (limit.h): the owner's
 * and the tenant's interpreters, CuPy's and Numba's imports and the JIT's
 * warm-up call, which the naive CUDA reference the limits come from does
 * not pay (measured on an H100: a reduction check run of the owner took
 * 14 s, most of it CuPy's and Numba's compiles). Still capped by the lab's
 * run_seconds. */
#define PYTHON_STARTUP_SECONDS 20.0

/* 1 when filename names a Python submission (ends in ".py"). */
int python_submission(const char *filename);

/* The Python installation's root when it lies outside /usr (a virtual
 * environment, e.g. /opt/torch/.venv on the device tool's image): the
 * prefix of $CUGRADE_PYTHON, PREFIX/bin/NAME, or NULL. Every Python run
 * (the syntax check, the owner and the tenant) gets it bound read-only at
 * the same path; its interpreter may then live in it. */
const char *python_root(void);

/* The bind of python_root() into *out, when there is one outside /usr.
 * Returns 1 or 0. */
int python_root_bind(struct sandbox_bind *out);

/* The interpreter every Python run uses, inside the sandbox as outside:
 * $CUGRADE_PYTHON when it is absolute and under /usr or python_root()
 * (the sandbox binds /usr read-only, the root when there is one, nothing else
 * of the host's), else /usr/bin/python3. A venv's interpreter is a link to
 * its base one, which must be under /usr. */
const char *python_interpreter(void);

/* Start compiling python_root()'s bytecode in place: its interpreter runs
 * `-I -m compileall -qq -j 0 ROOT/lib`, which writes a __pycache__ .pyc
 * for every module that has none or a stale one, and imports nothing it
 * compiles. Why: a root installed with PYTHONDONTWRITEBYTECODE (the GPU
 * image's venv: none for torch, numpy or sympy) made every process of ours
 * compile those modules' source at each import, and every run is -B: on
 * an H200 host `import torch` took 5.8-7.0 s of CPU and a trainer's first
 * optimizer step (torch._dynamo) 6.4 s more, four trainers a profiling job
 * (docs/python.md, "Bytecode"). The child is kept for python_bytecode_wait
 * and python_bytecode_reaped. Nothing starts without a root outside /usr
 * (Debian's packages come compiled), a ROOT/lib or a fork; a root we cannot
 * write leaves the imports as they were. */
void python_bytecode_start(void);

/* Wait for python_bytecode_start's child, if one runs, and say in the log
 * how it ended: compiled, compiled but for modules that do not compile
 * (left to their source: a package's Python 2 fixtures), or failed (our
 * runs then compile their imports from source, as before). `prepare`
 * waits: it is the deploy step that compiles. */
void python_bytecode_wait(void);

/* A serving runner does not wait: its claims start at once, and the
 * compile goes on at nice 19 (a no-op walk of an H200 host's 25,000 files
 * took 9-12 s beside the start's lab checks, all of it before the first
 * claim). Its loop reaps every child: 1 when pid (ended with status) was
 * the compile, said in the log as python_bytecode_wait says it; else 0.
 * Python runs started meanwhile read the modules' sources, or a .pyc
 * already written whole (Python writes each by a rename). */
int python_bytecode_reaped(pid_t pid, int status);

/* 1 when Python runs use Numba's CUDA simulator (CUGRADE_NO_GPU=1: CI and
 * hosts without a GPU; the times mean nothing there). */
int python_simulated(void);

/* One run of the owner (check or time): its command line and what its
 * sandbox needs. Lives on the caller's stack for the run. */
struct python_run {
    const char *argv[24];
    char path[PATH_MAX];     /* the student's file in /work */
    char labs[PATH_MAX];     /* ROOT/labs, bound read-only at /lab/labs */
    char seed[24];           /* a sanitizer run's throwaway seed (hex) */
    char owner[PATH_MAX];    /* the owner script, as the sandbox sees it */
    /* The libraries the lab forbids, hidden by absence: /dev/null bound
     * read-only over each (lab.json "python": {"hide": [globs]}). */
    struct sandbox_bind hide[RUN_MORE_BINDS];
    char hide_path[RUN_MORE_BINDS][PATH_MAX];
    size_t nhide;
};

/* The files a lab's Python runs must not see: every regular file that a
 * pattern of lab->python_hide (lab.json's "python": {"hide": [...]}, read
 * by common/lab.c) matches (glob(3), absolute patterns or "@python/..."
 * under python_root(), links resolved and deduplicated), appended to
 * pr->hide (from pr->nhide) as /dev/null binds, at most RUN_MORE_BINDS in
 * all. Returns how many, or -ENOBUFS when more match (the lab's list is
 * too wide: ours), -EINVAL for a pattern that is not absolute. */
int python_hidden(struct python_run *pr, const struct lab *lab);

/* Fill pr and o (zeroed by the caller but for its fds) for a warm run of
 * the pool (runner/grade/pool.h): `owner.py LAB check --pool`, or with
 * timing `owner.py LAB time --case C --max-ms N --gate --pool` (the lab's
 * timing case), the job's file and seed to come through its gate on fd 4
 * (the caller's o->control_fd). Returns 0 or python_hidden's -errno. */
int python_run_pool(struct python_run *pr, struct run_opts *o, const char *root,
                    const struct lab *lab, int timing);

/* Fill pr and o (zeroed by the caller but for its fds) for one owner run:
 * mode "check" with cases "a,b,c", or "time" with cases = the timing case
 * and max_ms. The seed goes in the owner's environment, never on its
 * command line: /proc/PID/cmdline is readable by the student's process
 * (same uid), /proc/PID/environ of the non-dumpable owner is not
 * (docs/python.md). In the simulator, its switch and the threads it needs.
 * The lab's hidden libraries (python_hidden) as more binds. The strings
 * are borrowed for the run. Returns 0 or python_hidden's -errno. */
int python_run_prepare(struct python_run *pr, struct run_opts *o, const char *root,
                       const struct lab *lab, const char *mode, const char *seed, const char *cases,
                       const char *max_ms, const char *src);

/* A "time" run's gate (job_time_gate.c): appends --gate, so that the owner waits
 * on fd 4 (run_opts.control_fd, a socket to the runner) after its start-up
 * and warm-up, says 'r', and takes its samples only after 'g'. */
void python_run_gate(struct python_run *pr);

/* Seconds added to a Python sanitizer run's limit (limits.sanitize, from
 * the go): the interpreter, Numba's and CuPy's imports, the JIT, under the
 * tool's injection (docs/python.md "Sanitizers": measured on an H100). */
#define PYTHON_SANITIZE_SECONDS 60.0

/* Fill pr and o (zeroed by the caller) for one compute-sanitizer run of a
 * Python submission (docs/python.md "Sanitizers"): in the sandbox,
 *   CS --tool TOOL --error-exitcode 86 --print-limit 20 --launch-timeout 60
 *      PYTHON -I -B /lab/labs/common/py/tenant.py --sanitize LAB CASE SEED
 *      /work/SRC
 * the student's process alone (no owner, no IPC: nothing of this run
 * scores but the tool's findings), its buffers its own allocations of the
 * case's exact sizes, lineinfo on by default so findings name the .py's
 * lines. seed is a throwaway one (python_sanitize_seed), never the run's,
 * and may go on the command line. The lab's hidden libraries and the
 * Python root are bound as for the check run. Strings are borrowed for the
 * run. Returns 0 or python_hidden's -errno. */
int python_sanitize_prepare(struct python_run *pr, struct run_opts *o, const char *root,
                            const struct lab *lab, const char *cs, const char *tool,
                            const char *sanitize_case, const char *seed, const char *src);

/* A fresh seed for a sanitizer run (16 hex digits from getrandom) into pr->seed. */
void python_sanitize_seed(struct python_run *pr);

/* Whether a Python sanitizer run's channel (its text, may be NULL) holds
 * the tenant's "start" record, written once Numba and the CUDA context were
 * up and before any of the student's code was imported: without it, a run
 * that failed failed for a reason of ours (not charged). */
int python_sanitize_started(const char *channel_text);

/* The owner script of lab's Python runs, as the sandbox sees it, into out:
 * /lab/labs/LAB/<file> when lab.json names a lab-specific owner
 * (lab->python_owner, "python": {"owner": "lab.py"}, a plain file name
 * checked at load: the profiling lab, whose owner runs a whole training
 * loop), else the common /lab/labs/common/py/owner.py. */
void python_owner_script(const struct lab *lab, char *out, size_t len);

/* The lab's CuPy kernels, compiled at prepare by the owner's warm mode
 * (labs/common/py/owner.py warm, the lab's lab.py cupy_warm) in a Python
 * run's sandbox on rc's GPU and work directory, kept in the lab's build
 * folder as cupy-kernels/ (replacing what was there). Nothing in the
 * simulator, for a lab with its own owner, when the kept folder is newer
 * than the lab's lab.py (a runner's start after prepare), or when the run
 * fails (each job then compiles its own, as before). Returns the kernels
 * kept, 0, or -errno. */
int python_cupy_warm(const struct run_ctx *rc, const struct lab *lab);

/* Where an owner run sees the lab's kept CuPy kernels, read-only
 * (labs/common/py/owner_gpu.py KEPT, kept_kernels). */
#define PYTHON_KEPT_AT "/lab/cupy-kernels"

/* Bind the lab's kept CuPy kernels (python_cupy_warm) read-only at
 * PYTHON_KEPT_AT in an owner run prepared by python_run_prepare or
 * python_run_pool: its owner loads our kernels from there instead of
 * compiling them in every process (its cache never touches a disk the
 * tenant can write). Returns 1 when bound, 0 when nothing is kept (or
 * no bind is left: the owner compiles them, as before). */
int python_run_kept(struct python_run *pr, struct run_opts *o, const struct grade_env *env,
                    const struct lab *lab);

/* Copy the lab's kept CuPy kernels (python_cupy_warm) into workdir's
 * .cupy/kernel_cache, owned by workdir's owner: the student's processes
 * (HOME=/work) find them and add their own; the owner reads the kept
 * folder itself, read-only (python_run_kept; docs/python.md). Returns the
 * files copied (0: none kept) or -errno; a job goes on either way. */
int python_cupy_seed(const struct grade_env *env, const char *lab, const char *workdir);

#endif

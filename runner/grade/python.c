/*
 * python.c - see python.h and docs/python.md.
 */
#include "runner/grade/python.h"
#include "runner/config.h"
#include "runner/run/channel.h"
#include "runner/gpu/lock.h"
#include "runner/sandbox/sandbox.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

int python_submission(const char *filename)
{
    size_t n = filename ? strlen(filename) : 0;
    return n > 3 && strcmp(filename + n - 3, ".py") == 0;
}

const char *python_root(void)
{
    static char root[PATH_MAX];
    const char *p = runner_cfg()->python;
    if (strncmp(p, "/usr/", 5) == 0 || runner_python_prefix(p, root, sizeof root) < 0)
        return NULL;
    return root;
}

/* 1 when path lies in dir (dir itself, or below it). */
static int python_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

const char *python_interpreter(void)
{
    const char *p = runner_cfg()->python;
    /* Only what the sandbox binds is visible there: /usr, and the root,
     * which is p's own prefix when there is one. */
    if (p && p[0] == '/' && !strstr(p, "..") && (python_under(p, "/usr") || python_root()))
        return p;
    return "/usr/bin/python3";
}

int python_root_bind(struct sandbox_bind *out)
{
    const char *root = python_root(); /* never under /usr: NULL for an interpreter there */
    if (!root)
        return 0;
    *out = (struct sandbox_bind){root, root, 0};
    return 1;
}

/* python_bytecode_start's child, while it runs, and when it started (run_now()). */
static pid_t bytecode_pid;
static double bytecode_t0;

void python_bytecode_start(void)
{
    const char *root = python_root();
    char lib[PATH_MAX];
    struct stat st;
    if (!root || snprintf(lib, sizeof lib, "%s/lib", root) >= (int)sizeof lib ||
        stat(lib, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    if (access(lib, W_OK) < 0) {
        /* compileall would compile every such module and fail to write it,
         * at every start: say what an admin can do instead. */
        fprintf(stderr,
                "cugrade-runner: %s is not ours to write: its modules without bytecode "
                "are compiled at every import (once, by its owner: %s -m compileall %s)\n",
                lib, python_interpreter(), lib);
        return;
    }
    const char *py = python_interpreter();
    assert(bytecode_pid <= 0); /* one compile at a time */
    pid_t pid = fork();
    if (pid != 0) {
        bytecode_pid = pid; /* -1: no fork, no compile */
        bytecode_t0 = run_now();
        return;
    }
    /* The child. Niced: a runner restarted beside others' jobs (mid-burst)
     * compiles on the cores their runs leave; not niced, it still compiles. */
    if (nice(19) < 0)
        errno = 0;
    /* -I: no PYTHON* variable (PYTHONDONTWRITEBYTECODE among them) turns
     * the writes off; -qq: a module that does not compile (a package's
     * Python 2 fixtures) is not the log's business, the exit status says so. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
    }
    execl(py, py, "-I", "-m", "compileall", "-qq", "-j", "0", lib, (char *)NULL);
    _exit(127);
}

/* Say in the log how the compile (its wait status st) ended, and when. */
static void bytecode_said(int st, const char *when)
{
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    fprintf(stderr, "cugrade-runner: the Python root's bytecode (%s/lib): %s, %.1f s %s\n",
            python_root(),
            code == 0 ? "compiled where it was missing"
            : code == 1
                ? "compiled where it was missing, but for modules that do not compile (left "
                  "to their source)"
                : "compileall failed: Python runs compile their imports from source",
            run_now() - bytecode_t0, when);
    bytecode_pid = 0;
}

void python_bytecode_wait(void)
{
    if (bytecode_pid <= 0)
        return;
    int st = 0;
    while (waitpid(bytecode_pid, &st, 0) < 0 && errno == EINTR)
        ;
    bytecode_said(st, "beside the builds");
}

int python_bytecode_reaped(pid_t pid, int status)
{
    if (pid <= 0 || pid != bytecode_pid)
        return 0;
    bytecode_said(status, "while the runner served");
    return 1;
}

int python_simulated(void)
{
    return runner_cfg()->no_gpu != 0;
}

int python_hidden(struct python_run *pr, const struct lab *lab)
{
    int r = 0;
    size_t first = pr->nhide;
    for (size_t i = 0; i < lab->npython_hide; i++) {
        const char *p = lab->python_hide[i];
        char full[PATH_MAX];
        glob_t g;
        if (p && strncmp(p, "@python/", 8) == 0) {
            /* under the Python root (CUGRADE_PYTHON's venv): its wheels */
            if (!python_root())
                continue;
            if (snprintf(full, sizeof full, "%s/%s", python_root(), p + 8) >= (int)sizeof full)
                continue;
            p = full;
        }
        if (!p || p[0] != '/') {
            r = -EINVAL;
            break;
        }
        if (glob(p, 0, NULL, &g) != 0)
            continue; /* nothing installed there */
        for (size_t k = 0; k < g.gl_pathc && r == 0; k++) {
            char real[PATH_MAX];
            struct stat st;
            int seen = 0;
            if (!realpath(g.gl_pathv[k], real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode))
                continue;
            for (size_t m = first; m < pr->nhide; m++)
                seen |= strcmp(pr->hide_path[m], real) == 0;
            if (seen)
                continue;
            if (pr->nhide == RUN_MORE_BINDS) {
                r = -ENOBUFS;
                break;
            }
            snprintf(pr->hide_path[pr->nhide], PATH_MAX, "%s", real);
            pr->hide[pr->nhide] = (struct sandbox_bind){"/dev/null", pr->hide_path[pr->nhide], 0};
            pr->nhide++;
        }
        globfree(&g);
        if (r < 0)
            break;
    }
    return r < 0 ? r : (int)(pr->nhide - first);
}

/* ---------------------------------------------------------------------- */
/* Labs with their own owner (the profiling lab): lab.json's "python". */

void python_owner_script(const struct lab *lab, char *out, size_t len)
{
    if (lab->python_owner)
        snprintf(out, len, "/lab/labs/%s/%s", lab->name, lab->python_owner);
    else
        snprintf(out, len, "/lab/labs/common/py/owner.py");
}

/* ---------------------------------------------------------------------- */

/* What every owner run has: the binds (the Python root, the hidden
 * files, ROOT/labs), the simulator's settings, and the command line up to
 * the mode. Returns the arguments written, or python_hidden's -errno. */
static int python_run_head(struct python_run *pr, struct run_opts *o, const char *root,
                           const struct lab *lab, const char *mode)
{
    /* The Python root first (a venv outside /usr), then the hidden files,
     * which may lie inside it. */
    pr->nhide = (size_t)python_root_bind(&pr->hide[0]);
    int r = python_hidden(pr, lab);
    if (r < 0)
        return r;
    int n = 0;
    snprintf(pr->labs, sizeof pr->labs, "%s/labs", root);
    pr->argv[n++] = python_interpreter();
    pr->argv[n++] = "-I"; /* no PYTHON* variables, no user site, no script dir */
    pr->argv[n++] = "-B"; /* no .pyc written where the tenant could swap it */
    python_owner_script(lab, pr->owner, sizeof pr->owner);
    pr->argv[n++] = pr->owner;
    pr->argv[n++] = lab->name;
    pr->argv[n++] = mode;
    o->labs_bind = pr->labs;
    o->more_binds = pr->hide;
    o->nmore_binds = pr->nhide;
    if (python_simulated()) {
        o->extra_env = "NUMBA_ENABLE_CUDASIM=1";
        o->pids = 4096; /* a thread per CUDA thread of a block */
    }
    return n;
}

int python_run_pool(struct python_run *pr, struct run_opts *o, const char *root,
                    const struct lab *lab, int timing)
{
    int n = python_run_head(pr, o, root, lab, timing ? "time" : "check");
    if (n < 0)
        return n;
    pr->path[0] = '\0'; /* the job's file comes through the gate */
    if (timing) {
        assert(lab->timing_case);
        const char *tail[] = {"--case", lab->timing_case, "--max-ms", TIME_MAX_MS};
        for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
            pr->argv[n++] = tail[i];
    }
    pr->argv[n++] = "--pool";
    pr->argv[n] = NULL;
    assert((size_t)n < sizeof pr->argv / sizeof *pr->argv);
    if (timing)
        python_run_gate(pr);
    return 0;
}

int python_run_prepare(struct python_run *pr, struct run_opts *o, const char *root,
                       const struct lab *lab, const char *mode, const char *seed, const char *cases,
                       const char *max_ms, const char *src)
{
    int r = python_run_head(pr, o, root, lab, mode);
    if (r < 0)
        return r;
    size_t n = (size_t)r;
    int check = strcmp(mode, "check") == 0;
    snprintf(pr->path, sizeof pr->path, "/work/%s", src);
    pr->argv[n++] = check ? "--cases" : "--case";
    pr->argv[n++] = cases;
    if (!check && max_ms) {
        pr->argv[n++] = "--max-ms";
        pr->argv[n++] = max_ms;
    }
    pr->argv[n++] = "--file";
    pr->argv[n++] = pr->path;
    pr->argv[n++] = "--seed-fd"; /* the seed: o->secret, on fd 5 (run_opts.secret) */
    pr->argv[n++] = "5";
    pr->argv[n] = NULL;
    assert(n < sizeof pr->argv / sizeof *pr->argv);
    o->secret = seed;
    return 0;
}

void python_run_gate(struct python_run *pr)
{
    size_t n = 0;
    while (pr->argv[n])
        n++;
    assert(n + 1 < sizeof pr->argv / sizeof *pr->argv);
    pr->argv[n++] = "--gate";
    pr->argv[n] = NULL;
}

int python_sanitize_prepare(struct python_run *pr, struct run_opts *o, const char *root,
                            const struct lab *lab, const char *cs, const char *tool,
                            const char *sanitize_case, const char *seed, const char *src)
{
    pr->nhide = (size_t)python_root_bind(&pr->hide[0]);
    int r = python_hidden(pr, lab);
    if (r < 0)
        return r;
    size_t n = 0;
    snprintf(pr->path, sizeof pr->path, "/work/%s", src);
    snprintf(pr->labs, sizeof pr->labs, "%s/labs", root);
    if (seed != pr->seed)
        snprintf(pr->seed, sizeof pr->seed, "%s", seed);
    const char *head[] = {cs, "--tool", tool, "--error-exitcode", "86", "--print-limit", "20",
                          "--launch-timeout", "60"};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        pr->argv[n++] = head[i];
    pr->argv[n++] = python_interpreter();
    pr->argv[n++] = "-I";
    pr->argv[n++] = "-B";
    pr->argv[n++] = "/lab/labs/common/py/tenant.py";
    pr->argv[n++] = "--sanitize";
    pr->argv[n++] = lab->name;
    pr->argv[n++] = sanitize_case;
    pr->argv[n++] = pr->seed;
    pr->argv[n++] = pr->path;
    pr->argv[n] = NULL;
    assert(n < sizeof pr->argv / sizeof *pr->argv);
    o->labs_bind = pr->labs;
    o->more_binds = pr->hide;
    o->nmore_binds = pr->nhide;
    o->control_fd = -1;
    if (python_simulated()) {
        o->extra_env = "NUMBA_ENABLE_CUDASIM=1";
        o->pids = 4096;
    }
    return 0;
}

void python_sanitize_seed(struct python_run *pr)
{
    unsigned char b[8] = {0};
    ssize_t k = getrandom(b, sizeof b, 0);
    (void)k; /* a short read leaves zeros: still a valid (throwaway) seed */
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(pr->seed + 2 * i, sizeof pr->seed - 2 * i, "%02x", b[i]);
}

int python_sanitize_started(const char *channel_text)
{
    return channel_text && strstr(channel_text, "{\"type\": \"start\"") != NULL;
}

/* ---------------------------------------------------------------------- */
/* CuPy's kernels, compiled once per lab at prepare and given to each job. */

#define CUPY_KEPT "cupy-kernels"

/* Put the kernels the warm run left in from in place of the lab's kept
 * ones (kept.new, then renames). Returns the files kept or -errno. */
static int cupy_keep(const char *from, const char *kept)
{
    char fresh[DIRLEN + 32], old[DIRLEN + 32];
    snprintf(fresh, sizeof fresh, "%s.new", kept);
    snprintf(old, sizeof old, "%s.old", kept);
    (void)sandbox_tree_remove(fresh);
    int n = sandbox_copy_files(from, fresh, (uid_t)-1, (gid_t)-1);
    if (n <= 0) {
        (void)sandbox_tree_remove(fresh);
        return n;
    }
    (void)sandbox_tree_remove(old);
    if ((rename(kept, old) < 0 && errno != ENOENT) || rename(fresh, kept) < 0) {
        int e = -errno;
        (void)sandbox_tree_remove(fresh);
        return e;
    }
    (void)sandbox_tree_remove(old);
    return n;
}

int python_cupy_warm(const struct run_ctx *rc, const struct lab *lab)
{
    char path[PATH_MAX + 64], dir[DIRLEN], kept[DIRLEN + 16];
    struct stat ls, ks;
    assert(rc->env && lab);
    snprintf(path, sizeof path, "%s/labs/%s/lab.py", rc->env->root, lab->name);
    run_lab_dir(rc->env, lab->name, dir, sizeof dir);
    snprintf(kept, sizeof kept, "%s/" CUPY_KEPT, dir);
    if (python_simulated() || lab->python_owner || !rc->workdir || stat(path, &ls) < 0)
        return 0;
    /* Kept since lab.py and the owner's files last changed (prepare, then
     * each runner's start): not again. A CuPy upgrade changes every
     * kernel's key: remove the folder then (the next prepare compiles them
     * for the new CuPy). */
    static const char *const owner_files[] = {"owner.py", "owner_case.py", "owner_gpu.py",
                                              "gen.py"};
    for (size_t i = 0; i < sizeof owner_files / sizeof *owner_files; i++) {
        struct stat fs;
        snprintf(path, sizeof path, "%s/labs/common/py/%s", rc->env->root, owner_files[i]);
        if (stat(path, &fs) == 0 && fs.st_mtime > ls.st_mtime)
            ls.st_mtime = fs.st_mtime;
    }
    if (stat(kept, &ks) == 0 && ks.st_mtime >= ls.st_mtime)
        return 0;
    int fd = channel_open(rc->jobdir, "cupy");
    if (fd < 0)
        return fd;
    struct run_opts o = {.control_fd = -1, .cancel_fd = -1};
    struct python_run pr;
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    /* No seed, no file, no case: the warm mode reads none of them. */
    int r = python_run_prepare(&pr, &o, rc->env->root, lab, "warm", "0", "-", NULL, "warm.py");
    if (r == 0) {
        /* The GPU alone, as the baselines: the biggest case's buffers are
         * not in memory admission's ledger, and no job's timing may run
         * beside it (a runner's start while others grade). */
        int lk = lock_gpu(rc->env, 1);
        r = run_sandboxed_opts(rc, pr.argv, fd, 300.0, &o, &v);
        lock_gpu_release(lk);
    }
    close(fd);
    if (r == 0 && !(v.exited && v.exit_code == 0)) {
        fprintf(stderr, "cugrade-runner: %s: CuPy's kernels not kept: the warm run %s\n",
                lab->name, v.message[0] ? v.message : "failed");
        r = -EIO;
    }
    sandbox_verdict_free(&v);
    if (r < 0)
        return r;
    snprintf(path, sizeof path, "%s/.cupy/kernel_cache", rc->workdir);
    return cupy_keep(path, kept);
}

int python_run_kept(struct python_run *pr, struct run_opts *o, const struct grade_env *env,
                    const struct lab *lab)
{
    char dir[DIRLEN];
    struct stat st;
    run_lab_dir(env, lab->name, dir, sizeof dir);
    if (pr->nhide >= RUN_MORE_BINDS)
        return 0; /* no room: the owner compiles its kernels, as without them */
    snprintf(pr->hide_path[pr->nhide], PATH_MAX, "%s/" CUPY_KEPT, dir);
    if (stat(pr->hide_path[pr->nhide], &st) < 0 || !S_ISDIR(st.st_mode))
        return 0;
    pr->hide[pr->nhide] = (struct sandbox_bind){pr->hide_path[pr->nhide], PYTHON_KEPT_AT, 0};
    pr->nhide++;
    o->more_binds = pr->hide;
    o->nmore_binds = pr->nhide;
    return 1;
}

int python_cupy_seed(const struct grade_env *env, const char *lab, const char *workdir)
{
    char dir[DIRLEN], kept[DIRLEN + 16], to[PATH_MAX + 32];
    struct stat st;
    run_lab_dir(env, lab, dir, sizeof dir);
    snprintf(kept, sizeof kept, "%s/" CUPY_KEPT, dir);
    if (access(kept, F_OK) < 0)
        return 0;
    if (stat(workdir, &st) < 0)
        return -errno;
    snprintf(to, sizeof to, "%s/.cupy", workdir);
    if ((mkdir(to, 0755) < 0 && errno != EEXIST) || chown(to, st.st_uid, st.st_gid) < 0)
        return -errno;
    snprintf(to, sizeof to, "%s/.cupy/kernel_cache", workdir);
    return sandbox_copy_files(kept, to, st.st_uid, st.st_gid);
}

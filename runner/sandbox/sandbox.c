/*
 * sandbox.c - run one untrusted command under bubblewrap in its own cgroup
 * (see sandbox.h and docs/sandbox.md).
 *
 * Who does what:
 *   bwrap       namespaces (user, pid, mount, net, ipc, uts, cgroup), the
 *               filesystem view, fresh /proc, /dev, the seccomp filter,
 *               --die-with-parent, clean environment (the reaper before
 *               it: a session of its own).
 *   this file   the cgroup (memory, pids, CPU accounting), the wall and
 *               CPU clocks, output capture with a cap, the whole-tree
 *               kill, the verdict.
 *   bwrap.c     bwrap's argument list, and the child between fork and
 *               exec: rlimits, no_new_privs, the descriptor table, the
 *               box's credentials.
 *   box.c       the boxes (one host uid/gid per concurrent sandbox).
 *   workdir.c   the work directory: its tmpfs, files read back from it.
 *
 * As in isolate, two ways to fail are kept apart: a negative return means
 * the sandbox broke (the job is a system_error and is retried); a verdict
 * means the student's command ran and says how it ended. The line between
 * them is the ready pipe: a launcher inside writes one byte on it once
 * bwrap's setup is over, then becomes the command. No byte, our failure.
 */
#include "runner/sandbox/sandbox.h"
#include "runner/config.h"

#include "runner/sandbox/box.h"
#include "runner/sandbox/bwrap.h"
#include "runner/sandbox/cgroup.h"
#include "runner/sandbox/seccomp.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SANDBOX_TICK_MS 20
/* How often the run's CPU stall is read for cfg->stall: its reader, the
 * share clock (share.c), samples it every 100 ms, not every tick. */
#define SANDBOX_STALL_EVERY_S 0.1

/* The mode (bwrap.h) that worked for this process: ROOT once BOX failed to
 * set up and ROOT then worked. */
static enum bwrap_mode sandbox_mode_cached = BWRAP_MODE_UNKNOWN;

void sandbox_config_init(struct sandbox_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->result_fd = -1;
    cfg->control_fd = -1;
    cfg->cancel_fd = -1;
    cfg->secret_fd = -1;
    cfg->wall_seconds = 10;
    cfg->cpu_seconds = 10;
    cfg->memory_bytes = SANDBOX_MEMORY_BYTES;
    cfg->pids = 64;
    cfg->file_bytes = 64ULL << 20;
    cfg->workdir_bytes = 64ULL << 20;
    cfg->output_cap = 64 << 10;
    cfg->nofile = 1024;
    cfg->output_limit = SANDBOX_OUTPUT_LIMIT;
}

void sandbox_verdict_free(struct sandbox_verdict *v)
{
    free(v->out);
    free(v->err);
    v->out = v->err = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void sandbox_pause_init(struct sandbox_pause *p)
{
    atomic_init(&p->total_us, 0);
    atomic_init(&p->since_us, 0);
}

void sandbox_pause_begin(struct sandbox_pause *p)
{
    assert(atomic_load(&p->since_us) == 0);
    atomic_store(&p->since_us, now_us());
}

void sandbox_pause_end(struct sandbox_pause *p)
{
    long long since = atomic_load(&p->since_us);
    assert(since > 0);
    /* total first: a reader between the two stores counts the pause twice
     * for an instant (a later deadline), never not at all */
    atomic_fetch_add(&p->total_us, now_us() - since);
    atomic_store(&p->since_us, 0);
}

double sandbox_pause_seconds(const struct sandbox_pause *p)
{
    long long since = atomic_load(&p->since_us);
    long long us = atomic_load(&p->total_us) + (since > 0 ? now_us() - since : 0);
    assert(us >= 0);
    return (double)us / 1e6;
}

void sandbox_boost_init(struct sandbox_boost *b, int nice)
{
    assert(nice >= -20 && nice <= 19);
    b->nice = nice;
    atomic_init(&b->asked, 0);
}

void sandbox_boost_ask(struct sandbox_boost *b)
{
    atomic_store(&b->asked, 1);
}

void sandbox_stall_init(struct sandbox_stall *s)
{
    atomic_store(&s->us, -1);
}

double sandbox_stall_seconds(const struct sandbox_stall *s)
{
    long long us = atomic_load(&s->us);
    return us < 0 ? -1 : us / 1e6;
}

/* Seconds the caller has stopped the wall limit's clock for (cfg->pause). */
static double sandbox_paused(const struct sandbox_config *cfg)
{
    return cfg->pause ? sandbox_pause_seconds(cfg->pause) : 0;
}

/* ---- output capture ---------------------------------------------------- */

struct capture {
    int fd;
    char *buf;
    size_t kept, cap;
    uint64_t total;
};

/* Drain what is readable. Returns 1 at EOF, 0 otherwise. Output past the
 * cap is read and counted but not kept; the supervisor kills the run once
 * both streams together pass cfg->output_limit (a flood must not hold a
 * runner until its time limit: 93 s were measured before that rule). */
static int capture_read(struct capture *c)
{
    char scratch[65536];
    /* At most 1 MiB per call: a writer as fast as we read must not keep
     * the supervisor from looking at its clocks. */
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(c->fd, scratch, sizeof scratch);
        if (n < 0)
            return errno == EINTR ? 0 : errno == EAGAIN ? 0 : 1;
        if (n == 0)
            return 1;
        size_t room = c->cap - c->kept, k = (size_t)n < room ? (size_t)n : room;
        memcpy(c->buf + c->kept, scratch, k);
        c->kept += k;
        c->total += (uint64_t)n;
    }
    return 0;
}

/* ---- the run ----------------------------------------------------------- */

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static const char *bwrap_path(const struct sandbox_config *cfg)
{
    if (cfg->bwrap && *cfg->bwrap)
        return cfg->bwrap;
    return runner_cfg()->bwrap;
}

/* Kill a running sandbox: the whole tree -- bwrap, its init, every fork and
 * every setsid()'d grandchild are in the group. Returns 0 or -errno. */
static int kill_tree(struct cgroup *cg, pid_t pid)
{
    if (cg->version == CGROUP_NONE)
        kill(pid, SIGKILL); /* the PDEATHSIG chain takes the rest */
    int k = cgroup_kill(cg);
    return k < 0 ? k : 0;
}

/* Parse bwrap's JSON status lines for "exit-code" (the command's status).
 * Only bwrap writes to this pipe; the command never holds it. */
static void status_parse(const char *s, int *exit_code)
{
    const char *e = strstr(s, "\"exit-code\"");
    if (e && (e = strchr(e, ':')))
        *exit_code = atoi(e + 1);
}

static void verdict_message(struct sandbox_verdict *v, const struct sandbox_config *cfg)
{
    char *m = v->message;
    size_t n = sizeof v->message;
    if (v->timed_out && v->cpu_limit)
        snprintf(m, n, "CPU time limit exceeded (%.1f s of CPU): the program was killed", cfg->cpu_seconds);
    else if (v->timed_out)
        snprintf(m, n, "time limit exceeded (%.1f s wall clock): the program was killed", cfg->wall_seconds);
    else if (v->oom_killed)
        snprintf(m, n, "memory limit exceeded (%llu MiB): the program was killed",
                 (unsigned long long)(cfg->memory_bytes >> 20));
    else if (v->output_limit)
        snprintf(m, n, "output limit exceeded (more than %llu KiB of stdout and stderr): the program was killed",
                 (unsigned long long)(cfg->output_limit >> 10));
    else if (v->file_limit)
        snprintf(m, n, "file size limit exceeded (%llu MiB per file): the program was killed",
                 (unsigned long long)(cfg->file_bytes >> 20));
    else if (v->signal)
        snprintf(m, n, "killed by signal %d (%s)", v->signal, strsignal(v->signal));
    else if (v->exited && v->exit_code != 0)
        snprintf(m, n, "exited with status %d", v->exit_code);
    else
        m[0] = 0;
    if (v->output_truncated) {
        size_t l = strlen(m);
        snprintf(m + l, n - l, "%soutput truncated to %zu bytes per stream (%llu + %llu bytes produced)",
                 l ? "; " : "", cfg->output_cap, (unsigned long long)v->stdout_bytes,
                 (unsigned long long)v->stderr_bytes);
    }
}

/* One attempt's state: what run_once sets up, the supervisor watches and
 * run_cleanup tears down. Every descriptor is -1 when not open; pid is -1
 * when there is no child to kill and reap. */
struct run {
    const struct sandbox_config *cfg;
    enum bwrap_mode mode;
    unsigned box;
    struct sandbox_verdict *v;
    struct cgroup cg;
    int cg_ok;             /* cg was made: run_cleanup destroys it */
    struct capture out, err;
    int p_out[2], p_err[2], p_status[2], p_exec[2], p_ready[2];
    int seccomp_fd, args_fd, null_fd, pidfd;
    int hi[11], nhi;       /* the plan's sources, copied above 10 */
    int base;              /* bwrap's --args descriptor inside; then seccomp, status, ready */
    pid_t pid;
    struct bwrap_plan plan;
    char **bargv;
    char fdnum[16], launcher[96], ldpath[PATH_MAX + 32];
    char *benv[2];
    double t0;             /* fork */
    double t_ready;        /* the launcher's byte: the command starts */
    double t_stall;        /* when the stall was last published (cfg->stall) */
    int boosts;            /* passes of cfg->boost applied (run_boost) */
    /* What the supervisor saw. */
    int ready;             /* 1: the launcher spoke; -1: EOF without a word; 0: not yet */
    int bwrap_exit;        /* the command's status from bwrap's JSON, or -1 */
    int out_eof, err_eof, status_eof, done, wstatus;
    char status[4096];
    size_t status_len;
    struct rusage ru;
};

static void run_init(struct run *r, const struct sandbox_config *cfg, enum bwrap_mode mode,
                     unsigned box, struct sandbox_verdict *v)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->mode = mode;
    r->box = box;
    r->v = v;
    r->out.fd = r->err.fd = -1;
    for (int i = 0; i < 2; i++)
        r->p_out[i] = r->p_err[i] = r->p_status[i] = r->p_exec[i] = r->p_ready[i] = -1;
    r->seccomp_fd = r->args_fd = r->null_fd = r->pidfd = -1;
    for (int i = 0; i < 11; i++)
        r->hi[i] = -1;
    r->pid = -1;
    r->bwrap_exit = -1;
    r->plan.cg = &r->cg;
    memset(v, 0, sizeof *v);
}

/* bwrap usable, the work directory owned by the command's uid and capped,
 * the capture buffers, the cgroup. Returns 0 or -errno. */
static int run_prepare(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    int rc;
    r->plan.bwrap = bwrap_path(cfg);
    if (access(r->plan.bwrap, X_OK) < 0) {
        rc = -errno;
        fprintf(stderr, "sandbox: bwrap not usable at %s: %s\n", r->plan.bwrap, strerror(errno));
        return rc;
    }
    /* The work directory belongs to the uid that writes it (the uid the
     * command has on the host in this mode); only the top directory, and
     * never through a link. */
    uid_t owner = r->mode == BWRAP_MODE_SELF ? getuid() : (uid_t)r->box;
    gid_t group = r->mode == BWRAP_MODE_SELF ? getgid() : (gid_t)r->box;
    if (fchownat(AT_FDCWD, cfg->workdir, owner, group, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    r->v->host_uid = owner;
    /* The size cap of /work: our tmpfs, resized to this run's cap. */
    if (cfg->workdir_bytes && (rc = sandbox_workdir_resize(cfg->workdir, cfg->workdir_bytes)) < 0) {
        /* A plain directory has no cap at all: a disk-fill program would
         * fill the host's disk. Refuse rather than run uncapped. */
        fprintf(stderr, "sandbox: work directory %s cannot be capped (%s); make it with sandbox_workdir_create\n",
                cfg->workdir, strerror(-rc));
        return rc;
    }
    r->out.cap = r->err.cap = cfg->output_cap;
    r->out.buf = malloc(cfg->output_cap + 1);
    r->err.buf = malloc(cfg->output_cap + 1);
    if (!r->out.buf || !r->err.buf)
        return -ENOMEM;
    if (cfg->diag_no_cgroup) {
        /* Diagnostics only (a host whose cgroupfs we may not write): no
         * memory, pids or CPU accounting; the tree is still killed through
         * the PDEATHSIG chain reaper -> bwrap -> init -> pid namespace. */
        memset(&r->cg, 0, sizeof r->cg);
        for (int i = 0; i < CGROUP_FDS; i++)
            r->cg.procs_fd[i] = -1;
        static int warned;
        if (!warned++)
            fprintf(stderr, "sandbox: --no-cgroup: running WITHOUT cgroup limits\n");
    } else if ((rc = cgroup_create(&r->cg, cfg->memory_bytes, cfg->pids)) < 0) {
        fprintf(stderr, "sandbox: cannot create a cgroup: %s\n", strerror(-rc));
        return rc;
    }
    r->cg_ok = 1;
    return 0;
}

/* The pipes (capture, bwrap's status, exec errors, ready), the seccomp
 * filter and /dev/null. Returns 0 or -errno. */
static int run_open(struct run *r)
{
    if (pipe2(r->p_out, O_CLOEXEC) < 0 || pipe2(r->p_err, O_CLOEXEC) < 0 ||
        pipe2(r->p_status, O_CLOEXEC) < 0 || pipe2(r->p_exec, O_CLOEXEC) < 0 ||
        pipe2(r->p_ready, O_CLOEXEC) < 0)
        return -errno;
    if (bwrap_seccomp_off(r->cfg)) {
        /* Diagnostics only (tests/bench/sandbox_diag.sh): bwrap gets an
         * empty filter slot, /dev/null, which it is never told about. */
        if ((r->seccomp_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
            return -errno;
    } else if ((r->seccomp_fd = seccomp_filter_export()) < 0) {
        return r->seccomp_fd;
    }
    if ((r->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    return 0;
}

/* The plan's descriptor table and bwrap's argument list. Returns 0 or
 * -errno. */
static int run_plan_fds(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    struct bwrap_plan *plan = &r->plan;
    /* Descriptor layout inside: 0 /dev/null, 1 and 2 the capture pipes,
     * 3 the result channel (only when given), 4 the control socket and 5
     * the secret (each only when given, and only with a channel), then
     * bwrap's own args, seccomp and status descriptors, which bwrap closes
     * before exec'ing the command, and the ready pipe, which the launcher
     * closes. Sources are first copied above 10 so the dup2s cannot
     * clobber each other. */
    int chan = cfg->result_fd >= 0;
    int base = !chan ? 3 : cfg->secret_fd >= 0 ? 6 : cfg->control_fd >= 0 ? 5 : 4;
    int src[10] = {r->null_fd, r->p_out[1], r->p_err[1], cfg->result_fd, -1, r->seccomp_fd,
                   r->p_status[1], r->p_ready[1], chan ? cfg->control_fd : -1,
                   chan ? cfg->secret_fd : -1};
    if (chan && cfg->secret_fd >= 0 && cfg->control_fd < 0)
        src[8] = r->null_fd; /* no gap below base: nothing of ours could land there */
    int dst[10] = {0, 1, 2, 3, base, base + 1, base + 2, base + 3, 4, 5};
    r->base = base;
    if ((r->args_fd = bwrap_args_build(cfg, r->mode, base + 1, base + 2)) < 0)
        return r->args_fd;
    src[4] = r->args_fd;
    for (int i = 0; i < 10; i++) {
        if (src[i] < 0)
            continue;
        if ((r->hi[r->nhi] = fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0)
            return -errno;
        plan->src[plan->n] = r->hi[r->nhi++];
        plan->dst[plan->n++] = dst[i];
    }
    plan->keep_from = base + 4;
    if ((plan->errpipe = fcntl(r->p_exec[1], F_DUPFD_CLOEXEC, 10)) < 0)
        return -errno;
    r->hi[r->nhi++] = plan->errpipe;
    assert(r->nhi <= 11);
    return 0;
}

/* bwrap's own argv (the launcher, then the command) and environment.
 * Returns 0 or -ENOMEM. */
static int run_plan_argv(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    snprintf(r->fdnum, sizeof r->fdnum, "%d", r->base);
    size_t nargv = 0;
    while (cfg->argv[nargv])
        nargv++;
    r->bargv = calloc(nargv + 9, sizeof *r->bargv);
    if (!r->bargv)
        return -ENOMEM;
    /* The launcher: bwrap says nothing once its setup is over and the
     * command is about to run ("child-pid" comes before the mounts), so a
     * shell inside says it, on the ready pipe, closes that pipe and becomes
     * the command. No byte on it: bwrap failed, which is our failure (a
     * system error), never the student's. */
    snprintf(r->launcher, sizeof r->launcher, "printf . >&%d; exec %d>&-; exec \"$@\"",
             r->base + 3, r->base + 3);
    size_t k0 = 0;
    r->bargv[k0++] = "bwrap";
    r->bargv[k0++] = "--args";
    r->bargv[k0++] = r->fdnum;
    r->bargv[k0++] = "--";
    r->bargv[k0++] = "/bin/sh";
    r->bargv[k0++] = "-c";
    r->bargv[k0++] = r->launcher;
    r->bargv[k0++] = "sh";
    for (size_t k = 0; k < nargv; k++)
        r->bargv[k0 + k] = (char *)cfg->argv[k];
    /* bwrap's own environment: nothing from the runner (its tokens would
     * show in /proc/1/environ inside), only where its libraries are when
     * it was carried to a host without it (dist/env.sh). */
    const char *ld = getenv("LD_LIBRARY_PATH");
    if (ld && *ld &&
        snprintf(r->ldpath, sizeof r->ldpath, "LD_LIBRARY_PATH=%s", ld) < (int)sizeof r->ldpath)
        r->benv[0] = r->ldpath;
    r->plan.argv = r->bargv;
    r->plan.envp = r->benv;
    return 0;
}

/* Fork the reaper (bwrap_child_run), keep only our ends of the pipes, and
 * learn whether bwrap was exec'd. Returns 0, -EAGAIN (BOX mode: the child
 * could not start bwrap, retry as ROOT) or -errno. */
static int run_start(struct run *r)
{
    r->plan.runner = getpid();
    r->t0 = now_s();
    r->pid = fork();
    if (r->pid < 0)
        return -errno;
    if (r->pid == 0)
        bwrap_child_run(&r->plan);

    for (int i = 0; i < r->nhi; i++) {
        close(r->hi[i]);
        r->hi[i] = -1;
    }
    close(r->p_out[1]);
    close(r->p_err[1]);
    close(r->p_status[1]);
    close(r->p_exec[1]);
    close(r->p_ready[1]);
    r->p_out[1] = r->p_err[1] = r->p_status[1] = r->p_exec[1] = r->p_ready[1] = -1;
    int child_err = 0;
    if (read(r->p_exec[0], &child_err, sizeof child_err) == (ssize_t)sizeof child_err) {
        /* The child could not join the cgroup, set limits or exec bwrap. */
        waitpid(r->pid, NULL, 0);
        r->pid = -1;
        fprintf(stderr, "sandbox: could not start bwrap: %s\n", strerror(child_err));
        return r->mode == BWRAP_MODE_BOX ? -EAGAIN : -child_err;
    }
    if ((r->pidfd = pidfd_open_(r->pid)) < 0)
        return -errno;
    r->out.fd = r->p_out[0];
    r->err.fd = r->p_err[0];
    fcntl(r->out.fd, F_SETFL, O_NONBLOCK);
    fcntl(r->err.fd, F_SETFL, O_NONBLOCK);
    fcntl(r->p_status[0], F_SETFL, O_NONBLOCK);
    fcntl(r->p_ready[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* Read what bwrap wrote on its status pipe; keep the command's status. */
static void run_read_status(struct run *r)
{
    ssize_t n =
        read(r->p_status[0], r->status + r->status_len, sizeof r->status - 1 - r->status_len);
    if (n <= 0) {
        r->status_eof = 1;
        return;
    }
    r->status_len += (size_t)n;
    r->status[r->status_len] = 0;
    status_parse(r->status, &r->bwrap_exit);
    if (r->status_len > sizeof r->status / 2) {
        /* keep the tail: only the last document matters now */
        memmove(r->status, r->status + r->status_len / 2, r->status_len - r->status_len / 2 + 1);
        r->status_len -= r->status_len / 2;
    }
}

/* The launcher's byte on the ready pipe: the command starts now. */
static void run_read_ready(struct run *r)
{
    char c;
    if (read(r->p_ready[0], &c, 1) == 1) {
        r->ready = 1;
        r->t_ready = now_s();
        r->v->setup_seconds = r->t_ready - r->t0;
    } else {
        r->ready = -1; /* EOF: all holders closed it without a word */
    }
}

/* When the wall clock runs out (less the paused time), or 0 for never.
 * The command's limit counts from its start (the ready byte): bwrap's
 * set-up is ours, and on a loaded host, or at a low priority, it can take
 * seconds the student must not be charged. Until then the set-up has its
 * own limit; past it the run is our failure (run_finish). */
static double run_deadline(const struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    if (r->ready != 1)
        return r->t0 + sandbox_paused(cfg) + SANDBOX_SETUP_SECONDS;
    if (cfg->wall_seconds <= 0)
        return 0;
    return r->t_ready + sandbox_paused(cfg) + cfg->wall_seconds;
}

/* Past the set-up or wall limit or the CPU limit: kill the tree. Returns
 * 0 or -errno. */
static int run_check_clocks(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    struct sandbox_verdict *v = r->v;
    double now = now_s(), deadline = run_deadline(r);
    int over_wall = deadline > 0 && now >= deadline;
    double cpu_used = cgroup_cpu_seconds(&r->cg);
    int over_cpu = cfg->cpu_seconds > 0 && cpu_used >= cfg->cpu_seconds;
    if (over_wall || over_cpu) {
        v->timed_out = 1;
        v->cpu_limit = over_cpu;
        int rc = kill_tree(&r->cg, r->pid);
        if (rc < 0)
            return rc;
    }
    cgroup_sample(&r->cg);
    return 0;
}

/* The run's CPU stall so far, for the caller's clock (cfg->stall), at most
 * every SANDBOX_STALL_EVERY_S. */
static void run_publish_stall(struct run *r)
{
    double now = now_s();
    if (!r->cfg->stall || now - r->t_stall < SANDBOX_STALL_EVERY_S)
        return;
    r->t_stall = now;
    double stalled = cgroup_cpu_stall_seconds(&r->cg);
    if (stalled >= 0)
        atomic_store(&r->cfg->stall->us, (long long)(stalled * 1e6));
}

/* cfg->boost, once asked: the run's session's autogroup and every task of
 * its cgroup at the boost's nice, in two passes a tick apart (a thread
 * born between the first pass's list and its parent's renice is in the
 * second's; any later one inherits the nice). */
static void run_boost(struct run *r)
{
    const struct sandbox_boost *b = r->cfg->boost;
    if (!b || r->boosts >= 2 || !atomic_load(&b->asked) || r->pid <= 0)
        return;
    if (r->boosts++ == 0)
        bwrap_autogroup_nice(r->pid, b->nice); /* the reaper leads the run's session */
    (void)cgroup_renice(&r->cg, b->nice);
}

/* Supervise until bwrap's outer process is reaped: capture output, read
 * bwrap's status and the ready byte, and kill the whole tree on a flood of
 * output, a cancel, or a clock past its limit. Returns 0 or -errno. */
static int run_supervise(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    struct sandbox_verdict *v = r->v;
    int rc;
    while (!r->done) {
        struct pollfd pfd[6] = {
            {r->pidfd, POLLIN, 0},
            {r->out_eof ? -1 : r->out.fd, POLLIN, 0},
            {r->err_eof ? -1 : r->err.fd, POLLIN, 0},
            {r->status_eof ? -1 : r->p_status[0], POLLIN, 0},
            {r->ready ? -1 : r->p_ready[0], POLLIN, 0},
            {v->cancelled || v->timed_out || v->output_limit ? -1 : cfg->cancel_fd, POLLIN, 0},
        };
        int wait_ms = SANDBOX_TICK_MS;
        double deadline = run_deadline(r);
        if (!v->timed_out && deadline > 0) {
            double left = deadline - now_s();
            if (left * 1000 < wait_ms)
                wait_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
        }
        int n = poll(pfd, 6, wait_ms);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (pfd[1].revents)
            r->out_eof = capture_read(&r->out);
        if (pfd[2].revents)
            r->err_eof = capture_read(&r->err);
        if (cfg->output_limit && !v->output_limit && !v->timed_out && !v->cancelled && !r->done &&
            r->out.total + r->err.total > cfg->output_limit) {
            /* A flood: killed now, not at the time limit (the pipes stop
             * it within a read or two: capture_read takes at most 1 MiB). */
            v->output_limit = 1;
            if ((rc = kill_tree(&r->cg, r->pid)) < 0)
                return rc;
        }
        if (pfd[3].revents)
            run_read_status(r);
        if (pfd[4].revents)
            run_read_ready(r);
        if (pfd[0].revents) {
            if (wait4(r->pid, &r->wstatus, 0, &r->ru) == r->pid) {
                r->pid = -1;
                r->done = 1;
            }
        }
        if (pfd[5].revents && !r->done) {
            /* The runner no longer wants this run (a pre-started sanitizer
             * whose submission did not compile): the whole tree, now. */
            v->cancelled = 1;
            if ((rc = kill_tree(&r->cg, r->pid)) < 0)
                return rc;
        }
        if (!v->timed_out && !v->cancelled && !v->output_limit && !r->done &&
            (rc = run_check_clocks(r)) < 0)
            return rc;
        if (!r->done) {
            run_publish_stall(r);
            run_boost(r);
        }
    }
    return 0;
}

/* How the command ended, from bwrap's report, the reaper's status and the
 * cgroup's counters; the captured output moves into the verdict. */
static void run_verdict(struct run *r)
{
    const struct sandbox_config *cfg = r->cfg;
    struct sandbox_verdict *v = r->v;
    double cg_cpu = cgroup_cpu_seconds(&r->cg);
    v->cpu_seconds = cg_cpu >= 0 ? cg_cpu
                                 : (double)r->ru.ru_utime.tv_sec + r->ru.ru_utime.tv_usec / 1e6 +
                                       (double)r->ru.ru_stime.tv_sec + r->ru.ru_stime.tv_usec / 1e6;
    v->peak_memory_bytes = cgroup_peak_memory(&r->cg);
    v->oom_killed = cgroup_oom_kills(&r->cg) > 0;
    v->cpu_wait_seconds = cgroup_cpu_wait_seconds(&r->cg);

    /* How it ended. bwrap reports the command's status as an exit code:
     * the code itself, or 128+signal when a signal killed it. */
    int wstatus = r->wstatus;
    int code = r->bwrap_exit >= 0 ? r->bwrap_exit : WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    if (r->bwrap_exit < 0 && WIFSIGNALED(wstatus)) {
        v->signal = WTERMSIG(wstatus); /* bwrap itself was killed (timeout, OOM group kill) */
    } else if (code > 128 && code < 128 + 65) {
        v->signal = code - 128;
    } else {
        v->exited = 1;
        v->exit_code = code;
    }
    if (v->signal == SIGXCPU) {
        v->timed_out = v->cpu_limit = 1; /* the RLIMIT_CPU backstop fired */
        v->exited = 0;
    }
    if (v->signal == SIGXFSZ)
        v->file_limit = 1;
    if (v->oom_killed || v->timed_out || v->cancelled || v->output_limit)
        v->exited = 0;
    v->stdout_bytes = r->out.total;
    v->stderr_bytes = r->err.total;
    v->output_truncated = r->out.total > r->out.kept || r->err.total > r->err.kept;
    r->out.buf[r->out.kept] = 0;
    r->err.buf[r->err.kept] = 0;
    v->out = r->out.buf;
    v->err = r->err.buf;
    r->out.buf = r->err.buf = NULL;
    verdict_message(v, cfg);
}

/* After the supervisor: tell our failure (bwrap never started the command)
 * from the command's end, empty the group, drain the pipes, and fill the
 * verdict. Returns 0, -EAGAIN (BOX mode: bwrap could not set up),
 * -ECANCELED (cancelled before the command started) or -errno. */
static int run_finish(struct run *r)
{
    struct sandbox_verdict *v = r->v;
    int rc;
    v->wall_seconds = now_s() - r->t0;
    if (r->ready != 1 && v->cancelled)
        return -ECANCELED; /* cancelled before the command started: nothing ran */
    if (r->ready != 1) {
        /* The launcher never ran: bwrap's own setup failed (namespaces
         * refused, a bind source missing, a mount denied...) or hung past
         * the wall limit. Not the student's doing. */
        cgroup_kill(&r->cg);
        capture_read(&r->err);
        r->err.buf[r->err.kept] = 0;
        fprintf(stderr, "sandbox: bwrap (%s mode) failed to set up%s: %s\n",
                bwrap_mode_name(r->mode), v->timed_out ? " in time" : "", r->err.buf);
        return r->mode == BWRAP_MODE_BOX ? -EAGAIN : -EIO;
    }
    /* Whatever bwrap's init left (it kills its namespace when it exits,
     * but asynchronously): empty the group before reading its counters. */
    if ((rc = cgroup_kill(&r->cg)) < 0)
        return rc;
    /* All writers are gone: drain the pipes to EOF. */
    fcntl(r->out.fd, F_SETFL, 0);
    fcntl(r->err.fd, F_SETFL, 0);
    while (!r->out_eof)
        r->out_eof = capture_read(&r->out);
    while (!r->err_eof)
        r->err_eof = capture_read(&r->err);
    run_verdict(r);
    return 0;
}

/* Kill and reap what is left, destroy the cgroup, close every descriptor,
 * free the buffers; on failure (rc < 0) zero the verdict. Returns rc, or
 * the cgroup's removal error when that is the only failure. */
static int run_cleanup(struct run *r, int rc)
{
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
    }
    if (r->cg_ok) {
        int d = cgroup_destroy(&r->cg);
        if (d < 0 && rc == 0) {
            fprintf(stderr, "sandbox: cannot remove cgroup %s: %s\n", r->cg.name, strerror(-d));
            rc = d;
        }
    }
    free(r->bargv);
    for (int i = 0; i < 11; i++)
        if (r->hi[i] >= 0)
            close(r->hi[i]);
    int fds[] = {r->p_out[0],   r->p_out[1],   r->p_err[0],    r->p_err[1],   r->p_status[0],
                 r->p_status[1], r->p_exec[0],  r->p_exec[1],   r->p_ready[0], r->p_ready[1],
                 r->seccomp_fd,  r->args_fd,    r->null_fd,     r->pidfd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(r->out.buf);
    free(r->err.buf);
    if (rc < 0) {
        sandbox_verdict_free(r->v);
        memset(r->v, 0, sizeof *r->v);
    }
    return rc;
}

/* One attempt in one mode. Returns 0 with a verdict, -EAGAIN when bwrap
 * could not set up (the caller may retry in the other mode), -errno when
 * the sandbox broke. */
static int run_once(const struct sandbox_config *cfg, enum bwrap_mode mode, unsigned box,
                    struct sandbox_verdict *v)
{
    struct run r;
    int rc;
    run_init(&r, cfg, mode, box, v);
    if ((rc = run_prepare(&r)) < 0 || (rc = run_open(&r)) < 0 || (rc = run_plan_fds(&r)) < 0)
        return run_cleanup(&r, rc);
    bwrap_plan_creds(&r.plan, cfg, mode, box);
    if ((rc = run_plan_argv(&r)) == 0 && (rc = run_start(&r)) == 0 && (rc = run_supervise(&r)) == 0)
        rc = run_finish(&r);
    return run_cleanup(&r, rc);
}

static enum bwrap_mode mode_initial(void)
{
    if (getuid() != 0)
        return BWRAP_MODE_SELF; /* not root: bwrap runs as whoever we are */
    long u = runner_cfg()->sandbox_user;
    if (u == RUNNER_USER_ROOT)
        return BWRAP_MODE_ROOT;
    if (u == RUNNER_USER_NOBODY || u == RUNNER_USER_BOX)
        return BWRAP_MODE_BOX;
    return sandbox_mode_cached == BWRAP_MODE_ROOT ? BWRAP_MODE_ROOT : BWRAP_MODE_BOX;
}

int sandbox_run(const struct sandbox_config *cfg, struct sandbox_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!cfg || !cfg->argv || !cfg->argv[0] || !cfg->workdir || cfg->workdir[0] != '/')
        return -EINVAL;
    if (cfg->control_fd >= 0 && cfg->result_fd < 0)
        return -EINVAL; /* fd 4 inside needs fd 3 below it */
    enum bwrap_mode mode = mode_initial();
    /* The box: the work directory's, else one for this run only. */
    unsigned box = 0;
    int box_fd = -1;
    if (mode != BWRAP_MODE_SELF && !(box = box_of_workdir(cfg->workdir)) && (box_fd = box_take(&box)) < 0) {
        fprintf(stderr, "sandbox: no free box (uid) for this run: %s\n", strerror(-box_fd));
        return box_fd;
    }
    int rc = run_once(cfg, mode, box, v);
    if (rc == -EAGAIN && mode == BWRAP_MODE_BOX && runner_cfg()->sandbox_user == RUNNER_USER_AUTO) {
        fprintf(stderr, "sandbox: retrying in root mode (kept for this process if it works)\n");
        rc = run_once(cfg, BWRAP_MODE_ROOT, box, v);
        if (rc == 0)
            sandbox_mode_cached = BWRAP_MODE_ROOT;
    }
    if (box_fd >= 0)
        close(box_fd); /* the run is over and its cgroup empty: the box is free */
    if (rc == -EAGAIN)
        rc = -EIO;
    return rc;
}

static int under_usr(const char *p)
{
    return strncmp(p, "/usr/", 5) == 0;
}

size_t sandbox_cuda_binds(const char *cuda_home, struct sandbox_bind *out, char *real)
{
    size_t n = 0;
    if (!realpath(cuda_home, real))
        snprintf(real, PATH_MAX, "%s", cuda_home);
    /* Binding onto a path that is a symlink inside the sandbox fails, so
     * a toolkit under /usr (already bound) gets nothing more. */
    if (!under_usr(real))
        out[n++] = (struct sandbox_bind){real, real, 0};
    if (strcmp(real, cuda_home) != 0 && !under_usr(cuda_home)) {
        struct stat st;
        if (lstat(cuda_home, &st) == 0 && !S_ISLNK(st.st_mode))
            out[n++] = (struct sandbox_bind){cuda_home, cuda_home, 0};
    }
    return n;
}

/*
 * run.c - see run.h.
 */
#include "runner/run/run.h"
#include "runner/run/channel.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_PIDS 256                /* CUDA runtime threads, compute-sanitizer */
#define RUN_FILE_BYTES (8ull << 30) /* the channel carries the outputs */
#define RUN_WORKDIR_BYTES (256ull << 20)
#define RUN_OUTPUT_CAP (64u << 10)

double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int run_self_exe(char *exe, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", exe, len - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    return 0;
}

/* In a forked child: a session (and so a process group) of its own, stdin
 * from in_fd (-1: /dev/null), stdout to out_fd, the runner's environment
 * less LD_LIBRARY_PATH plus extra_env, then exec argv. Never returns.
 * Its own session because, where the kernel groups CPU time by session
 * (autogroup, bwrap.c), every judge and helper left in the runner's
 * session would share one session's CPU with the runner itself, against
 * one share per sandboxed run. The parent does not setpgid() it: a group
 * leader cannot setsid(). Kill it by its group and its pid both
 * (run_kill_child): a kill before the setsid() finds no group. */
void run_trusted_child(const char *const *argv, const char *const *extra_env, int in_fd, int out_fd)
{
    if (setsid() < 0)
        setpgid(0, 0);
    dup2(out_fd, 1);
    int dn = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
    if (dn >= 0)
        dup2(dn, 0);
    /* LD_LIBRARY_PATH of a dist/ install is for our binaries only: the
     * host's nvcc, gcc and nvidia-smi must load their own libraries. */
    unsetenv("LD_LIBRARY_PATH");
    for (size_t i = 0; extra_env && extra_env[i]; i++)
        putenv((char *)extra_env[i]);
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "cugrade-runner: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

void run_kill_child(pid_t pid)
{
    assert(pid > 0);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

int grade_exec_trusted(const char *const *argv, const char *const *extra_env, double seconds,
                       size_t cap, char **out)
{
    int pfd[2];
    char *buf = NULL;
    size_t len = 0;
    if (out)
        *out = NULL;
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0)
        run_trusted_child(argv, extra_env, -1, pfd[1]);
    close(pfd[1]);
    buf = malloc(cap + 1);
    double end = run_now() + seconds;
    int timed_out = 0;
    for (;;) {
        double left = end - run_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        char tmp[65536];
        ssize_t n = read(pfd[0], tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (buf && len < cap) {
            size_t k = (size_t)n < cap - len ? (size_t)n : cap - len;
            memcpy(buf + len, tmp, k);
            len += k;
        }
    }
    close(pfd[0]);
    int status = 0;
    if (timed_out)
        run_kill_child(pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    kill(-pid, SIGKILL); /* anything the command left behind in its group */
    if (buf)
        buf[len] = '\0';
    if (out)
        *out = buf;
    else
        free(buf);
    if (timed_out)
        return -ETIMEDOUT;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---------------------------------------------------------------------- */
/* Small helpers. */

void run_slug(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 1 < len; in++)
        out[o++] = isalnum((unsigned char)*in) || *in == '.' || *in == '-' ? *in : '_';
    out[o] = '\0';
}

int run_write_all(int fd, const char *data, size_t len)
{
    size_t off = 0;
    int sock = 1; /* a socket first: send() without SIGPIPE, else write() */
    while (off < len) {
        ssize_t n =
            sock ? send(fd, data + off, len - off, MSG_NOSIGNAL) : write(fd, data + off, len - off);
        if (n < 0 && sock && errno == ENOTSOCK) {
            sock = 0;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        off += (size_t)n;
    }
    return 0;
}

int run_file_write_atomic(const char *path, const char *data, size_t len)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    int w = run_write_all(fd, data, len);
    if (w < 0) {
        close(fd);
        unlink(tmp);
        return w;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

int run_mkdir_p(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
            *s = '/';
        }
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

void run_lab_dir(const struct grade_env *env, const char *lab, char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%s", env->cache, env->arch, lab);
}

/* A pipe's read end (O_CLOEXEC) holding secret and then end of file: the
 * write end is closed here. A secret is a few dozen bytes, far below a
 * pipe's capacity, so the write never blocks. Returns the fd or -errno. */
static int run_secret_pipe(const char *secret)
{
    int p[2];
    size_t len = strlen(secret);
    assert(len < 4096);
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    ssize_t w = write(p[1], secret, len);
    int e = w == (ssize_t)len ? 0 : w < 0 ? errno : EIO;
    close(p[1]);
    if (e) {
        close(p[0]);
        return -e;
    }
    return p[0];
}

/* Run argv in the sandbox on the GPU with the lab's run limits. */
int run_sandboxed_opts(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                       double seconds, const struct run_opts *o, struct sandbox_verdict *v)
{
    const struct grade_env *env = rc->env;
    struct sandbox_config cfg;
    struct sandbox_bind binds[5 + RUN_MORE_BINDS];
    size_t nb = 0;
    char path[PATH_MAX + 64], real[PATH_MAX];
    const char *envv[12];
    size_t ne = 0;

    sandbox_config_init(&cfg);
    snprintf(path, sizeof path, "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin", env->cuda_home);
    envv[ne++] = path;
    envv[ne++] = "HOME=/work";
    envv[ne++] = "TMPDIR=/tmp";
    envv[ne++] = "LANG=C";
    envv[ne++] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
    envv[ne++] = "CUDA_CACHE_PATH=/tmp/nvcache";
    /* The sandbox binds this GPU's node alone (host.c, host_scan_devices),
     * and CUDA numbers only the GPUs whose nodes it can open: inside, this
     * GPU is device 0 whatever its index on the host. Its host index there
     * (1 on a second GPU) named no device: every run of GPU 1's runner
     * ended "no CUDA-capable device is detected", a system_error retried
     * on GPU 0 (tests/runner/gpu_detect.t). */
    envv[ne++] = "CUDA_VISIBLE_DEVICES=0";
    if (!(o && o->timing))
        envv[ne++] = RUN_GPU_QUEUES_ENV;
    if (o && o->extra_env)
        envv[ne++] = o->extra_env;
    assert(ne < sizeof envv / sizeof *envv);
    envv[ne] = NULL;
    nb = sandbox_cuda_binds(env->cuda_home, binds, real);
    if (o && o->prog_bind)
        binds[nb++] = (struct sandbox_bind){o->prog_bind, "/lab/prog", 0};
    if (o && o->launch_bind)
        binds[nb++] = (struct sandbox_bind){o->launch_bind, "/lab/launch", 0};
    if (o && o->labs_bind)
        binds[nb++] = (struct sandbox_bind){o->labs_bind, "/lab/labs", 0};
    for (size_t i = 0; o && i < o->nmore_binds && i < RUN_MORE_BINDS; i++)
        binds[nb++] = o->more_binds[i];
    assert(nb <= sizeof binds / sizeof *binds);
    cfg.argv = argv;
    cfg.env = envv;
    cfg.workdir = rc->workdir;
    cfg.binds = binds;
    cfg.nbinds = nb;
    cfg.devices = env->gpu_devices;
    cfg.allow_gpu = env->gpu_devices != NULL;
    cfg.result_fd = channel_fd;
    cfg.control_fd = o ? o->control_fd : -1;
    cfg.cancel_fd = o ? o->cancel_fd : -1;
    cfg.pause = o ? o->pause : NULL;
    cfg.boost = o ? o->boost : NULL;
    cfg.stall = o ? o->stall : NULL;
    if (o && o->secret && (cfg.secret_fd = run_secret_pipe(o->secret)) < 0)
        return cfg.secret_fd;
    cfg.wall_seconds = seconds;
    cfg.cpu_seconds = seconds * 4; /* the CUDA runtime's threads spin while they wait */
    cfg.memory_bytes = (rc->lab->memory_mb ? rc->lab->memory_mb : LAB_MEMORY_MB) << 20;
    cfg.pids = o && o->pids ? o->pids : RUN_PIDS;
    cfg.file_bytes = RUN_FILE_BYTES;
    cfg.workdir_bytes = RUN_WORKDIR_BYTES;
    cfg.output_cap = RUN_OUTPUT_CAP;
    int r = sandbox_run(&cfg, v);
    if (cfg.secret_fd >= 0)
        close(cfg.secret_fd);
    return r;
}

/* prog_bind, when set, binds a host program read-only at /lab/prog;
 * extra_env (may be NULL) is one more "K=V" for the environment. */
int run_sandboxed_env(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                      double seconds, const char *prog_bind, const char *extra_env,
                      struct sandbox_verdict *v)
{
    struct run_opts o = {
        .prog_bind = prog_bind, .extra_env = extra_env, .control_fd = -1, .cancel_fd = -1};
    return run_sandboxed_opts(rc, argv, channel_fd, seconds, &o, v);
}

int run_sandboxed(const struct run_ctx *rc, const char *const *argv, int channel_fd, double seconds,
                  const char *prog_bind, struct sandbox_verdict *v)
{
    return run_sandboxed_env(rc, argv, channel_fd, seconds, prog_bind, NULL, v);
}

/* A sentence on how a run ended badly, or NULL for a clean exit 0. */
const char *run_failure(const struct sandbox_verdict *v, char *buf, size_t len)
{
    if (v->output_limit)
        snprintf(buf, len,
                 "Output limit exceeded: your program wrote more than %llu MiB to "
                 "stdout and stderr and was killed. Print a few lines, not one per element or "
                 "per iteration.",
                 (unsigned long long)(SANDBOX_OUTPUT_LIMIT >> 20));
    else if (v->timed_out && v->cpu_limit)
        snprintf(buf, len,
                 "Your program used more CPU time than its limit (%.1f s of CPU time). "
                 "The limit counts every thread and process of your program: host threads or "
                 "processes kept busy at once use it up faster than the clock.",
                 v->cpu_seconds);
    else if (v->timed_out) /* its own time: the sandbox's set-up is ours */
        snprintf(buf, len, "Your program ran past the time limit (%.1f s).",
                 v->wall_seconds > v->setup_seconds ? v->wall_seconds - v->setup_seconds : 0.0);
    else if (v->oom_killed)
        snprintf(buf, len, "Your program ran out of host memory and was killed.");
    else if (v->signal)
        snprintf(buf, len, "Your program was killed by signal %d (%s)%s%s.", v->signal,
                 strsignal(v->signal), v->message[0] ? ": " : "", v->message);
    else if (v->exited && (v->exit_code == 2 || v->exit_code == 4))
        /* The harness's "ours" statuses, but without its harness_error
         * record: student code called exit() (see run_harness_failed). */
        snprintf(buf, len,
                 "Your program exited with status %d, and the harness reported no "
                 "failure of its own: your code ended the process (exit(), abort path, "
                 "or a library call that exits). Return from your function instead.",
                 v->exit_code);
    else if (v->exited && v->exit_code != 0)
        snprintf(buf, len, "Your program exited with status %d%s%s.", v->exit_code,
                 v->message[0] ? ": " : "", v->message);
    else
        return NULL;
    return buf;
}

/* The harness's own exit statuses (labs/common/harness_common.cu): 2 a
 * harness failure or bad command line, 4 the channel could not be written:
 * ours, not the student's -- but only with the harness's
 * {"type":"harness_error"} record on the channel before it. Student code
 * can call exit(2) too, and cannot write fd 3: an exit 2 or 4 without the
 * record is the student's (run_failure words it), never a free retry.
 * Returns 1 (and a sentence in err) for a failure the harness claimed. */
int run_harness_failed(const struct sandbox_verdict *v, const struct channel_info *ci, char *err,
                       size_t errlen)
{
    if (!v->exited || v->timed_out || v->oom_killed || (v->exit_code != 2 && v->exit_code != 4))
        return 0;
    if (!ci->harness_error)
        return 0;
    snprintf(err, errlen, "the harness failed (exit %d): %.300s; stderr: %.300s", v->exit_code,
             ci->harness_error, v->err ? v->err : "");
    return 1;
}

/* The launch error that broke the context (exit 3), from the channel. */
void run_fatal_case_message(const struct channel_info *ci, char *buf, size_t len)
{
    const char *k;
    json_t *e;
    buf[0] = '\0';
    json_object_foreach(ci->case_errors, k, e)
        snprintf(buf, len,
                 "Your code broke the GPU context in case %s (%s); the remaining "
                 "cases could not run.",
                 k, json_string_value(e));
}

/* Start fn(arg) on a thread; when no thread can be made, run it here. */
void run_task_start(pthread_t *th, int *started, void *(*fn)(void *), void *arg)
{
    *started = pthread_create(th, NULL, fn, arg) == 0;
    if (!*started)
        fn(arg);
}

void run_task_join(pthread_t *th, int *started)
{
    if (*started)
        pthread_join(*th, NULL);
    *started = 0;
}

void run_fd_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Free a verdict and zero it, so that freeing it again is harmless. */
void run_verdict_reset(struct sandbox_verdict *v)
{
    sandbox_verdict_free(v);
    memset(v, 0, sizeof *v);
}

/* Remove the job directory: channels and the sandbox's work dir. */
int run_jobdir_make(const struct grade_env *env, char *jobdir, size_t len)
{
    snprintf(jobdir, len, "%s/job-XXXXXX", env->work);
    /* 0711: the sandbox (which may drop to an unprivileged uid before
     * bwrap) must traverse to its work dir, but cannot list the job's
     * directory nor open the channels (0600, root's). */
    if (run_mkdir_p(env->work) < 0 || !mkdtemp(jobdir) || chmod(jobdir, 0711) < 0) {
        int e = errno ? errno : EIO;
        jobdir[0] = '\0';
        return -e;
    }
    return 0;
}

void run_jobdir_remove(const char *jobdir, const char *workdir)
{
    if (workdir)
        sandbox_workdir_remove(workdir);
    sandbox_workdir_remove(jobdir);
}

int run_gate_ready(int fd, struct sandbox_pause *pause)
{
    char c = 0;
    ssize_t n;
    do
        n = read(fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1 || c != 'r')
        return 0;
    sandbox_pause_begin(pause);
    return 1;
}

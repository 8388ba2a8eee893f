/*
 * grade.c - see grade.h.
 *
 * Layout of a job on disk (all under env->work, mode 0700, root's):
 *   job-XXXXXX/            the job's private directory (mkdtemp)
 *     channel-check        the harness result channels: opened here, outside
 *     channel-memcheck     the sandbox's work directory, handed to the
 *     channel-timing       program as fd 3 (docs/formats.md); the student's
 *     ...                  process cannot name or reopen them
 *     w-XXXX/              the sandbox's /work (sandbox_workdir_create):
 *                          <filename>.cu, student.o, prog
 * Built labs: CACHE/ARCH/LAB/ (labs/build-lab.sh); baselines cached in
 * CACHE/ARCH/LAB/baselines/<gpu>__<case>__<name>.json.
 */
#include "grade.h"
#include "compile.h"
#include "inspect.h"
#include "lab.h"
#include "limit.h"
#include "admit.h"
#include "rubric.h"
#include "sandbox.h"
#include "score.h"
#include "stats.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define RUN_PIDS          256            /* CUDA runtime threads, compute-sanitizer */
#define RUN_FILE_BYTES    (8ull << 30)   /* the channel carries the outputs */
#define RUN_WORKDIR_BYTES (256ull << 20)
#define RUN_OUTPUT_CAP    (64u << 10)
#define SANITIZER_EXIT    86             /* --error-exitcode: "found errors" */
#define SANITIZE_LOAD_SECONDS 30        /* a pre-started sanitizer must load the program by then */
/* The lab build's stamp names its shape: bump it when build-lab.sh's outputs
 * change incompatibly (2: a position-independent harness.o, linked into the
 * sanitizers' shared object too). */
#define LAB_STAMP ".cugrade-built-2"
#define JUDGE_READY_SECONDS 120         /* judge --serve must have CUDA up by then */
#define JUDGE_OUTPUT_CAP  (16u << 20)    /* one verdict line at most */
#define CHANNEL_LINE_MAX  (1u << 20)
#define TIME_MAX_MS       "3000"
#define DIRLEN            2048           /* directories; file paths below get PATH_MAX */
#define BASELINE_SEED     "00000000c0ffee00" /* fixed: baselines are cached across jobs */

/* ---------------------------------------------------------------------- */
/* Trusted commands. */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* In a forked child: a process group of its own, stdin from in_fd (-1:
 * /dev/null), stdout to out_fd, the runner's environment less
 * LD_LIBRARY_PATH plus extra_env, then exec argv. Never returns. */
static void exec_trusted_child(const char *const *argv, const char *const *extra_env, int in_fd,
                               int out_fd)
{
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

int grade_exec_trusted(const char *const *argv, const char *const *extra_env,
                       double seconds, size_t cap, char **out)
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
        exec_trusted_child(argv, extra_env, -1, pfd[1]);
    setpgid(pid, pid);
    close(pfd[1]);
    buf = malloc(cap + 1);
    double end = now_seconds() + seconds;
    int timed_out = 0;
    for (;;) {
        double left = end - now_seconds();
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
        kill(-pid, SIGKILL);
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
/* The GPU lock. Timing needs the GPU to itself (DESIGN step 8); checks and
 * sanitizer runs do not. Runners that share one GPU (a test host running
 * several) take CACHE/gpu-<index>.lock shared for GPU work and exclusive for
 * timing, so a timed kernel never runs beside another job's kernels. With
 * one runner per GPU the lock is always free. Returns an fd to pass to
 * gpu_unlock, or -1 (then the caller goes on unlocked). */
static int gpu_lock(const struct grade_env *env, int exclusive)
{
    char p[PATH_MAX], t[PATH_MAX];
    const char *idx = env->gpu_index ? env->gpu_index : "0";
    snprintf(p, sizeof p, "%s/gpu-%s.lock", env->cache, idx);
    snprintf(t, sizeof t, "%s/gpu-%s.turn", env->cache, idx);
    /* flock() lets new shared holders in while an exclusive one waits, so a
     * timing run could starve behind a stream of checks. Everyone passes a
     * turnstile first (held only while queueing for the real lock): once a
     * timing run waits at the real lock, no new check gets past it. */
    int tfd = open(t, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (tfd >= 0)
        while (flock(tfd, LOCK_EX) < 0 && errno == EINTR)
            ;
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0)
        while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
            if (errno != EINTR) {
                close(fd);
                fd = -1;
                break;
            }
    if (tfd >= 0)
        close(tfd);
    return fd;
}

static void gpu_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

/* ---------------------------------------------------------------------- */
/* Small helpers. */

static void slug(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 1 < len; in++)
        out[o++] = isalnum((unsigned char)*in) || *in == '.' || *in == '-' ? *in : '_';
    out[o] = '\0';
}

static int write_file_atomic(const char *path, const char *data, size_t len)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = -errno;
            close(fd);
            unlink(tmp);
            return e;
        }
        off += (size_t)w;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

static int mkdir_p(const char *path)
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

static void lab_dir(const struct grade_env *env, const char *lab, char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%s", env->cache, env->arch, lab);
}

/* ---------------------------------------------------------------------- */
/* Lab builds. */

int grade_lab_ensure(const struct grade_env *env, const char *lab, char *err, size_t errlen)
{
    char dir[DIRLEN], stamp[PATH_MAX], lock[PATH_MAX], script[PATH_MAX];
    int rc, lfd = -1;
    lab_dir(env, lab, dir, sizeof dir);
    snprintf(stamp, sizeof stamp, "%s/" LAB_STAMP, dir);
    if (access(stamp, F_OK) == 0)
        return 0;
    if ((rc = mkdir_p(dir)) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-rc));
        return rc;
    }
    snprintf(lock, sizeof lock, "%s/%s/.%s.lock", env->cache, env->arch, lab);
    lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
        goto out;
    }
    if (access(stamp, F_OK) == 0) { /* another runner built it meanwhile */
        rc = 0;
        goto out;
    }
    snprintf(script, sizeof script, "%s/labs/build-lab.sh", env->root);
    const char *argv[] = {"sh", script, lab, dir, env->arch, NULL};
    char cuda_env[PATH_MAX + 16], path_env[PATH_MAX + 64];
    snprintf(cuda_env, sizeof cuda_env, "CUDA_HOME=%s", env->cuda_home);
    const char *p = getenv("PATH");
    snprintf(path_env, sizeof path_env, "PATH=%s/bin:%s", env->cuda_home, p ? p : "/usr/bin:/bin");
    const char *extra[] = {cuda_env, path_env, NULL};
    fprintf(stderr, "cugrade-runner: building lab %s for %s into %s\n", lab, env->arch, dir);
    rc = grade_exec_trusted(argv, extra, 900, 0, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "labs/build-lab.sh %s %s %s failed (%s %d)", lab, dir, env->arch,
                 rc < 0 ? "error" : "status", rc);
        rc = rc < 0 ? rc : -EIO;
        goto out;
    }
    rc = write_file_atomic(stamp, "ok\n", 3);
    if (rc < 0)
        snprintf(err, errlen, "cannot write %s: %s", stamp, strerror(-rc));
out:
    if (lfd >= 0)
        close(lfd);
    return rc;
}

/* cugrade-launch where every sandbox can reach it: CACHE/cugrade-launch
 * (the cache is traversable by the sandbox's uid, as the lab builds it
 * binds; the runner's own directory need not be), refreshed when the
 * runner's copy differs. Writes its path into out. */
static int launch_ensure(const struct grade_env *env, char *out, size_t len, char *err,
                         size_t errlen)
{
    struct stat a, b;
    char tmp[PATH_MAX + 32];
    snprintf(out, len, "%s/cugrade-launch", env->cache);
    if (!env->launch || !*env->launch || stat(env->launch, &a) < 0) {
        snprintf(err, errlen, "cugrade-launch not found (%s): build it with make, or set "
                 "CUGRADE_LAUNCH", env->launch && *env->launch ? env->launch : "beside the runner");
        return -ENOENT;
    }
    if (stat(out, &b) == 0 && b.st_size == a.st_size && b.st_mtime >= a.st_mtime)
        return 0;
    int in = open(env->launch, O_RDONLY | O_CLOEXEC), fd = -1, rc = 0;
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", out, (int)getpid());
    if (in < 0 || mkdir_p(env->cache) < 0 ||
        (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755)) < 0) {
        rc = -errno;
        goto done;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(fd, buf, (size_t)n) != n) {
            rc = -EIO;
            goto done;
        }
    if (n < 0 || fchmod(fd, 0755) < 0 || fsync(fd) < 0) {
        rc = -errno;
        goto done;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, out) < 0)
        rc = -errno;
done:
    if (in >= 0)
        close(in);
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        unlink(tmp);
        snprintf(err, errlen, "cannot copy %.300s to %.300s: %s", env->launch, out, strerror(-rc));
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The result channel (docs/formats.md): JSON lines, each optionally followed
 * by "bytes" raw bytes. Written by a process that holds student code, so
 * every field is checked and every size bounded. */

struct channel {
    int fd;
    off_t pos;
};

/* Read the next record header at ch->pos. Returns 1 and a new reference in
 * *hdr (ch->pos moves past its payload), 0 at the end or at an incomplete
 * record, -EBADMSG for garbage. */
static int channel_next(struct channel *ch, json_t **hdr)
{
    struct stat st;
    char buf[8192];
    *hdr = NULL;
    if (fstat(ch->fd, &st) < 0)
        return -errno;
    off_t p = ch->pos;
    size_t linelen = 0;
    int found = 0;
    while (p < st.st_size && linelen < CHANNEL_LINE_MAX) {
        ssize_t n = pread(ch->fd, buf, sizeof buf, p);
        if (n <= 0)
            break;
        char *nl = memchr(buf, '\n', (size_t)n);
        if (nl) {
            linelen += (size_t)(nl - buf);
            found = 1;
            break;
        }
        linelen += (size_t)n;
        p += n;
    }
    if (!found)
        return linelen >= CHANNEL_LINE_MAX ? -EBADMSG : 0;
    char *line = malloc(linelen + 1);
    if (!line)
        return -ENOMEM;
    if (pread(ch->fd, line, linelen, ch->pos) != (ssize_t)linelen) {
        free(line);
        return 0;
    }
    line[linelen] = '\0';
    json_error_t je;
    json_t *h = json_loads(line, JSON_REJECT_DUPLICATES, &je);
    free(line);
    if (!json_is_object(h) || !json_is_string(json_object_get(h, "type"))) {
        json_decref(h);
        return -EBADMSG;
    }
    off_t next = ch->pos + (off_t)linelen + 1;
    json_t *b = json_object_get(h, "bytes");
    if (b) {
        if (!json_is_integer(b) || json_integer_value(b) < 0) {
            json_decref(h);
            return -EBADMSG;
        }
        json_int_t nb = json_integer_value(b);
        if ((uint64_t)nb > (uint64_t)st.st_size || next > st.st_size - (off_t)nb) {
            json_decref(h);
            return 0; /* payload not all written (yet) */
        }
        json_object_set_new(h, "_offset", json_integer((json_int_t)next));
        next += (off_t)nb;
    }
    ch->pos = next;
    *hdr = h;
    return 1;
}

/* What the runner itself reads from a channel. */
struct channel_info {
    int done;                /* the final {"type":"done"} was seen */
    int ncases;              /* case records */
    json_t *device;          /* the device record, or NULL */
    json_t *timing;          /* the timing record, or NULL */
    json_t *case_errors;     /* object: case name -> "error: cause" of launch errors */
    char *harness_error;     /* the harness's own failure ("harness_error" record), or NULL */
};

static void channel_info_clear(struct channel_info *ci)
{
    json_decref(ci->device);
    json_decref(ci->timing);
    json_decref(ci->case_errors);
    free(ci->harness_error);
    memset(ci, 0, sizeof *ci);
}

static int channel_read_all(int fd, struct channel_info *ci)
{
    struct channel ch = {fd, 0};
    json_t *h;
    int r;
    memset(ci, 0, sizeof *ci);
    ci->case_errors = json_object();
    while ((r = channel_next(&ch, &h)) == 1) {
        const char *t = json_string_value(json_object_get(h, "type"));
        if (strcmp(t, "done") == 0) {
            ci->done = 1;
        } else if (strcmp(t, "case") == 0) {
            ci->ncases++;
            const char *st = json_string_value(json_object_get(h, "status"));
            const char *name = json_string_value(json_object_get(h, "name"));
            if (st && name && strcmp(st, "ok") != 0) {
                const char *e = json_string_value(json_object_get(h, "error"));
                const char *c = json_string_value(json_object_get(h, "cause"));
                char msg[600];
                if (c)
                    snprintf(msg, sizeof msg, "%s: %s: %s", st, e ? e : "error", c);
                else
                    snprintf(msg, sizeof msg, "%s%s%s", st, e ? ": " : "", e ? e : "");
                json_object_set_new(ci->case_errors, name, json_string(msg));
            }
        } else if (strcmp(t, "device") == 0 && !ci->device) {
            ci->device = json_incref(h);
        } else if (strcmp(t, "timing") == 0 && !ci->timing) {
            ci->timing = json_incref(h);
        } else if (strcmp(t, "harness_error") == 0 && !ci->harness_error) {
            const char *m = json_string_value(json_object_get(h, "message"));
            ci->harness_error = strndup(m ? m : "", 400);
        }
        json_decref(h);
    }
    return r < 0 ? r : 0;
}

/* ---------------------------------------------------------------------- */
/* Progress, heartbeat-friendly: a watcher thread counts case records while
 * the sandboxed check runs, so the student sees "checking 3/6". */

struct watch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, cancelled, started;
    int fd, total;
    grade_progress_fn progress;
    void *arg;
};

static void *watch_main(void *p)
{
    struct watch *w = p;
    struct channel ch = {w->fd, 0};
    int seen = -1, count = 0;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        json_t *h;
        pthread_mutex_unlock(&w->mu);
        while (channel_next(&ch, &h) == 1) {
            const char *t = json_string_value(json_object_get(h, "type"));
            if (strcmp(t, "case") == 0)
                count++;
            json_decref(h);
        }
        if (count != seen) {
            char d[32];
            seen = count;
            snprintf(d, sizeof d, "%d/%d", count < w->total ? count : w->total, w->total);
            if (w->progress && w->progress(w->arg, "checking", d) == -ECANCELED)
                w->cancelled = 1;
        }
        pthread_mutex_lock(&w->mu);
        if (w->stop)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void watch_start(struct watch *w, int fd, int total, grade_progress_fn fn, void *arg)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->fd = fd;
    w->total = total;
    w->progress = fn;
    w->arg = arg;
    w->started = pthread_create(&w->thread, NULL, watch_main, w) == 0;
}

static int watch_stop(struct watch *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    return w->cancelled ? -ECANCELED : 0;
}

/* ---------------------------------------------------------------------- */
/* Sandboxed runs of the linked program. */

struct run_ctx {
    const struct grade_env *env;
    const struct lab *lab;
    const char *workdir;
    char jobdir[DIRLEN];
    char device_path[PATH_MAX];  /* trusted device record for the judge, or "" */
    struct run_limits limits;    /* this job's wall limits (limit.h) */
};

/* Open a fresh channel file in the job's private directory. */
static int channel_open(const struct run_ctx *rc, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/channel-%s", rc->jobdir, name);
    unlink(p);
    int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd < 0 ? -errno : fd;
}

static void channel_path(const struct run_ctx *rc, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/channel-%s", rc->jobdir, name);
}

/* How a sandboxed run differs from a plain one (zero it, then set what is
 * needed; fds are -1 when unused). */
struct run_opts {
    const char *prog_bind;   /* host program bound read-only at /lab/prog */
    const char *launch_bind; /* host cugrade-launch bound read-only at /lab/launch */
    const char *extra_env;   /* one more "K=V" for the environment */
    int control_fd;          /* fd 4 inside (sandbox_config.control_fd) */
    int cancel_fd;           /* sandbox_config.cancel_fd */
};

/* Run argv in the sandbox on the GPU with the lab's run limits. */
static int run_sandboxed_opts(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                              double seconds, const struct run_opts *o,
                              struct sandbox_verdict *v)
{
    const struct grade_env *env = rc->env;
    struct sandbox_config cfg;
    struct sandbox_bind binds[4];
    size_t nb = 0;
    char path[PATH_MAX + 64], cvd[64], real[PATH_MAX];
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
    if (env->gpu_index) {
        snprintf(cvd, sizeof cvd, "CUDA_VISIBLE_DEVICES=%s", env->gpu_index);
        envv[ne++] = cvd;
    }
    if (o && o->extra_env)
        envv[ne++] = o->extra_env;
    envv[ne] = NULL;
    nb = compile_cuda_binds(env->cuda_home, binds, real);
    if (o && o->prog_bind)
        binds[nb++] = (struct sandbox_bind){o->prog_bind, "/lab/prog", 0};
    if (o && o->launch_bind)
        binds[nb++] = (struct sandbox_bind){o->launch_bind, "/lab/launch", 0};
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
    cfg.wall_seconds = seconds;
    cfg.cpu_seconds = seconds * 4; /* the CUDA runtime's threads spin while they wait */
    cfg.memory_bytes = (rc->lab->memory_mb ? rc->lab->memory_mb : 16384) << 20;
    cfg.pids = RUN_PIDS;
    cfg.file_bytes = RUN_FILE_BYTES;
    cfg.workdir_bytes = RUN_WORKDIR_BYTES;
    cfg.output_cap = RUN_OUTPUT_CAP;
    return sandbox_run(&cfg, v);
}

/* prog_bind, when set, binds a host program read-only at /lab/prog;
 * extra_env (may be NULL) is one more "K=V" for the environment. */
static int run_sandboxed_env(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                             double seconds, const char *prog_bind, const char *extra_env,
                             struct sandbox_verdict *v)
{
    struct run_opts o = {prog_bind, NULL, extra_env, -1, -1};
    return run_sandboxed_opts(rc, argv, channel_fd, seconds, &o, v);
}

static int run_sandboxed(const struct run_ctx *rc, const char *const *argv, int channel_fd,
                         double seconds, const char *prog_bind, struct sandbox_verdict *v)
{
    return run_sandboxed_env(rc, argv, channel_fd, seconds, prog_bind, NULL, v);
}

/* A sentence on how a run ended badly, or NULL for a clean exit 0. */
static const char *run_failure(const struct sandbox_verdict *v, char *buf, size_t len)
{
    if (v->output_limit)
        snprintf(buf, len, "Output limit exceeded: your program wrote more than %llu MiB to "
                 "stdout and stderr and was killed. Print a few lines, not one per element or "
                 "per iteration.", (unsigned long long)(SANDBOX_OUTPUT_LIMIT >> 20));
    else if (v->timed_out)
        snprintf(buf, len, "Your program ran past the time limit (%.1f s)%s.", v->wall_seconds,
                 v->cpu_limit ? " of CPU time" : "");
    else if (v->oom_killed)
        snprintf(buf, len, "Your program ran out of host memory and was killed.");
    else if (v->signal)
        snprintf(buf, len, "Your program was killed by signal %d (%s)%s%s.", v->signal,
                 strsignal(v->signal), v->message[0] ? ": " : "", v->message);
    else if (v->exited && (v->exit_code == 2 || v->exit_code == 4))
        /* The harness's "ours" statuses, but without its harness_error
         * record: student code called exit() (see harness_failed). */
        snprintf(buf, len, "Your program exited with status %d, and the harness reported no "
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
static int harness_failed(const struct sandbox_verdict *v, const struct channel_info *ci,
                          char *err, size_t errlen)
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
static void fatal_case_message(const struct channel_info *ci, char *buf, size_t len)
{
    const char *k;
    json_t *e;
    buf[0] = '\0';
    json_object_foreach(ci->case_errors, k, e)
        snprintf(buf, len, "Your code broke the GPU context in case %s (%s); the remaining "
                           "cases could not run.", k, json_string_value(e));
}

/* Start fn(arg) on a thread; when no thread can be made, run it here. */
static void task_start(pthread_t *th, int *started, void *(*fn)(void *), void *arg)
{
    *started = pthread_create(th, NULL, fn, arg) == 0;
    if (!*started)
        fn(arg);
}

static void task_join(pthread_t *th, int *started)
{
    if (*started)
        pthread_join(*th, NULL);
    *started = 0;
}

/* The trusted judge, started once per job as `judge --serve` before the
 * compile (labs/common/judge_common.cu): its CUDA context comes up while
 * nvcc runs, and each channel is then one command line on its stdin and
 * one verdict line on its stdout. Without a session (it could not start)
 * judge_run runs the one-shot `judge --seed ...` as before. */
struct judge_session {
    const struct run_ctx *rc;
    pid_t pid;                   /* -1: none */
    int in, out;                 /* its stdin, its stdout */
    char *buf;                   /* what has been read of its stdout */
    size_t len, cap;
    pthread_t thread;            /* reads its "ready" */
    int started;
    int ready;                   /* 1 ready, -1 it failed */
};

static void judge_extra_env(const struct run_ctx *rc, char *cvd, size_t len, const char *extra[3])
{
    extra[0] = extra[1] = extra[2] = NULL;
    if (rc->env->gpu_index) {
        snprintf(cvd, len, "CUDA_VISIBLE_DEVICES=%s", rc->env->gpu_index);
        extra[0] = cvd;
        extra[1] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
    }
}

/* One line of the session's stdout (without its '\n', NUL-terminated,
 * valid until the next call), or NULL at EOF, an error, past the deadline
 * or past JUDGE_OUTPUT_CAP. */
static char *judge_line(struct judge_session *js, double deadline)
{
    for (;;) {
        char *nl = js->len ? memchr(js->buf, '\n', js->len) : NULL;
        if (nl) {
            /* Hand out the line; what follows it moves to the front on the
             * next call (the line is used before then). */
            *nl = '\0';
            return js->buf;
        }
        double left = deadline - now_seconds();
        if (left <= 0 || js->len >= JUDGE_OUTPUT_CAP)
            return NULL;
        if (js->cap - js->len < 65536) {
            size_t nc = js->cap ? js->cap * 2 : 1 << 20;
            char *nb = realloc(js->buf, nc);
            if (!nb)
                return NULL;
            js->buf = nb;
            js->cap = nc;
        }
        struct pollfd p = {js->out, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t n = read(js->out, js->buf + js->len, js->cap - js->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        js->len += (size_t)n;
    }
}

/* Drop the line judge_line returned. */
static void judge_line_done(struct judge_session *js)
{
    size_t k = strlen(js->buf) + 1;
    memmove(js->buf, js->buf + k, js->len - k);
    js->len -= k;
}

/* No GPU lock here: only the judge's context comes up (see the lock rules
 * at grade_job_run). */
static void *judge_ready_main(void *p)
{
    struct judge_session *js = p;
    char *l = judge_line(js, now_seconds() + JUDGE_READY_SECONDS);
    js->ready = l && strcmp(l, "ready") == 0 ? 1 : -1;
    if (l)
        judge_line_done(js);
    return NULL;
}

/* No session (yet): judge_session_end and judge_run are safe on it. */
static void judge_session_init(struct judge_session *js, const struct run_ctx *rc)
{
    memset(js, 0, sizeof *js);
    js->rc = rc;
    js->pid = js->in = js->out = -1;
}

static void judge_session_start(const struct run_ctx *rc, struct judge_session *js)
{
    char judge[PATH_MAX], cvd[64];
    const char *extra[3];
    int in[2], out[2];
    judge_session_init(js, rc);
    lab_dir(rc->env, rc->lab->name, judge, sizeof judge);
    strncat(judge, "/judge", sizeof judge - strlen(judge) - 1);
    judge_extra_env(rc, cvd, sizeof cvd, extra);
    if (pipe2(in, O_CLOEXEC) < 0)
        return;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return;
    }
    const char *argv[] = {judge, "--serve", NULL};
    pid_t pid = fork();
    if (pid == 0)
        exec_trusted_child(argv, extra, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return;
    }
    setpgid(pid, pid);
    js->pid = pid;
    js->in = in[1];
    js->out = out[0];
    task_start(&js->thread, &js->started, judge_ready_main, js);
}

/* The session ends in the background: the judge exits at EOF on its stdin
 * (its CUDA teardown is not the student's wait); a straggler is killed. */
struct judge_reap {
    pid_t pid;
};

static void *judge_reap_main(void *p)
{
    struct judge_reap *jr = p;
    int st, reaped = 0;
    for (int i = 0; i < 1000 && !reaped; i++) { /* 10 s */
        pid_t w = waitpid(jr->pid, &st, WNOHANG);
        reaped = w == jr->pid || (w < 0 && errno != EINTR);
        struct timespec ts = {0, 10 * 1000 * 1000};
        if (!reaped)
            nanosleep(&ts, NULL);
    }
    kill(-jr->pid, SIGKILL); /* a straggler, and anything it left in its group */
    if (!reaped)
        while (waitpid(jr->pid, &st, 0) < 0 && errno == EINTR)
            ;
    free(jr);
    return NULL;
}

static void judge_session_end(struct judge_session *js)
{
    task_join(&js->thread, &js->started);
    if (js->in >= 0)
        close(js->in);
    if (js->out >= 0)
        close(js->out);
    js->in = js->out = -1;
    if (js->pid > 0) {
        struct judge_reap *jr = malloc(sizeof *jr);
        pthread_t th;
        pthread_attr_t at;
        int ok = 0;
        if (jr && pthread_attr_init(&at) == 0) {
            jr->pid = js->pid;
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&th, &at, judge_reap_main, jr) == 0;
            pthread_attr_destroy(&at);
        }
        if (!ok) {
            if (jr) {
                jr->pid = js->pid;
                judge_reap_main(jr);
            } else {
                kill(-js->pid, SIGKILL);
                waitpid(js->pid, NULL, 0);
            }
        }
    }
    js->pid = -1;
    free(js->buf);
    js->buf = NULL;
    js->len = js->cap = 0;
}

/* One verdict from the session. Returns 0 and the line (malloc'd) in *out,
 * -EAGAIN when there is no usable session (the caller runs the one-shot
 * judge), or another negative errno (the session broke: ours). */
static int judge_ask(struct judge_session *js, const char *const *argv, double seconds, char **out)
{
    *out = NULL;
    if (!js || js->pid <= 0)
        return -EAGAIN;
    task_join(&js->thread, &js->started);
    if (js->ready != 1)
        return -EAGAIN;
    char cmd[3 * PATH_MAX];
    size_t o = 0;
    for (size_t i = 1; argv[i]; i++) {
        if (strchr(argv[i], '\t') || strchr(argv[i], '\n'))
            return -EINVAL;
        int k = snprintf(cmd + o, sizeof cmd - o, "%s%s", i > 1 ? "\t" : "", argv[i]);
        if (k < 0 || (size_t)k >= sizeof cmd - o)
            return -E2BIG;
        o += (size_t)k;
    }
    if (o + 1 >= sizeof cmd)
        return -E2BIG;
    cmd[o++] = '\n';
    int r = 0;
    size_t w = 0;
    while (w < o) {
        ssize_t n = write(js->in, cmd + w, o - w);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = -EPIPE;
            break;
        }
        w += (size_t)n;
    }
    char *l = r == 0 ? judge_line(js, now_seconds() + seconds) : NULL;
    if (l) {
        *out = strdup(l);
        judge_line_done(js);
        if (!*out)
            r = -ENOMEM;
    } else if (r == 0) {
        r = -EIO;
    }
    if (r < 0) {
        /* Broken: no later verdict may come from it. */
        kill(-js->pid, SIGKILL);
        js->ready = -1;
    }
    return r;
}

/* Run the trusted judge on a channel: `judge --seed S --channel F [--cases
 * a,b] [--device D]`, through the job's session when it has one. Returns 0
 * with its verdict document in *doc (new reference) and the cases parsed
 * into *cases and *n, or a negative errno with a sentence in err (a
 * system_error: the judge is ours). The caller holds the GPU lock shared. */
static int judge_run(const struct run_ctx *rc, struct judge_session *js, const char *seed,
                     const char *channel, const char *cases_csv, json_t **doc,
                     struct score_case **cases, size_t *n, char *err, size_t errlen)
{
    char judge[PATH_MAX], *out = NULL, cvd[64];
    const char *extra[3];
    const char *argv[10];
    size_t a = 0;
    *doc = NULL;
    lab_dir(rc->env, rc->lab->name, judge, sizeof judge);
    strncat(judge, "/judge", sizeof judge - strlen(judge) - 1);
    argv[a++] = judge;
    argv[a++] = "--seed";
    argv[a++] = seed;
    argv[a++] = "--channel";
    argv[a++] = channel;
    if (cases_csv) {
        argv[a++] = "--cases";
        argv[a++] = cases_csv;
    }
    /* The device record measured by a trusted program, not the one from
     * inside the student's process. */
    if (rc->device_path[0]) {
        argv[a++] = "--device";
        argv[a++] = rc->device_path;
    }
    argv[a] = NULL;
    judge_extra_env(rc, cvd, sizeof cvd, extra);
    double lim = (rc->lab->run_seconds > 0 ? rc->lab->run_seconds : 120) * 2 + 60;
    int r = judge_ask(js, argv, lim, &out);
    if (r == -EAGAIN)
        r = grade_exec_trusted(argv, extra, lim, JUDGE_OUTPUT_CAP, &out);
    if (r != 0) {
        snprintf(err, errlen, "the judge failed (%s %d)", r < 0 ? "error" : "status", r);
        free(out);
        return r < 0 ? r : -EIO;
    }
    json_error_t je;
    json_t *d = json_loads(out ? out : "", 0, &je);
    free(out);
    r = d ? score_cases_from_judge(d, cases, n) : -EINVAL;
    if (r < 0) {
        snprintf(err, errlen, "the judge's output is not {\"cases\":[...]}: %s",
                 d ? "wrong shape" : je.text);
        json_decref(d);
        return r;
    }
    *doc = d;
    return 0;
}

/* The device record of this GPU (name, copy bandwidth, FP32 peak), measured
 * once per GPU model by a trusted baseline program's `device` mode in the
 * same sandbox, cached as CACHE/ARCH/LAB/device-GPU.chan and handed to the
 * judge. Leaves rc->device_path empty when none can be made. */
static void device_record_ensure(struct run_ctx *rc)
{
    char dir[DIRLEN], g[128], path[PATH_MAX], prog[PATH_MAX], tmp[PATH_MAX + 16];
    struct stat st;
    lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    snprintf(path, sizeof path, "%s/device-%s.chan", dir, g);
    if (stat(path, &st) == 0 && st.st_size > 0) {
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
        return;
    }
    prog[0] = '\0';
    for (size_t i = 0; i < rc->lab->nbaselines && !prog[0]; i++)
        if (strcmp(rc->lab->baselines[i], "cpu") != 0)
            snprintf(prog, sizeof prog, "%s/baseline-%s", dir, rc->lab->baselines[i]);
    if (!prog[0] || access(prog, X_OK) != 0)
        return;
    int lk = gpu_lock(rc->env, 1);
    if (stat(path, &st) == 0 && st.st_size > 0) { /* measured meanwhile by another runner */
        gpu_unlock(lk);
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        gpu_unlock(lk);
        return;
    }
    const char *argv[] = {"/lab/prog", "device", NULL};
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    char ldp[PATH_MAX + 64];
    snprintf(ldp, sizeof ldp, "LD_LIBRARY_PATH=%s/lib64", rc->env->cuda_home);
    int r = run_sandboxed_env(rc, argv, fd, 120, prog, ldp, &v);
    gpu_unlock(lk);
    close(fd);
    if (r == 0 && v.exited && v.exit_code == 0 && rename(tmp, path) == 0)
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
    else {
        fprintf(stderr, "cugrade-runner: device record of %s failed (rc %d, exit %d): %.300s\n",
                rc->lab->name, r, v.exit_code, v.err ? v.err : "");
        unlink(tmp);
    }
    sandbox_verdict_free(&v);
}

/* ---------------------------------------------------------------------- */
/* Sanitizer output -> findings with file:line and a hint. */

static const char *sanitizer_hint(const char *msg)
{
    if (strstr(msg, "Race reported") || strstr(msg, "race"))
        return "A shared-memory race: put __syncthreads() between the threads' writes to "
               "shared memory and the reads of other threads' values (and before the "
               "buffer is overwritten in the next iteration).";
    if (strstr(msg, "Barrier") || strstr(msg, "divergent") || strstr(msg, "Divergent"))
        return "A __syncthreads() inside a branch that not every thread of the block takes: "
               "move the barrier out of the if/loop so all threads reach it.";
    if (strstr(msg, "Invalid") && (strstr(msg, "read") || strstr(msg, "write") ||
                                   strstr(msg, "Read") || strstr(msg, "Write")))
        return "An out-of-bounds access: add a bounds check (if (i < n)) before reading or "
               "writing, for threads of the last block that fall past the end.";
    if (strstr(msg, "misaligned") || strstr(msg, "Misaligned"))
        return "A misaligned access: vector loads (float4) need 16-byte aligned addresses.";
    /* CUDA 13 reports a block of more than 1024 threads as cudaErrorInvalidValue
     * on cudaLaunchKernel (seen on the H200 runner), older ones as
     * cudaErrorInvalidConfiguration. */
    if (strstr(msg, "invalid configuration") || strstr(msg, "InvalidConfiguration") ||
        strstr(msg, "call to cudaLaunchKernel"))
        return "An invalid launch configuration: a block may have at most 1024 threads "
               "(x*y*z), and the grid's y and z at most 65535 blocks.";
    if (strstr(msg, "Uninitialized") || strstr(msg, "uninitialized"))
        return "A read of memory that was never written: initialise it first.";
    return NULL;
}

/* Does the line start a finding? */
static int sanitizer_error_line(const char *s)
{
    return strstr(s, "Invalid ") || strstr(s, "Race reported") || strstr(s, "Barrier error") ||
           strstr(s, "Uninitialized") || strstr(s, "Misaligned") || strstr(s, "misaligned") ||
           strstr(s, "Program hit") || strstr(s, "Out-of-range") || strstr(s, "Error:") ||
           strstr(s, "ERROR:");
}

/* Find "<path>.cu:<line>" (or .cuh) in s; the student's file only, with the
 * sandbox's /work/ prefix cleaned. */
static void source_position(const char *s, char **file, int *line)
{
    for (const char *p = s; (p = strstr(p, ".cu")) != NULL; p += 3) {
        const char *end = p + 3;
        if (*end == 'h')
            end++;
        if (end[0] != ':' || !isdigit((unsigned char)end[1]))
            continue;
        const char *start = p;
        while (start > s && start[-1] != ' ' && start[-1] != '\t' && start[-1] != '(')
            start--;
        if (strncmp(start, "/work/", 6) == 0)
            start += 6;
        if (start[0] == '/') /* the harness or a CUDA header: not the student's line */
            continue;
        *file = strndup(start, (size_t)(end - start));
        *line = atoi(end + 1);
        return;
    }
}

static char *strndup_trim(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    return strndup(s, n);
}

void grade_sanitizer_parse(const char *text, struct score_sanitizer *s)
{
    const char *p = text;
    struct score_finding *cur = NULL;
    while (p && *p && s->nfindings < 10) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        p = nl ? nl + 1 : NULL;
        if (strncmp(line, "=========", 9) != 0)
            continue;
        const char *body = line + 9;
        if (strstr(body, "ERROR SUMMARY") || strstr(body, "COMPUTE-SANITIZER") ||
            strstr(body, "RACECHECK SUMMARY"))
            continue;
        /* An error starts at one space of indent; its frames and "and ..."
         * continuations are indented further. */
        if (sanitizer_error_line(body) && body[0] == ' ' && body[1] != ' ') {
            struct score_finding *f = realloc(s->findings, (s->nfindings + 1) * sizeof *f);
            if (!f)
                return;
            s->findings = f;
            cur = &f[s->nfindings++];
            memset(cur, 0, sizeof *cur);
            cur->message = strndup_trim(body, strlen(body));
            cur->hint = cur->message ? (char *)sanitizer_hint(cur->message) : NULL;
            if (cur->hint)
                cur->hint = strdup(cur->hint);
        }
        /* The device frame's source position (with -lineinfo), in either of
         * compute-sanitizer's formats: "at k(float*)+0x90 in /work/kernel.cu:12"
         * or "at 0x90 in /work/kernel.cu:12:k(float*)". */
        if (cur && !cur->file)
            source_position(body, &cur->file, &cur->line);
    }
}

/* ---------------------------------------------------------------------- */
/* Work that runs at once after the check (threads; each starts its own
 * process): compute-sanitizer memcheck and racecheck in the sandbox, and the
 * trusted judge on the check's and the timing's channels. They are
 * independent of each other and all take the GPU lock shared, so together
 * they cost the longest of them instead of their sum (the submit-to-graded
 * latency, tests/bench/grade_bench.sh). sandbox_run and grade_exec_trusted
 * wait for their own pids only, so threads do not take each other's
 * children. */

/* The shared object the sanitizers load, linked beside the executable. */
struct link_task {
    pthread_t thread;
    int started;
    const struct compile_toolchain *tc;
    const struct lab *lab;
    const char *workdir, *harness;
    struct compile_result res;
    int r;
};

static void *link_so_main(void *p)
{
    struct link_task *t = p;
    t->r = compile_link(t->tc, t->lab, t->workdir, "student.o", t->harness, "prog.so", 1, &t->res);
    return NULL;
}

/* A sanitizer run, pre-started (runner/launch.c): compute-sanitizer with
 * cugrade-launch as its target starts in the sandbox while nvcc compiles,
 * brings up its injection and the CUDA context (most of its cost), and
 * waits on its control socket. After the link, sanitize_go() hands it
 * /work/prog.so; sanitize_cancel() ends a run whose program never came. */
struct sanitize_task {
    pthread_t thread;
    int started;
    const struct run_ctx *rc;
    const char *tool, *cs, *seed, *sanitize_case, *launch;
    long long job_id;
    struct score_sanitizer *s;
    int ctl;                     /* our end of the launcher's control socket */
    int ctl_child;               /* its end: fd 4 in the sandbox */
    int cancel[2];               /* a byte on [1]: the sandbox ends at once */
    int done[2];                 /* [1] closed by the thread when the run ended */
    int gone;                    /* cancelled: nothing to report */
    int overtime;                /* cancelled past its limit: a timeout of the program's */
    double limit;                /* seconds from go; sanitize_go sets deadline from it */
    double deadline;             /* 0 until go */
    int r;                       /* < 0: the sandbox failed (system_error) */
    char err[256];
};

static void sanitize_task_init(struct sanitize_task *t)
{
    memset(t, 0, sizeof *t);
    t->ctl = t->ctl_child = -1;
    t->cancel[0] = t->cancel[1] = t->done[0] = t->done[1] = -1;
}

static void fd_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void *sanitize_main(void *p)
{
    struct sanitize_task *t = p;
    const struct run_ctx *rc = t->rc;
    struct score_sanitizer *s = t->s;
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    int fd = channel_open(rc, t->tool);
    if (fd < 0) {
        t->r = fd;
        snprintf(t->err, sizeof t->err, "cannot open a channel: %s", strerror(-fd));
        fd_close(&t->done[1]);
        return NULL;
    }
    const char *argv[] = {t->cs, "--tool", t->tool, "--error-exitcode", "86",
                          "--print-limit", "20", "--launch-timeout", "60",
                          "/lab/launch", "/work/prog.so", "check", "--seed", t->seed, "--cases",
                          t->sanitize_case, "--no-guard", NULL};
    /* The sandbox's limit covers the wait for the compile and link too;
     * the run's own (t->limit from the go) is sanitizers_settle's. */
    double lim = t->limit + (rc->lab->compile_seconds > 0 ? rc->lab->compile_seconds : 60) * 2;
    struct run_opts o = {NULL, t->launch, NULL, t->ctl_child, t->cancel[0]};
    /* No lock of its own: the job takes one for all its sanitizers at the
     * go (grade_job_run). */
    int r = run_sandboxed_opts(rc, argv, fd, lim, &o, &v);
    close(fd);
    fd_close(&t->done[1]);
    if (t->overtime && (r == -ECANCELED || (r == 0 && v.cancelled))) {
        /* Ended by sanitizers_settle: the program (slow under the tool, or
         * endless) ran past the limit counted from the go. */
        s->ran = 1;
        snprintf(s->note, sizeof s->note, "the program failed under %s: it ran past the "
                 "time limit (%.0f s) under the tool", t->tool, t->limit);
        sandbox_verdict_free(&v);
        return NULL;
    }
    if (r == -ECANCELED || (r == 0 && v.cancelled)) {
        t->gone = 1;
        sandbox_verdict_free(&v);
        return NULL;
    }
    if (r < 0) {
        t->r = r;
        snprintf(t->err, sizeof t->err, "the sanitizer sandbox failed: %s", strerror(-r));
        sandbox_verdict_free(&v);
        return NULL;
    }
    const char *text = v.out ? v.out : "";
    int launch_failed = v.err && strstr(v.err, "cugrade-launch:") != NULL;
    if (launch_failed ||
        (!strstr(text, "COMPUTE-SANITIZER") && !(v.err && strstr(v.err, "COMPUTE-SANITIZER")))) {
        /* The sanitizer itself (or our launcher) could not start in the
         * sandbox: ours, not the student's. The rest of the grade stands;
         * the line is not charged (score.c) and the admins see why. */
        fprintf(stderr, "cugrade-runner: job %lld: compute-sanitizer %s did not start "
                "(exit %d, signal %d): %.300s\n", t->job_id, t->tool, v.exit_code,
                v.signal, v.err ? v.err : "");
        s->infra_failed = 1;
        snprintf(s->note, sizeof s->note,
                 "compute-sanitizer could not run on this runner (our problem, not "
                 "yours): %.150s", v.err ? v.err : "");
        sandbox_verdict_free(&v);
        return NULL;
    }
    s->ran = 1;
    grade_sanitizer_parse(text, s);
    if (v.err)
        grade_sanitizer_parse(v.err, s);
    if (v.exited && v.exit_code == 0) {
        s->clean = 1;
    } else if (v.exited && v.exit_code == SANITIZER_EXIT) {
        snprintf(s->note, sizeof s->note, "%zu error(s) found", s->nfindings);
    } else {
        char fail[256];
        const char *why = run_failure(&v, fail, sizeof fail);
        snprintf(s->note, sizeof s->note, "the program failed under %s: %s", t->tool,
                 why ? why : "unknown");
    }
    sandbox_verdict_free(&v);
    return NULL;
}

/* Start t (tool, rc, cs, seed... filled in) waiting for its program.
 * Returns 0, or -errno with nothing started. */
static int sanitize_prestart(struct sanitize_task *t)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    t->ctl = sv[0];
    t->ctl_child = sv[1];
    if (pipe2(t->cancel, O_CLOEXEC) < 0 || pipe2(t->done, O_CLOEXEC) < 0) {
        int e = -errno;
        fd_close(&t->ctl);
        fd_close(&t->ctl_child);
        fd_close(&t->cancel[0]);
        fd_close(&t->cancel[1]);
        return e;
    }
    task_start(&t->thread, &t->started, sanitize_main, t);
    return 0;
}

/* The program is linked: let t load it, and wait until it has (so that
 * nothing the student's check run does can change what it loads) or its
 * run has ended. */
static void sanitize_go(struct sanitize_task *t)
{
    char c = 'g';
    t->deadline = now_seconds() + t->limit;
    if (t->ctl < 0 || write(t->ctl, &c, 1) != 1)
        return;
    double end = now_seconds() + SANITIZE_LOAD_SECONDS;
    for (;;) {
        struct pollfd pf[2] = {{t->ctl, POLLIN, 0}, {t->done[0], POLLIN, 0}};
        double left = end - now_seconds();
        if (left <= 0) {
            /* Never answered: its verdict says what happened; the check
             * run does not wait for it any longer. */
            fprintf(stderr, "cugrade-runner: %s did not load the program in %d s\n", t->tool,
                    SANITIZE_LOAD_SECONDS);
            break;
        }
        int n = poll(pf, 2, (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || pf[1].revents)
            break; /* the run ended */
        if (pf[0].revents) {
            ssize_t k = read(t->ctl, &c, 1);
            if (k <= 0 || c == 'l' || c == 'e')
                break;
            /* 'r': CUDA is up; keep waiting for the load */
        }
    }
    fd_close(&t->ctl);
}

/* End t's run at once (no program will come, or it is past its deadline);
 * sanitize_finish waits for its thread. */
static void sanitize_cancel(struct sanitize_task *t)
{
    if (t->cancel[1] >= 0) {
        char c = 'c';
        ssize_t w = write(t->cancel[1], &c, 1);
        (void)w;
    }
    fd_close(&t->ctl);
}

/* Wait for the runs that got their program, each until its deadline (its
 * limit counted from the go, as a run started then would have had); one
 * still running then is ended, a timeout of the program's. */
static void sanitizers_settle(struct sanitize_task *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        while (t[i].deadline > 0 && t[i].done[0] >= 0 && !t[i].overtime) {
            double left = t[i].deadline - now_seconds();
            struct pollfd pf = {t[i].done[0], POLLIN, 0};
            int k = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
            if (k < 0 && errno == EINTR)
                continue;
            if (k > 0)
                break; /* ended */
            if (k == 0 && now_seconds() >= t[i].deadline) {
                t[i].overtime = 1;
                sanitize_cancel(&t[i]);
            }
        }
    }
}

/* Wait for t's run, then free what it held. */
static void sanitize_finish(struct sanitize_task *t)
{
    task_join(&t->thread, &t->started);
    fd_close(&t->ctl);
    fd_close(&t->ctl_child);
    fd_close(&t->cancel[0]);
    fd_close(&t->cancel[1]);
    fd_close(&t->done[0]);
    fd_close(&t->done[1]);
}

/* ---------------------------------------------------------------------- */
/* Baselines: timed by the same harness, on the same GPU, cached. */

static double *baseline_slot(struct score_timing *t, const char *name)
{
    if (strcmp(name, "naive") == 0)
        return &t->naive_ms;
    if (strcmp(name, "optimized") == 0)
        return &t->optimized_ms;
    if (strcmp(name, "cublas") == 0)
        return &t->cublas_ms;
    if (strcmp(name, "cpu") == 0)
        return &t->cpu_ms;
    return NULL;
}

/* Path of a baseline program built by build-lab.sh ("baseline-<name>", or
 * "cpu-baseline" for the CPU); "" when absent. */
static void baseline_prog(const struct run_ctx *rc, const char *name, char *out, size_t len)
{
    char dir[DIRLEN];
    lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    if (strcmp(name, "cpu") == 0)
        snprintf(out, len, "%s/cpu-baseline", dir);
    else
        snprintf(out, len, "%s/baseline-%s", dir, name);
    if (access(out, X_OK) != 0)
        out[0] = '\0';
}

/* Median of a JSON array of sample times with the runner's statistics, or NAN. */
static double samples_median(const json_t *samples)
{
    size_t n = json_array_size(samples), k;
    double *x = calloc(n ? n : 1, sizeof *x), ms = NAN;
    json_t *e;
    struct stats_summary s;
    if (!x)
        return NAN;
    json_array_foreach(samples, k, e) x[k] = json_number_value(e);
    if (stats_summarize(x, n, &s) == 0)
        ms = s.median;
    free(x);
    return ms;
}

static void baseline_cache_write(const char *cache, const char *dir, json_t *doc)
{
    char *txt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    char bdir[PATH_MAX];
    snprintf(bdir, sizeof bdir, "%s/baselines", dir);
    if (txt && mkdir_p(bdir) == 0)
        write_file_atomic(cache, txt, strlen(txt));
    free(txt);
}

/* The CPU baseline (reference/<lab>/cpu.c, trusted, one thread): it prints
 * {"median_ms","samples_ms",...} on stdout. Run outside the sandbox. */
static double cpu_baseline_time(const struct run_ctx *rc, const char *prog,
                                const char *case_name, const char *cache, const char *dir)
{
    char *out = NULL;
    const char *argv[] = {prog, "--case", case_name, "--seed", BASELINE_SEED, NULL};
    double lim = (rc->lab->run_seconds > 0 ? rc->lab->run_seconds : 120) * 3;
    int r = grade_exec_trusted(argv, NULL, lim, 1u << 20, &out);
    json_t *doc = r == 0 && out ? json_loads(out, 0, NULL) : NULL;
    free(out);
    double ms = samples_median(json_object_get(doc, "samples_ms"));
    if (!(ms > 0))
        ms = json_number_value(json_object_get(doc, "median_ms"));
    if (ms > 0) {
        json_t *c = json_pack("{s:s, s:s, s:f}", "baseline", "cpu", "case", case_name,
                              "median_ms", ms);
        baseline_cache_write(cache, dir, c);
        json_decref(c);
    } else {
        fprintf(stderr, "cugrade-runner: the CPU baseline of %s failed (%d)\n", rc->lab->name, r);
        ms = NAN;
    }
    json_decref(doc);
    return ms;
}

/* The cached median of a baseline (and its device record into *device when
 * that is NULL), or NAN. */
static double baseline_cached(const char *cache, json_t **device)
{
    json_t *doc = json_load_file(cache, 0, NULL);
    double ms = NAN;
    if (doc) {
        ms = json_number_value(json_object_get(doc, "median_ms"));
        if (!*device && json_is_object(json_object_get(doc, "device")))
            *device = json_incref(json_object_get(doc, "device"));
        json_decref(doc);
    }
    return ms > 0 ? ms : NAN;
}

static double baseline_run(const struct run_ctx *rc, const char *name, const char *prog,
                           const char *case_name, const char *cache, const char *dir,
                           json_t **device);

/* Time one baseline (cached). Returns its median in ms, or NAN. A device
 * record seen on the way is stored into *device when that is NULL. */
static double baseline_time(const struct run_ctx *rc, const char *name, const char *case_name,
                            json_t **device)
{
    char cache[PATH_MAX], dir[DIRLEN], g[128], c[128], prog[PATH_MAX];
    lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    slug(case_name, c, sizeof c);
    snprintf(cache, sizeof cache, "%s/baselines/%s__%s__%s.json", dir, g, c, name);
    double ms = baseline_cached(cache, device);
    if (ms > 0)
        return ms;
    baseline_prog(rc, name, prog, sizeof prog);
    if (!prog[0]) {
        fprintf(stderr, "cugrade-runner: no baseline program %s for lab %s\n", name,
                rc->lab->name);
        return NAN;
    }
    /* Exclusive GPU, and a second look at the cache under the lock: another
     * runner sharing the cache may have just measured it. */
    int lk = gpu_lock(rc->env, 1);
    ms = baseline_cached(cache, device);
    if (!(ms > 0))
        ms = strcmp(name, "cpu") == 0 ? cpu_baseline_time(rc, prog, case_name, cache, dir)
                                      : baseline_run(rc, name, prog, case_name, cache, dir, device);
    gpu_unlock(lk);
    return ms;
}

/* Time the GPU baseline prog (harness + reference kernel) in the sandbox and
 * cache it. Called with the GPU lock held exclusively. Returns ms or NAN. */
static double baseline_run(const struct run_ctx *rc, const char *name, const char *prog,
                           const char *case_name, const char *cache, const char *dir,
                           json_t **device)
{
    int fd = channel_open(rc, name);
    if (fd < 0)
        return NAN;
    const char *argv[] = {"/lab/prog", "time", "--seed", BASELINE_SEED, "--case", case_name,
                          "--max-ms", TIME_MAX_MS, NULL};
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    double ms = NAN;
    double lim = (rc->lab->run_seconds > 0 ? rc->lab->run_seconds : 120) * 3;
    /* The cuBLAS baseline links libcublas dynamically (build-lab.sh). */
    char ldp[PATH_MAX + 64];
    snprintf(ldp, sizeof ldp, "LD_LIBRARY_PATH=%s/lib64", rc->env->cuda_home);
    int r = run_sandboxed_env(rc, argv, fd, lim, prog, ldp, &v);
    struct channel_info ci;
    memset(&ci, 0, sizeof ci);
    if (r == 0 && v.exited && v.exit_code == 0 && channel_read_all(fd, &ci) == 0 && ci.timing) {
        json_t *samples = json_object_get(ci.timing, "samples_ms");
        ms = samples_median(samples);
        if (ms > 0) {
            json_t *out = json_pack("{s:s, s:s, s:s, s:f, s:i, s:O?}", "baseline", name, "case",
                                    case_name, "gpu", rc->env->gpu_name ? rc->env->gpu_name : "",
                                    "median_ms", ms, "samples", (int)json_array_size(samples),
                                    "device", ci.device);
            baseline_cache_write(cache, dir, out);
            json_decref(out);
        }
        if (!*device && ci.device)
            *device = json_incref(ci.device);
    } else {
        fprintf(stderr, "cugrade-runner: baseline %s of %s failed (rc %d, exit %d, signal %d): %s\n",
                name, rc->lab->name, r, v.exit_code, v.signal, v.err ? v.err : "");
    }
    channel_info_clear(&ci);
    sandbox_verdict_free(&v);
    close(fd);
    return ms;
}

/* ---------------------------------------------------------------------- */
/* Wall limits from the naive reference (runner/limit.h): its whole check
 * run, every case of the lab, measured once per GPU model and cached. */

/* name when its rubric line is visible to the student, else a neutral
 * phrase: hidden cases are not named in a student's feedback. */
static const char *case_visible(const struct rubric *rub, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < rub->ncorrectness; i++)
        if (strcmp(rub->correctness[i].case_name, name) == 0) {
            const char *vis = rub->correctness[i].visibility;
            return !vis || strcmp(vis, "visible") == 0 ? name : "(a hidden case)";
        }
    return name;
}

static void limit_cache_path(const struct run_ctx *rc, char *out, size_t len)
{
    char dir[DIRLEN], g[128];
    lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    snprintf(out, len, "%s/limits/%s__naive-check.json", dir, g);
}

/* Run the naive reference's check over every case of the lab in the
 * sandbox (exclusive GPU lock held by the caller) and return its wall
 * seconds, or 0 when it did not run cleanly. */
static double naive_check_run(const struct run_ctx *rc, const char *prog)
{
    const struct lab *lab = rc->lab;
    size_t len = 1;
    for (size_t i = 0; i < lab->ncases; i++)
        len += strlen(lab->cases[i].name) + 1;
    char *list = calloc(1, len);
    int fd = channel_open(rc, "limits");
    double secs = 0;
    if (list && fd >= 0) {
        for (size_t i = 0; i < lab->ncases; i++) {
            if (i)
                strcat(list, ",");
            strcat(list, lab->cases[i].name);
        }
        const char *argv[] = {"/lab/prog", "check", "--seed", BASELINE_SEED, "--cases", list, NULL};
        struct sandbox_verdict v;
        memset(&v, 0, sizeof v);
        int r = run_sandboxed(rc, argv, fd, lab->run_seconds > 0 ? lab->run_seconds : 120, prog,
                              &v);
        if (r == 0 && v.exited && v.exit_code == 0 && !v.timed_out)
            secs = v.wall_seconds;
        else
            fprintf(stderr, "cugrade-runner: the naive check of %s failed (rc %d, exit %d, "
                    "signal %d): wall limits stay at run_seconds\n", lab->name, r, v.exit_code,
                    v.signal);
        sandbox_verdict_free(&v);
    }
    if (fd >= 0)
        close(fd);
    free(list);
    return secs;
}

/* The naive reference's check-run seconds on this GPU: cached, else
 * measured now (measure = 1) under the exclusive GPU lock, else 0. Never
 * call it while holding a GPU lock. */
static double naive_check_seconds(const struct run_ctx *rc, int measure)
{
    char cache[PATH_MAX], prog[PATH_MAX], dir[DIRLEN + 16];
    if (rc->lab->derive_factor <= 0)
        return 0;
    limit_cache_path(rc, cache, sizeof cache);
    double s = limit_cache_read(cache);
    if (s > 0 || !measure)
        return s;
    baseline_prog(rc, "naive", prog, sizeof prog);
    if (!prog[0])
        return 0;
    int lk = gpu_lock(rc->env, 1);
    if (!((s = limit_cache_read(cache)) > 0) && (s = naive_check_run(rc, prog)) > 0) {
        char ldir[DIRLEN];
        lab_dir(rc->env, rc->lab->name, ldir, sizeof ldir);
        snprintf(dir, sizeof dir, "%s/limits", ldir);
        if (mkdir_p(dir) == 0)
            limit_cache_write(cache, s);
        fprintf(stderr, "cugrade-runner: %s: the naive reference's check run took %.2f s on "
                "%s\n", rc->lab->name, s, rc->env->gpu_name ? rc->env->gpu_name : "this GPU");
    }
    gpu_unlock(lk);
    return s;
}

/* GPU memory admission (runner/admit.h): the ledger of this GPU beside its
 * locks, the GPU's capacity (CUGRADE_GPU_MEMORY_MB, else the device
 * record's memory less 12% for the runners' own contexts and the driver),
 * and what a job needs: the lab's biggest case plus a context for each of
 * its processes on the GPU (check, judge, and each sanitizer). */
#define ADMIT_CONTEXT_MB 600
#define ADMIT_STUDENT_MB 2048 /* harness_common.cu HC_STUDENT_DEVICE_MB */
#define ADMIT_MAX_WAIT   600.0

static void admit_path(const struct grade_env *env, char *out, size_t len)
{
    snprintf(out, len, "%s/gpu-%s.admit", env->cache, env->gpu_index ? env->gpu_index : "0");
}

static unsigned long long admit_capacity(const struct run_ctx *rc)
{
    const char *o = getenv("CUGRADE_GPU_MEMORY_MB");
    if (o && *o)
        return strtoull(o, NULL, 10);
    if (!rc->env->gpu_devices || !rc->device_path[0])
        return 0; /* no GPU or no record: admission off */
    return admit_device_mb(rc->device_path) * 88 / 100;
}

static unsigned long long admit_need(const struct lab *lab, size_t nsanitizers)
{
    return lab->device_mb + ADMIT_STUDENT_MB + ADMIT_CONTEXT_MB * (2 + nsanitizers);
}

/* rc->limits for rc->lab (measuring the naive run when measure is set). */
static void run_limits_set(struct run_ctx *rc, int measure)
{
    limit_compute(rc->lab, naive_check_seconds(rc, measure), atof(TIME_MAX_MS),
                  &rc->limits);
}

/* ---------------------------------------------------------------------- */

json_t *grade_system_error_doc(const char *lab, const char *gpu, const char *message)
{
    return json_pack("{s:f, s:f, s:s, s:[], s:{s:s, s:s, s:s, s:s}}", "score", 0.0, "max_score",
                     0.0, "output", message ? message : "internal error", "tests", "cugrade",
                     "lab", lab ? lab : "", "gpu", gpu ? gpu : "", "status", "system_error",
                     "error", message ? message : "internal error");
}

/* Work of the timed case for the physical floor: the timing record's
 * "bytes"/"flops", else the case's params "bytes"/"flops", else the three
 * course labs' own formulas. */
static void case_work(const struct lab *lab, const char *case_name, const json_t *timing,
                      double *bytes, double *flops)
{
    *bytes = json_number_value(json_object_get(timing, "bytes"));
    *flops = json_number_value(json_object_get(timing, "flops"));
    const struct lab_case *c = lab_case_find(lab, case_name);
    const json_t *p = c ? c->params : NULL;
    if (!(*bytes > 0))
        *bytes = json_number_value(json_object_get(p, "bytes"));
    if (!(*flops > 0))
        *flops = json_number_value(json_object_get(p, "flops"));
    if (*bytes > 0 || *flops > 0 || !p)
        return;
#define P(k) json_number_value(json_object_get(p, k))
    if (strcmp(lab->name, "matmul") == 0) {
        double M = P("M"), N = P("N"), K = P("K");
        *flops = 2 * M * N * K;
        *bytes = 4 * (M * K + K * N + M * N);
    } else if (strcmp(lab->name, "reduction") == 0) {
        *bytes = 4 * P("n");
        *flops = P("n");
    } else if (strcmp(lab->name, "embedding") == 0) {
        double ni = P("num_indices"), dim = P("dim");
        *bytes = ni * 8 + 2 * ni * dim * 4;
    }
#undef P
}

/* Free a verdict and zero it, so that freeing it again is harmless. */
static void verdict_reset(struct sandbox_verdict *v)
{
    sandbox_verdict_free(v);
    memset(v, 0, sizeof *v);
}

static int progress_call(grade_progress_fn fn, void *arg, const char *phase, const char *detail)
{
    return fn ? fn(arg, phase, detail) : 0;
}

static int valid_filename(const char *f)
{
    size_t n = f ? strlen(f) : 0;
    if (n < 4 || n > 64 || strcmp(f + n - 3, ".cu") != 0 || f[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)f[i]) && f[i] != '_' && f[i] != '.' && f[i] != '-')
            return 0;
    return 1;
}

static int valid_seed(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 32) /* the harness and judge take 1 to 32 hex digits */
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Remove the job directory: channels and the sandbox's work dir. */
static void jobdir_remove(const char *jobdir, const char *workdir)
{
    if (workdir)
        sandbox_workdir_remove(workdir);
    sandbox_workdir_remove(jobdir);
}

int grade_lab_warm(const struct grade_env *env, const char *lab_name)
{
    struct lab lab;
    struct run_ctx rc;
    char err[512], labdir[PATH_MAX];
    char *workdir = NULL;
    int r;
    memset(&rc, 0, sizeof rc);
    snprintf(labdir, sizeof labdir, "%s/labs/%s", env->root, lab_name);
    if ((r = lab_load(labdir, &lab, err, sizeof err)) < 0)
        return r;
    if (!env->gpu_devices || !lab.timing_case) {
        lab_free(&lab);
        return 0;
    }
    rc.env = env;
    rc.lab = &lab;
    snprintf(rc.jobdir, sizeof rc.jobdir, "%s/warm-XXXXXX", env->work);
    if (mkdir_p(env->work) < 0 || !mkdtemp(rc.jobdir) || chmod(rc.jobdir, 0711) < 0 ||
        (r = sandbox_workdir_create(rc.jobdir, &workdir)) < 0) {
        r = -EIO;
        goto out;
    }
    rc.workdir = workdir;
    device_record_ensure(&rc);
    run_limits_set(&rc, 1);
    json_t *device = NULL;
    struct score_timing t;
    for (size_t i = 0; i < lab.nbaselines; i++) {
        double *slot = baseline_slot(&t, lab.baselines[i]);
        if (slot) {
            *slot = baseline_time(&rc, lab.baselines[i], lab.timing_case, &device);
            fprintf(stderr, "cugrade-runner: %s baseline %s on %s: %.4g ms\n", lab.name,
                    lab.baselines[i], lab.timing_case, *slot);
        }
    }
    json_decref(device);
    r = 0;
out:
    if (rc.jobdir[0])
        jobdir_remove(rc.jobdir, workdir);
    free(workdir);
    lab_free(&lab);
    return r;
}

/* Seconds spent per phase, for the result document ("phases") and the
 * latency benchmark: each mark adds the time since the previous mark. */
struct phase_clock {
    double last;
    json_t *obj;
};

static void phase_mark(struct phase_clock *pc, const char *name)
{
    double now = now_seconds();
    if (pc->obj) {
        double prev = json_real_value(json_object_get(pc->obj, name));
        json_object_set_new(pc->obj, name, json_real(prev + (now - pc->last)));
    }
    pc->last = now;
}

static int stop_at(const struct grade_job *job, const char *phase)
{
    return job->stop_after && strcmp(job->stop_after, phase) == 0;
}


static int lab_built(const struct grade_env *env, const char *lab)
{
    char dir[DIRLEN], stamp[PATH_MAX];
    lab_dir(env, lab, dir, sizeof dir);
    snprintf(stamp, sizeof stamp, "%s/" LAB_STAMP, dir);
    return access(stamp, F_OK) == 0;
}

/* Measure the device record if this GPU has none yet, then start the job's
 * judge session and, when the rubric asks for them, its sanitizers, waiting
 * for the program (the lab is built). Returns 0, or
 * -errno with a sentence in err (a system_error). */
static int prestart(struct run_ctx *rc, const struct grade_job *job, const struct lab *lab,
                    const struct rubric *rub, const char *seed, struct judge_session *js,
                    struct sanitize_task *tasks, struct score_sanitizer *sans, size_t *ntasks,
                    char *cs, size_t cslen, char *launch, size_t launchlen, char *err,
                    size_t errlen)
{
    const struct grade_env *env = rc->env;
    int r;
    device_record_ensure(rc); /* exclusive GPU lock: before anything of ours holds one */
    judge_session_start(rc, js);
    if (!lab->sanitize_case || !(rub->sanitize_memcheck || rub->sanitize_racecheck))
        return 0;
    const char *tools[2] = {rub->sanitize_memcheck ? "memcheck" : NULL,
                            rub->sanitize_racecheck ? "racecheck" : NULL};
    snprintf(cs, cslen, "%s/bin/compute-sanitizer", env->cuda_home);
    if (access(cs, X_OK) != 0) {
        snprintf(err, errlen, "compute-sanitizer not found at %.300s", cs);
        return -ENOENT;
    }
    if ((r = launch_ensure(env, launch, launchlen, err, errlen)) < 0)
        return r;
    for (int t = 0; t < 2; t++) {
        if (!tools[t])
            continue;
        struct sanitize_task *sk = &tasks[*ntasks];
        sanitize_task_init(sk);
        sk->rc = rc;
        sk->tool = tools[t];
        sk->cs = cs;
        sk->launch = launch;
        sk->seed = seed;
        sk->sanitize_case = lab->sanitize_case;
        sk->job_id = job->id;
        sk->limit = rc->limits.sanitize;
        sk->s = &sans[*ntasks];
        sans[*ntasks].tool = tools[t];
        if ((r = sanitize_prestart(sk)) < 0) {
            snprintf(err, errlen, "cannot start %s: %s", tools[t], strerror(-r));
            return r;
        }
        (*ntasks)++;
    }
    return 0;
}

int grade_job_run(const struct grade_env *env, const struct grade_job *job,
                  grade_progress_fn progress, void *arg, const char **status, json_t **result)
{
    struct lab lab;
    struct rubric rub;
    struct run_ctx rc;
    struct score_input in;
    struct score_sanitizer sans[2];
    struct compile_result cres;
    struct inspect_report rep;
    struct sandbox_verdict v;
    struct channel_info ci;
    char err[1024] = "", labdir[PATH_MAX], harness[PATH_MAX], src[80];
    char *workdir = NULL, *objbuf = NULL, *log_keep = NULL;
    char **case_names = NULL;
    size_t ncase_names = 0;
    int r, chk_fd = -1, lab_loaded = 0, rub_loaded = 0;
    const char *st = "system_error", *stopped_after = NULL;
    char status_msg[800] = "", judge_flag[400] = "", seed[33] = "";
    json_t *doc = NULL;
    /* Pre-started before the compile (see prestart). */
    struct sanitize_task san_tasks[2];
    size_t nsan_tasks = 0;
    struct judge_session js;
    struct link_task so_task;
    char launch[PATH_MAX];
    int check_timed_out = 0, prestarted = 0, job_lk = -1;
    char admit_file[PATH_MAX] = "";
    long long admit_token = 0;     /* this job's GPU memory reservation, or 0 */
    struct sandbox_verdict tv;   /* the timing run */
    struct channel_info ti;      /* and its channel */
    const char *why = NULL;
    char fatal[700] = "", cs[512] = "";

    struct phase_clock pc = {now_seconds(), json_object()};
    double t_start = pc.last;
    memset(&lab, 0, sizeof lab);
    memset(&rub, 0, sizeof rub);
    memset(&rc, 0, sizeof rc);
    memset(&in, 0, sizeof in);
    memset(sans, 0, sizeof sans);
    memset(&cres, 0, sizeof cres);
    memset(&v, 0, sizeof v);
    memset(&ci, 0, sizeof ci);
    for (size_t i = 0; i < 2; i++)
        sanitize_task_init(&san_tasks[i]);
    judge_session_init(&js, &rc);
    memset(&so_task, 0, sizeof so_task);
    memset(&tv, 0, sizeof tv);
    memset(&ti, 0, sizeof ti);
    *status = NULL;
    *result = NULL;
    in.timing.naive_ms = in.timing.optimized_ms = in.timing.cublas_ms = in.timing.cpu_ms = NAN;

    /* --- the job and its lab ---------------------------------------- */
    if (!job->lab || strchr(job->lab, '/') || job->lab[0] == '.' || !*job->lab) {
        snprintf(err, sizeof err, "bad lab name");
        goto syserr;
    }
    snprintf(labdir, sizeof labdir, "%s/labs/%s", env->root, job->lab);
    if ((r = lab_load(labdir, &lab, err, sizeof err)) < 0)
        goto syserr;
    lab_loaded = 1;
    if (!job->rubric || (r = rubric_parse(job->rubric, &lab, &rub, err, sizeof err)) < 0) {
        if (!job->rubric)
            snprintf(err, sizeof err, "the job has no rubric");
        goto syserr;
    }
    rub_loaded = 1;
    if (!valid_seed(job->seed)) {
        snprintf(err, sizeof err, "the job's seed is not hex");
        goto syserr;
    }
    /* The server's 128-bit seed, whole: the harness and judge take 1 to 32
     * hex digits (labs/common/gen.cuh gen_seed_parse_wide). */
    snprintf(seed, sizeof seed, "%s", job->seed);

    in.lab = job->lab;
    in.gpu = env->gpu_name;
    in.rubric_version = job->rubric_version;

    /* --- the job's private directory and the sandbox's work dir ------ */
    rc.env = env;
    rc.lab = &lab;
    snprintf(rc.jobdir, sizeof rc.jobdir, "%s/job-XXXXXX", env->work);
    /* 0711: the sandbox (which may drop to an unprivileged uid before
     * bwrap) must traverse to its work dir, but cannot list the job's
     * directory nor open the channels (0600, root's). */
    if (mkdir_p(env->work) < 0 || !mkdtemp(rc.jobdir) || chmod(rc.jobdir, 0711) < 0) {
        snprintf(err, sizeof err, "cannot create a job directory under %s: %s", env->work,
                 strerror(errno));
        rc.jobdir[0] = '\0';
        goto syserr;
    }
    if ((r = sandbox_workdir_create(rc.jobdir, &workdir)) < 0) {
        snprintf(err, sizeof err, "cannot create the sandbox work directory: %s", strerror(-r));
        goto syserr;
    }
    rc.workdir = workdir;
    snprintf(src, sizeof src, "%s", valid_filename(job->filename) ? job->filename : "kernel.cu");
    {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", workdir, src);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || write(fd, job->source, job->source_len) != (ssize_t)job->source_len) {
            snprintf(err, sizeof err, "cannot write the source: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            goto syserr;
        }
        close(fd);
    }

    /* --- pre-start: what waits for the program starts during nvcc ---- */
    /* The judge's CUDA context and the sanitizers' injection and context
     * are most of their cost and need no program: they come up while the
     * student's file compiles (docs/runner.md "Order and overlap"). A lab
     * not built yet (--lazy-build) is built before the link, as it always
     * was, and they start then: a compile error never waits for a build. */
    int limits_measured = !job->stop_after && lab_built(env, job->lab);
    run_limits_set(&rc, limits_measured);
    if (limits_measured) {
        if ((r = prestart(&rc, job, &lab, &rub, seed, &js, san_tasks, sans, &nsan_tasks, cs,
                          sizeof cs, launch, sizeof launch, err, sizeof err)) < 0)
            goto syserr;
        prestarted = 1;
    }
    phase_mark(&pc, "prestart");

    /* --- 3. compile ----------------------------------------------- */
    if (progress_call(progress, arg, "compiling", "nvcc") == -ECANCELED)
        goto cancelled;
    struct compile_toolchain tc = {env->cuda_home, env->arch};
    r = compile_student(&tc, &lab, workdir, src, "student.o", &cres);
    phase_mark(&pc, "compile");
    if (r < 0) {
        snprintf(err, sizeof err, "the compile sandbox failed: %s", strerror(-r));
        goto syserr;
    }
    log_keep = cres.log;
    cres.log = NULL;
    in.compile_log = log_keep;
    if (!cres.ok) {
        st = "compile_error";
        snprintf(status_msg, sizeof status_msg, "%s", cres.message);
        goto score;
    }

    if (stop_at(job, "compile"))
        goto stopped;

    /* --- 4. inspect ----------------------------------------------- */
    if (progress_call(progress, arg, "compiling", "inspecting symbols") == -ECANCELED)
        goto cancelled;
    {
        size_t olen = 0;
        r = sandbox_take_file(workdir, "student.o", 512u << 20, &objbuf, &olen);
        if (r == -ELOOP || r == -EINVAL || r == -EFBIG) {
            st = "rejected";
            in.rejection_symbol = "";
            in.rejection_reason = "the compiled object is not a regular file of sane size.";
            goto score;
        }
        if (r < 0) {
            snprintf(err, sizeof err, "cannot read student.o: %s", strerror(-r));
            goto syserr;
        }
        r = inspect_buffer((const unsigned char *)objbuf, olen, &lab, &rep);
        if (r < 0) {
            snprintf(err, sizeof err, "inspection failed: %s", strerror(-r));
            goto syserr;
        }
        if (!rep.accepted) {
            st = "rejected";
            in.rejection_symbol = rep.symbol;
            in.rejection_reason = rep.reason;
            goto score;
        }
    }

    phase_mark(&pc, "inspect");
    if (stop_at(job, "inspect"))
        goto stopped;

    /* --- 5. link: the executable, and beside it the shared object the
     * pre-started sanitizers load ---------------------------------- */
    if ((r = grade_lab_ensure(env, job->lab, err, sizeof err)) < 0)
        goto syserr;
    if (!prestarted && !job->stop_after) {
        if ((r = prestart(&rc, job, &lab, &rub, seed, &js, san_tasks, sans, &nsan_tasks, cs,
                          sizeof cs, launch, sizeof launch, err, sizeof err)) < 0)
            goto syserr;
        prestarted = 1;
    }
    lab_dir(env, job->lab, harness, sizeof harness);
    strncat(harness, "/harness.o", sizeof harness - strlen(harness) - 1);
    if (progress_call(progress, arg, "compiling", "linking") == -ECANCELED)
        goto cancelled;
    compile_result_free(&cres);
    if (nsan_tasks) {
        so_task.tc = &tc;
        so_task.lab = &lab;
        so_task.workdir = workdir;
        so_task.harness = harness;
        task_start(&so_task.thread, &so_task.started, link_so_main, &so_task);
    }
    r = compile_link(&tc, &lab, workdir, "student.o", harness, "prog", 0, &cres);
    task_join(&so_task.thread, &so_task.started);
    phase_mark(&pc, "link");
    if (r < 0) {
        snprintf(err, sizeof err, "the link sandbox failed: %s", strerror(-r));
        goto syserr;
    }
    if (!cres.ok) {
        /* A link error is the student's (an undefined helper, a clash with
         * the harness): show it like a compile error. */
        size_t a = log_keep ? strlen(log_keep) : 0, b = cres.log ? strlen(cres.log) : 0;
        char *joined = malloc(a + b + 32);
        if (joined) {
            snprintf(joined, a + b + 32, "%s%s%s", log_keep ? log_keep : "",
                     a ? "\n--- link ---\n" : "", cres.log ? cres.log : "");
            free(log_keep);
            log_keep = joined;
            in.compile_log = log_keep;
        }
        st = "compile_error";
        snprintf(status_msg, sizeof status_msg, "linking with the lab's harness failed");
        goto score;
    }

    if (stop_at(job, "link"))
        goto stopped;

    /* The sanitizers get the program now, before any student code runs. */
    int so_failed = nsan_tasks && (so_task.r < 0 || !so_task.res.ok);
    if (so_failed) {
        /* The executable linked and the same objects as a shared object
         * did not: ours. The sanitizers do not run; their line is not
         * charged (score.c, infra_failed). */
        fprintf(stderr, "cugrade-runner: job %lld: the sanitizers' prog.so did not link (%s): %.400s\n",
                job->id, so_task.r < 0 ? strerror(-so_task.r) : so_task.res.message,
                so_task.res.log ? so_task.res.log : "");
        for (size_t i = 0; i < nsan_tasks; i++) {
            sanitize_cancel(&san_tasks[i]);
            sanitize_finish(&san_tasks[i]);
            sans[i].infra_failed = 1;
            snprintf(sans[i].note, sizeof sans[i].note,
                     "compute-sanitizer could not run on this runner (our problem, not yours): "
                     "the program did not link as a shared object");
        }
    }
    /* The job's shared GPU lock: the sanitizers' work, the check run and
     * its judge happen under it; it is let go (after the sanitizers ended)
     * before the timing run's exclusive lock. */
    if (!limits_measured)
        run_limits_set(&rc, 1); /* a lab built just now (--lazy-build) */
    admit_path(env, admit_file, sizeof admit_file);
    {
        double waited = 0;
        r = admit_reserve(admit_file, admit_capacity(&rc), admit_need(&lab, nsan_tasks),
                          ADMIT_MAX_WAIT, &admit_token, &waited);
        phase_mark(&pc, "admit_wait");
        if (r < 0) {
            snprintf(err, sizeof err, "GPU memory admission: %s after %.0f s",
                     r == -EBUSY ? "the GPU's memory stayed taken by other jobs" : strerror(-r),
                     waited);
            goto syserr;
        }
    }
    job_lk = gpu_lock(env, 0);
    if (!so_failed)
        for (size_t i = 0; i < nsan_tasks; i++)
            sanitize_go(&san_tasks[i]);
    in.nsanitizers = nsan_tasks;

    /* --- 6. check ------------------------------------------------- */
    {
        size_t want = rub.ncorrectness ? rub.ncorrectness : lab.ncases;
        case_names = calloc(want ? want : 1, sizeof *case_names);
        size_t list_len = 1;
        if (!case_names)
            goto oom;
        for (size_t i = 0; i < lab.ncases; i++) {
            int in_rubric = rub.ncorrectness == 0;
            for (size_t k = 0; k < rub.ncorrectness; k++)
                if (strcmp(rub.correctness[k].case_name, lab.cases[i].name) == 0)
                    in_rubric = 1;
            if (in_rubric && ncase_names < want) {
                case_names[ncase_names++] = lab.cases[i].name;
                list_len += strlen(lab.cases[i].name) + 1;
            }
        }
        char *list = malloc(list_len);
        if (!list)
            goto oom;
        list[0] = '\0';
        for (size_t i = 0; i < ncase_names; i++) {
            if (i)
                strcat(list, ",");
            strcat(list, case_names[i]);
        }
        char d[48];
        snprintf(d, sizeof d, "0/%zu", ncase_names);
        if (progress_call(progress, arg, "checking", d) == -ECANCELED) {
            free(list);
            goto cancelled;
        }
        if ((chk_fd = channel_open(&rc, "check")) < 0) {
            free(list);
            snprintf(err, sizeof err, "cannot open the result channel: %s", strerror(-chk_fd));
            goto syserr;
        }
        const char *argv[] = {"/work/prog", "check", "--seed", seed, "--cases", list, NULL};
        struct watch w;
        watch_start(&w, chk_fd, (int)ncase_names, progress, arg);
        double lim = rc.limits.check;
        r = run_sandboxed(&rc, argv, chk_fd, lim, NULL, &v); /* under job_lk */
        int wc = watch_stop(&w);
        phase_mark(&pc, "check_run");
        check_timed_out = r == 0 && v.timed_out;
        if (r < 0) {
            free(list);
            snprintf(err, sizeof err, "the run sandbox failed: %s", strerror(-r));
            goto syserr;
        }
        if (wc == -ECANCELED) {
            free(list);
            goto cancelled;
        }
        if ((r = channel_read_all(chk_fd, &ci)) < 0 && r != -EBADMSG) {
            free(list);
            snprintf(err, sizeof err, "cannot read the result channel: %s", strerror(-r));
            goto syserr;
        }
        if (harness_failed(&v, &ci, err, sizeof err)) {
            free(list);
            goto syserr;
        }
        char chan[PATH_MAX], fail[512];
        channel_path(&rc, "check", chan, sizeof chan);
        /* How the check run ended needs no judge: the verdict and the
         * channel say it. */
        why = run_failure(&v, fail, sizeof fail);
        if (v.timed_out && !v.output_limit)
            why = limit_timeout_message(&rc.limits, lim,
                                        case_visible(&rub, ci.ncases < (int)ncase_names
                                                               ? case_names[ci.ncases]
                                                               : NULL),
                                        fail, sizeof fail);
        if (v.exited && v.exit_code == 3) {
            fatal_case_message(&ci, fatal, sizeof fatal);
            if (fatal[0])
                why = fatal;
        }
        if (!why && !ci.done)
            why = "Your program stopped before the harness finished (no final record).";
        snprintf(d, sizeof d, "%zu/%zu", ncase_names, ncase_names);
        progress_call(progress, arg, "checking", d);

        /* The check's judge, while the sanitizers finish beside it. */
        json_t *jdoc = NULL;
        r = judge_run(&rc, &js, seed, chan, list, &jdoc, &in.cases, &in.ncases, err, sizeof err);
        phase_mark(&pc, "judge");
        free(list);
        if (r < 0) {
            json_decref(jdoc);
            goto syserr;
        }
        json_t *jdev = json_object_get(jdoc, "device");
        in.timing.copy_gbs = json_number_value(json_object_get(jdev, "copy_gbs"));
        in.timing.peak_gflops = json_number_value(json_object_get(jdev, "peak_fp32_gflops"));
        json_decref(jdoc);
        if (why) {
            st = v.timed_out ? "timeout" : "runtime_error";
            snprintf(status_msg, sizeof status_msg, "%s", why);
        }
        /* Cases the judge has no verdict on, and launch errors by cause. */
        for (size_t i = 0; i < ncase_names; i++) {
            int found = 0;
            for (size_t k = 0; k < in.ncases; k++)
                if (strcmp(in.cases[k].name, case_names[i]) == 0) {
                    found = 1;
                    const char *le = json_string_value(
                        json_object_get(ci.case_errors, case_names[i]));
                    if (le && (!in.cases[k].message || !*in.cases[k].message)) {
                        free(in.cases[k].message);
                        in.cases[k].message = strdup(le);
                    }
                }
            if (found)
                continue;
            struct score_case *nc = realloc(in.cases, (in.ncases + 1) * sizeof *nc);
            if (!nc)
                goto oom;
            in.cases = nc;
            memset(&nc[in.ncases], 0, sizeof *nc);
            nc[in.ncases].name = strdup(case_names[i]);
            char m[800];
            snprintf(m, sizeof m, "not run: %s", why ? why : "the harness reported nothing");
            nc[in.ncases].message = strdup(m);
            nc[in.ncases].first_bad_index = nc[in.ncases].unwritten = -1;
            nc[in.ncases].max_abs_err = nc[in.ncases].max_rel_err = NAN;
            in.ncases++;
        }
        if (why)
            goto sanitized;
    }
    if (ci.device && !(in.timing.copy_gbs > 0)) {
        in.timing.copy_gbs = json_number_value(json_object_get(ci.device, "copy_gbs"));
        in.timing.peak_gflops = json_number_value(json_object_get(ci.device, "peak_fp32_gflops"));
    }
    verdict_reset(&v);

    /* --- 8. time: alone on the GPU (the exclusive lock waits for the
     * sanitizers), then its judge ---------------------------------- */
    {
        int all_correct = 1, need_correct = 1;
        for (size_t i = 0; i < in.ncases; i++)
            if (!in.cases[i].passed)
                all_correct = 0;
        for (size_t i = 0; i < rub.nspeed; i++)
            if (!rub.speed[i].requires_correct)
                need_correct = 0;
        if (!lab.timing_case || rub.nspeed == 0 || (need_correct && !all_correct))
            goto sanitized;
        if (progress_call(progress, arg, "timing", lab.timing_case) == -ECANCELED)
            goto cancelled;
        int fd = channel_open(&rc, "timing");
        if (fd < 0) {
            snprintf(err, sizeof err, "cannot open a channel: %s", strerror(-fd));
            goto syserr;
        }
        const char *targv[] = {"/work/prog", "time", "--seed", seed, "--case",
                               lab.timing_case, "--max-ms", TIME_MAX_MS, NULL};
        double tlim = rc.limits.timing;
        sanitizers_settle(san_tasks, nsan_tasks);
        gpu_unlock(job_lk);
        job_lk = -1;
        int tlk = gpu_lock(env, 1);
        phase_mark(&pc, "sanitize_wait");
        r = run_sandboxed(&rc, targv, fd, tlim, NULL, &tv);
        gpu_unlock(tlk);
        if (r < 0) {
            close(fd);
            snprintf(err, sizeof err, "the timing sandbox failed: %s", strerror(-r));
            goto syserr;
        }
        phase_mark(&pc, "time_run");
        channel_read_all(fd, &ti);
        close(fd);
        if (harness_failed(&tv, &ti, err, sizeof err))
            goto syserr;
        char fail[512];
        const char *why_t = run_failure(&tv, fail, sizeof fail);
        if (why_t || !ti.timing) {
            st = tv.timed_out ? "timeout" : "runtime_error";
            snprintf(status_msg, sizeof status_msg, "Timing failed: %s",
                     why_t ? why_t : "the harness sent no timing record.");
            /* The timing run's prints are the feedback now. */
            sandbox_verdict_free(&v);
            v = tv;
            memset(&tv, 0, sizeof tv);
            goto sanitized;
        }
        /* The judge checks the re-check (fresh inputs from seed2: a cached
         * answer fails), computes the case's bytes and flops and flags a
         * time past the physical floor; the runner recomputes the median and
         * its error from the raw samples. */
        char tchan[PATH_MAX];
        json_t *jdoc = NULL;
        struct score_case *tcases = NULL;
        size_t ntcases = 0;
        channel_path(&rc, "timing", tchan, sizeof tchan);
        int jlk = gpu_lock(env, 0);
        r = judge_run(&rc, &js, seed, tchan, NULL, &jdoc, &tcases, &ntcases, err, sizeof err);
        gpu_unlock(jlk);
        score_cases_free(tcases, ntcases);
        phase_mark(&pc, "time_judge");
        if (r < 0) {
            json_decref(jdoc);
            goto syserr;
        }
        json_t *jt = json_object_get(jdoc, "timing");
        json_t *samples = json_object_get(jt, "samples_ms");
        size_t n = json_array_size(samples), k;
        double *x = calloc(n ? n : 1, sizeof *x);
        json_t *e;
        struct stats_summary ss;
        if (!x) {
            json_decref(jdoc);
            goto oom;
        }
        json_array_foreach(samples, k, e) x[k] = json_number_value(e);
        r = stats_summarize(x, n, &ss);
        free(x);
        if (r != 0) {
            json_decref(jdoc);
            st = "runtime_error";
            snprintf(status_msg, sizeof status_msg,
                     "Timing failed: the judge accepted no timing samples.");
            goto sanitized;
        }
        in.timing.have = 1;
        in.timing.case_name = lab.timing_case;
        in.timing.student_ms = ss.median;
        in.timing.samples = ss.kept;
        in.timing.rel_err = ss.rel_err;
        in.timing.recheck_passed = json_is_true(json_object_get(jt, "recheck_passed"));
        in.timing.bytes = json_number_value(json_object_get(jt, "bytes"));
        in.timing.flops = json_number_value(json_object_get(jt, "flops"));
        if (!(in.timing.bytes > 0) && !(in.timing.flops > 0))
            case_work(&lab, lab.timing_case, jt, &in.timing.bytes, &in.timing.flops);
        json_t *jdev = json_object_get(jdoc, "device");
        if (json_number_value(json_object_get(jdev, "copy_gbs")) > 0) {
            in.timing.copy_gbs = json_number_value(json_object_get(jdev, "copy_gbs"));
            in.timing.peak_gflops = json_number_value(json_object_get(jdev, "peak_fp32_gflops"));
        }
        if (json_is_true(json_object_get(jt, "flagged")) && in.timing.recheck_passed) {
            snprintf(judge_flag, sizeof judge_flag, "%s",
                     json_string_value(json_object_get(jt, "flag_reason"))
                         ? json_string_value(json_object_get(jt, "flag_reason"))
                         : "flagged by the judge");
            in.timing.judge_flag_reason = judge_flag;
        }
        json_decref(jdoc);
        /* Baselines on the same GPU, same case (cached). */
        json_t *device = NULL;
        for (size_t i = 0; i < lab.nbaselines; i++) {
            double *slot = baseline_slot(&in.timing, lab.baselines[i]);
            if (slot)
                *slot = baseline_time(&rc, lab.baselines[i], lab.timing_case, &device);
        }
        if (device && !(in.timing.copy_gbs > 0)) {
            in.timing.copy_gbs = json_number_value(json_object_get(device, "copy_gbs"));
            in.timing.peak_gflops = json_number_value(json_object_get(device, "peak_fp32_gflops"));
        }
        json_decref(device);
        phase_mark(&pc, "baselines");
    }
sanitized:
    /* --- 7. the sanitizers' verdicts (they ran beside the check) ---- */
    if (check_timed_out) {
        /* An endless program: the sanitizers would only run into their
         * own limit. Ended now and not reported, as when they started
         * after the check. (A crash keeps them: their findings say why.) */
        for (size_t i = 0; i < nsan_tasks; i++)
            sanitize_cancel(&san_tasks[i]);
        in.nsanitizers = 0;
    }
    sanitizers_settle(san_tasks, nsan_tasks);
    gpu_unlock(job_lk);
    job_lk = -1;
    admit_release(admit_file, admit_token);
    admit_token = 0;
    for (size_t i = 0; i < nsan_tasks; i++)
        sanitize_finish(&san_tasks[i]);
    phase_mark(&pc, "sanitize");
    for (size_t i = 0; i < nsan_tasks; i++)
        if (san_tasks[i].r < 0) {
            snprintf(err, sizeof err, "%s", san_tasks[i].err);
            goto syserr;
        }
    if (strcmp(st, "runtime_error") == 0 || strcmp(st, "timeout") == 0)
        goto score; /* how the check or timing run ended, set above */
    st = "graded";
    goto score;
stopped:
    st = "graded";
    stopped_after = job->stop_after;
score:
    in.status = st;
    in.status_message = status_msg[0] ? status_msg : NULL;
    in.sanitizers = sans;
    doc = score_result(&rub, &in);
    if (!doc)
        goto oom;
    phase_mark(&pc, "score");
    if (pc.obj) {
        json_object_set_new(pc.obj, "total", json_real(now_seconds() - t_start));
        json_object_set(json_object_get(doc, "cugrade"), "phases", pc.obj);
    }
    if ((v.out && *v.out) || (v.err && *v.err)) {
        /* The student's own prints are feedback, never a verdict. */
        char buf[4096];
        snprintf(buf, sizeof buf, "%.2000s%s%.2000s", v.out ? v.out : "",
                 (v.out && *v.out) ? "\n" : "", v.err ? v.err : "");
        json_object_set_new(json_object_get(doc, "cugrade"), "program_output", json_string(buf));
    }
    if (stopped_after)
        json_object_set_new(json_object_get(doc, "cugrade"), "stopped_after",
                            json_string(stopped_after));
    *status = st;
    *result = doc;
    r = 0;
    goto out;
cancelled:
    r = -ECANCELED;
    goto out;
oom:
    snprintf(err, sizeof err, "out of memory");
syserr:
    fprintf(stderr, "cugrade-runner: job %lld: system error: %s\n", job->id, err);
    *status = "system_error";
    *result = grade_system_error_doc(job->lab, env->gpu_name, err);
    r = *result ? 0 : -ENOMEM;
out:
    /* No thread may outlive the buffers it writes (a goto from above). */
    task_join(&so_task.thread, &so_task.started);
    compile_result_free(&so_task.res);
    for (size_t i = 0; i < nsan_tasks; i++) {
        sanitize_cancel(&san_tasks[i]); /* a no-op for a run that ended */
        sanitize_finish(&san_tasks[i]);
    }
    gpu_unlock(job_lk);
    if (admit_token)
        admit_release(admit_file, admit_token);
    judge_session_end(&js);
    channel_info_clear(&ti);
    sandbox_verdict_free(&tv);
    json_decref(pc.obj);
    if (chk_fd >= 0)
        close(chk_fd);
    channel_info_clear(&ci);
    sandbox_verdict_free(&v);
    compile_result_free(&cres);
    free(log_keep);
    free(objbuf);
    free(case_names);
    score_cases_free(in.cases, in.ncases);
    for (size_t i = 0; i < 2; i++)
        score_sanitizer_clear(&sans[i]);
    if (rc.jobdir[0] && !getenv("CUGRADE_KEEP_JOBS"))
        jobdir_remove(rc.jobdir, workdir);
    free(workdir);
    if (rub_loaded)
        rubric_free(&rub);
    if (lab_loaded)
        lab_free(&lab);
    return r;
}

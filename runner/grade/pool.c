/*
 * pool.c - see pool.h and docs/python.md "The warm pool".
 */
#include "runner/grade/pool.h"
#include "runner/config.h"
#include "runner/grade/channel.h"
#include "runner/grade/python.h"
#include "runner/gpu/lock.h"
#include "runner/timing/baseline.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { M_STARTING, M_READY, M_GONE };

struct pool_member {
    const struct grade_env *env;
    struct lab lab;
    int lab_loaded;
    time_t started;    /* the wall clock at start: the lab's files must be older */
    struct run_ctx rc; /* the member's directories and the lab's ceiling */
    char *workdir;
    int chk_fd; /* the check channel, until the job takes it */
    int gate;   /* our end of the gate; the owner's is fd 4 */
    int child_gate;
    struct sandbox_pause pause; /* stopped from 'r' to the job */
    struct share_clock sc;
    int clock_on; /* sc runs (until member_stop) */
    double wall;  /* the sandbox's wall ceiling */
    struct python_run pr;
    struct run_opts o;
    struct sandbox_verdict v;
    int r;
    pthread_t run_thread, gate_thread;
    int run_started, gate_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;  /* M_*, under mu */
    int go;     /* 0: no word yet; 1: the job's line is in line; -1: end */
    char *line; /* the job's line for the owner */
    int sent;   /* 1: the owner has the job */
};

static struct pool_member *pool_one; /* this process's member, until taken */

/* ---------------------------------------------------------------------- */
/* The member's two threads: its sandboxed run, and its gate. */

static void member_state(struct pool_member *m, int state)
{
    pthread_mutex_lock(&m->mu);
    if (m->state != M_GONE)
        m->state = state;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void *member_run(void *p)
{
    struct pool_member *m = p;
    m->r = run_sandboxed_opts(&m->rc, m->pr.argv, m->chk_fd, m->wall, &m->o, &m->v);
    run_fd_close(&m->child_gate);
    shutdown(m->gate, SHUT_RDWR); /* the gate's thread, if still waiting, ends */
    member_state(m, M_GONE);
    return NULL;
}

/* 'r' from the owner: the wall clock stops until the job's word; then the
 * job's line (go 1) or the gate shut (go -1: the owner ends quietly). */
static void *member_gate(void *p)
{
    struct pool_member *m = p;
    char c = 0;
    ssize_t n;
    do
        n = read(m->gate, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1 || c != 'r')
        return NULL; /* the run ended (or was ended) before its gate */
    sandbox_pause_begin(&m->pause);
    member_state(m, M_READY);
    pthread_mutex_lock(&m->mu);
    while (m->go == 0)
        pthread_cond_wait(&m->cv, &m->mu);
    int go = m->go;
    pthread_mutex_unlock(&m->mu);
    sandbox_pause_end(&m->pause);
    if (go < 0) {
        shutdown(m->gate, SHUT_RDWR);
        return NULL;
    }
    size_t len = strlen(m->line), off = 0;
    while (off < len) {
        n = send(m->gate, m->line + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    pthread_mutex_lock(&m->mu);
    m->sent = off == len;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Start and end. */

/* Wait for the run's end (ending it first when it has no job: its gate
 * shut, and a run still starting cancelled) and stop its clock. Returns
 * 1 when the clock's limit ended the run. */
static int member_stop(struct pool_member *m)
{
    pthread_mutex_lock(&m->mu);
    if (m->go == 0)
        m->go = -1;
    pthread_cond_broadcast(&m->cv);
    int job = m->go > 0 && m->sent;
    pthread_mutex_unlock(&m->mu);
    if (m->clock_on && m->run_started && !job) {
        char c = 'x';
        ssize_t w = write(m->sc.fds[1], &c, 1);
        (void)w;
    }
    run_task_join(&m->run_thread, &m->run_started);
    if (m->gate >= 0)
        shutdown(m->gate, SHUT_RDWR); /* a gate's thread still reading ends */
    run_task_join(&m->gate_thread, &m->gate_started);
    int fired = 0;
    if (m->clock_on)
        fired = share_clock_stop(&m->sc);
    m->clock_on = 0;
    return fired;
}

static void member_free(struct pool_member *m, int remove_dirs)
{
    if (!m)
        return;
    member_stop(m);
    run_fd_close(&m->gate);
    run_fd_close(&m->child_gate);
    run_fd_close(&m->chk_fd);
    sandbox_verdict_free(&m->v);
    free(m->line);
    if (remove_dirs && m->rc.jobdir[0])
        run_jobdir_remove(m->rc.jobdir, m->workdir);
    free(m->workdir);
    if (m->lab_loaded)
        lab_free(&m->lab);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Load lab into *out (the caller lab_free()s it on 0). Returns 0,
 * -ENOTSUP when its check runs cannot be warm (pool_lab_warmable), or
 * lab_load's -errno. */
static int warmable_load(const struct grade_env *env, const char *lab, struct lab *out)
{
    char dir[PATH_MAX], py[PATH_MAX + 8], err[256];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/labs/%s", env->root, lab);
    int r = lab_load(dir, out, err, sizeof err);
    if (r < 0)
        return r;
    snprintf(py, sizeof py, "%s/lab.py", dir);
    if (out->python_owner || stat(py, &st) < 0) {
        lab_free(out);
        return -ENOTSUP;
    }
    return 0;
}

int pool_lab_warmable(const struct grade_env *env, const char *lab)
{
    struct lab l;
    if (!lab || !*lab || strchr(lab, '/') || lab[0] == '.' || warmable_load(env, lab, &l) < 0)
        return 0;
    lab_free(&l);
    return 1;
}

/* The member's lab, directories, channel, gate and command line (everything
 * but its threads). Returns 0 or -errno. */
static int member_make(struct pool_member *m, const char *lab)
{
    const struct grade_env *env = m->env;
    int sv[2], r;
    if ((r = warmable_load(env, lab, &m->lab)) < 0)
        return r;
    m->lab_loaded = 1;
    m->rc.env = env;
    m->rc.lab = &m->lab;
    snprintf(m->rc.jobdir, sizeof m->rc.jobdir, "%s/job-XXXXXX", env->work);
    if (run_mkdir_p(env->work) < 0 || !mkdtemp(m->rc.jobdir) || chmod(m->rc.jobdir, 0711) < 0) {
        m->rc.jobdir[0] = '\0';
        return -errno;
    }
    if ((r = sandbox_workdir_create(m->rc.jobdir, &m->workdir)) < 0)
        return r;
    m->rc.workdir = m->workdir;
    (void)python_cupy_seed(env, lab, m->workdir); /* none is no error */
    baseline_limits_set(&m->rc, 0);               /* its ceiling: the lab's */
    if ((m->chk_fd = channel_open(m->rc.jobdir, "check")) < 0)
        return m->chk_fd;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    m->gate = sv[0];
    m->child_gate = sv[1];
    memset(&m->o, 0, sizeof m->o);
    m->o.control_fd = m->o.cancel_fd = -1;
    if ((r = python_run_pool(&m->pr, &m->o, env->root, &m->lab)) < 0)
        return r;
    m->o.control_fd = m->child_gate;
    m->o.pause = &m->pause;
    /* The clock counts from the job (pool_go restarts it); until then its
     * limit is the ceiling, as the sandbox's wall is. */
    char users[PATH_MAX];
    lock_active_path(env, users, sizeof users);
    if ((r = share_clock_start_paused(&m->sc, users, m->rc.limits.ceiling, &m->pause,
                                      &m->o.cancel_fd)) < 0)
        return r;
    m->clock_on = 1;
    m->o.stall = &m->sc.stall;
    m->wall = share_wall_ceiling(m->rc.limits.ceiling, m->rc.limits.ceiling);
    return 0;
}

int pool_start(const struct grade_env *env, const char *lab)
{
    assert(!pool_one && env && lab);
    struct pool_member *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->env = env;
    m->chk_fd = m->gate = m->child_gate = -1;
    m->started = time(NULL);
    m->state = M_STARTING;
    sandbox_pause_init(&m->pause);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    int r = member_make(m, lab);
    if (r == 0)
        run_task_start(&m->gate_thread, &m->gate_started, member_gate, m);
    if (r == 0 && m->gate_started)
        run_task_start(&m->run_thread, &m->run_started, member_run, m);
    if (r == 0 && !m->run_started)
        r = -EAGAIN; /* member_free ends the gate's thread (the gate shut) */
    if (r < 0) {
        fprintf(stderr, "cugrade-runner: no warm check run for %s: %s\n", lab, strerror(-r));
        member_free(m, 1);
        return r;
    }
    pool_one = m;
    return 0;
}

int pool_alive(void)
{
    struct pool_member *m = pool_one;
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int alive = m->state != M_GONE;
    pthread_mutex_unlock(&m->mu);
    return alive;
}

void pool_end(void)
{
    struct pool_member *m = pool_one;
    pool_one = NULL;
    member_free(m, 1);
}

/* 1 when a file of the lab's folder that the owner reads changed after
 * the member started (the owner loaded the old one). */
static int lab_changed(const struct pool_member *m)
{
    static const char *const files[] = {"lab.json", "lab.py"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/labs/%s/%s", m->env->root, m->lab.name, files[i]);
        if (stat(p, &st) == 0 && st.st_mtime >= m->started)
            return 1;
    }
    return 0;
}

struct pool_member *pool_take(const char *lab)
{
    struct pool_member *m = pool_one;
    if (!m)
        return NULL;
    pool_one = NULL;
    if (!lab || strcmp(m->lab.name, lab) != 0 || lab_changed(m)) {
        member_free(m, 1);
        return NULL;
    }
    return m;
}

const char *pool_member_jobdir(const struct pool_member *m)
{
    return m->rc.jobdir;
}

const char *pool_member_workdir(const struct pool_member *m)
{
    return m->workdir;
}

int pool_member_channel(struct pool_member *m)
{
    int fd = m->chk_fd;
    m->chk_fd = -1;
    return fd;
}

/* ---------------------------------------------------------------------- */
/* The job. */

/* Wait for the member's 'r' (or its end), at most seconds. Returns 1 when
 * it is ready for the job. */
static int member_ready(struct pool_member *m, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&m->mu);
    while (m->state == M_STARTING)
        if (pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT)
            break;
    int ready = m->state == M_READY;
    pthread_mutex_unlock(&m->mu);
    return ready;
}

/* The job's line for the owner: {"file", "cases", "seed"} and a newline,
 * or NULL (out of memory). */
static char *job_line(const char *src, const char *cases, const char *seed)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "/work/%s", src);
    json_t *o = json_pack("{s:s, s:s, s:s}", "file", file, "cases", cases, "seed", seed);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    char *line = s ? malloc(strlen(s) + 2) : NULL;
    if (line)
        sprintf(line, "%s\n", s);
    free(s);
    return line;
}

int pool_go(struct pool_member *m, const struct run_ctx *rc, const char *seed, const char *cases,
            const char *src, double limit, struct sandbox_verdict *v, struct share_clock *sc,
            int *shared)
{
    assert(m && rc && strcmp(rc->workdir, m->workdir) == 0 && limit > 0);
    char *line = job_line(src, cases, seed);
    if (!line || share_wall_ceiling(rc->limits.ceiling, limit) != m->wall ||
        !member_ready(m, PYTHON_STARTUP_SECONDS)) {
        free(line);
        member_stop(m); /* the cold run will have the work directory alone */
        return -ESTALE;
    }
    share_clock_restart(&m->sc, limit);
    pthread_mutex_lock(&m->mu);
    m->line = line;
    m->go = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    run_task_join(&m->gate_thread, &m->gate_started);
    if (!m->sent) { /* the owner was gone before the job */
        member_stop(m);
        return -ESTALE;
    }
    if (member_stop(m) && m->v.cancelled) {
        m->v.cancelled = 0; /* the share clock's cancel is the time limit */
        m->v.timed_out = 1;
    }
    *v = m->v;
    memset(&m->v, 0, sizeof m->v);
    *sc = m->sc;
    *shared = 1;
    return m->r;
}

void pool_member_free(struct pool_member *m)
{
    member_free(m, 0);
}

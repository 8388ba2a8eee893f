/*
 * pool.c - see pool.h and docs/python.md "The warm pool".
 */
#include "runner/grade/pool.h"
#include "runner/run/channel.h"
#include "runner/grade/python.h"
#include "runner/gpu/lock.h"
#include "runner/timing/baseline.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { M_STARTING, M_READY, M_GONE };

/* One warm run: the check run, or the job's first timing run. */
struct pool_run {
    struct pool_member *m;
    const char *name; /* "check" or "timing": its channel's name too */
    int chan;         /* its channel, until the job takes it */
    int gate;         /* our end of the gate; the owner's is fd 4 */
    int child_gate;
    struct sandbox_pause pause; /* stopped from 'r' to the job */
    struct sandbox_boost boost; /* asked for by the timing gate (TIME_HOLD_NICE) */
    struct share_clock sc;
    int clock_on; /* sc runs (until run_clock_stop) */
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

struct pool_member {
    const struct grade_env *env;
    struct lab lab;
    int lab_loaded;
    struct timespec started; /* the wall clock at start: the lab's files must be older */
    struct run_ctx rc;       /* the member's directories and the lab's ceiling */
    char *workdir;
    struct pool_run check, time; /* time.name NULL: the lab times nothing */
};

static struct pool_member *pool_one; /* this process's member, until taken */

/* ---------------------------------------------------------------------- */
/* A warm run's two threads: its sandboxed run, and its gate. */

static void run_state(struct pool_run *w, int state)
{
    pthread_mutex_lock(&w->mu);
    if (w->state != M_GONE)
        w->state = state;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void *warm_run_main(void *p)
{
    struct pool_run *w = p;
    w->r = run_sandboxed_opts(&w->m->rc, w->pr.argv, w->chan, w->wall, &w->o, &w->v);
    run_fd_close(&w->child_gate);
    shutdown(w->gate, SHUT_RDWR); /* the gate's threads, if still waiting, end */
    run_state(w, M_GONE);
    return NULL;
}

/* 'r' from the owner: the wall clock stops until the job's word; then the
 * job's line (go 1) or the gate shut (go -1: the owner ends quietly). */
static void *warm_gate_main(void *p)
{
    struct pool_run *w = p;
    if (!run_gate_ready(w->gate, &w->pause))
        return NULL; /* the run ended (or was ended) before its gate */
    run_state(w, M_READY);
    pthread_mutex_lock(&w->mu);
    while (w->go == 0)
        pthread_cond_wait(&w->cv, &w->mu);
    int go = w->go;
    pthread_mutex_unlock(&w->mu);
    sandbox_pause_end(&w->pause);
    if (go < 0) {
        shutdown(w->gate, SHUT_RDWR);
        return NULL;
    }
    int sent = run_write_all(w->gate, w->line, strlen(w->line)) == 0;
    pthread_mutex_lock(&w->mu);
    w->sent = sent;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* A warm run's start and end. */

/* Wait for the run's end, ending it first when it has no job (its gate
 * shut, a run still starting cancelled) or when kill is set (the job is
 * over: cancelled, whatever it does). */
static void run_end(struct pool_run *w, int kill)
{
    pthread_mutex_lock(&w->mu);
    if (w->go == 0)
        w->go = -1;
    pthread_cond_broadcast(&w->cv);
    int job = w->go > 0 && w->sent;
    pthread_mutex_unlock(&w->mu);
    if (w->clock_on && w->run_started && (!job || kill)) {
        char c = 'x';
        ssize_t n = write(w->sc.fds[1], &c, 1);
        (void)n;
    }
    run_task_join(&w->run_thread, &w->run_started);
    if (w->gate >= 0)
        shutdown(w->gate, SHUT_RDWR); /* a gate's thread still reading ends */
    run_task_join(&w->gate_thread, &w->gate_started);
}

/* Stop the run's clock (once its run ended). Returns 1 when the clock's
 * limit ended the run. */
static int run_clock_stop(struct pool_run *w)
{
    int fired = w->clock_on ? share_clock_stop(&w->sc) : 0;
    w->clock_on = 0;
    return fired;
}

static void run_free(struct pool_run *w)
{
    if (!w->name)
        return;
    run_end(w, 1);
    run_clock_stop(w);
    run_fd_close(&w->gate);
    run_fd_close(&w->child_gate);
    run_fd_close(&w->chan);
    sandbox_verdict_free(&w->v);
    free(w->line);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->name = NULL;
}

/* Make run w (name "check" or "timing") of member m and start its threads.
 * Returns 0 or -errno (then run_free ends what was started). */
static int run_start(struct pool_member *m, struct pool_run *w, const char *name)
{
    const struct grade_env *env = m->env;
    int sv[2], r;
    w->m = m;
    w->name = name;
    w->chan = w->gate = w->child_gate = -1;
    w->state = M_STARTING;
    sandbox_pause_init(&w->pause);
    sandbox_boost_init(&w->boost, TIME_HOLD_NICE);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int timing = strcmp(name, "timing") == 0;
    if ((w->chan = channel_open(m->rc.jobdir, name)) < 0)
        return w->chan;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    w->gate = sv[0];
    w->child_gate = sv[1];
    memset(&w->o, 0, sizeof w->o);
    w->o.control_fd = w->o.cancel_fd = -1;
    if ((r = python_run_pool(&w->pr, &w->o, env->root, &m->lab, timing)) < 0)
        return r;
    (void)python_run_kept(&w->pr, &w->o, env, &m->lab);
    w->o.control_fd = w->child_gate;
    w->o.pause = &w->pause;
    w->o.boost = timing ? &w->boost : NULL;
    w->o.timing = timing;
    /* The clock counts from the job (pool_go, pool_time_give restart it);
     * until then its limit is the run's ceiling, as the sandbox's wall is
     * (job_check_run's and job_time_gated's for a Python run). */
    double ceiling = timing ? 2 * m->rc.limits.ceiling : m->rc.limits.ceiling;
    char users[PATH_MAX];
    lock_active_path(env, users, sizeof users);
    if ((r = share_clock_start_paused(&w->sc, users, ceiling, &w->pause, &w->o.cancel_fd)) < 0)
        return r;
    w->clock_on = 1;
    w->o.stall = &w->sc.stall;
    w->wall = share_wall_ceiling(ceiling, ceiling);
    run_task_start(&w->gate_thread, &w->gate_started, warm_gate_main, w);
    if (w->gate_started)
        run_task_start(&w->run_thread, &w->run_started, warm_run_main, w);
    return w->run_started ? 0 : -EAGAIN;
}

/* Load lab into *out (the caller lab_free()s it on 0). Returns 0,
 * -ENOTSUP when its check runs cannot be warm (pool_lab_warmable: the
 * common owner without the lab's lab.py, or an owner of the lab's own
 * without the pool's mode, lab.json python.pool), or lab_load's -errno. */
static int warmable_load(const struct grade_env *env, const char *lab, struct lab *out)
{
    char dir[PATH_MAX], py[PATH_MAX + 8], err[256];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/labs/%s", env->root, lab);
    int r = lab_load(dir, out, err, sizeof err);
    if (r < 0)
        return r;
    snprintf(py, sizeof py, "%s/lab.py", dir);
    if (out->python_owner ? !out->python_pool : stat(py, &st) < 0) {
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

static void member_free(struct pool_member *m, int remove_dirs)
{
    if (!m)
        return;
    run_free(&m->check);
    run_free(&m->time);
    if (remove_dirs && m->rc.jobdir[0])
        run_jobdir_remove(m->rc.jobdir, m->workdir);
    free(m->workdir);
    if (m->lab_loaded)
        lab_free(&m->lab);
    free(m);
}

/* The member's lab and directories, then its runs: the check run, and the
 * timing run when the lab has a timed case. Returns 0 or -errno. */
static int member_make(struct pool_member *m, const char *lab)
{
    const struct grade_env *env = m->env;
    int r;
    if ((r = warmable_load(env, lab, &m->lab)) < 0)
        return r;
    m->lab_loaded = 1;
    m->rc.env = env;
    m->rc.lab = &m->lab;
    if ((r = run_jobdir_make(env, m->rc.jobdir, sizeof m->rc.jobdir)) < 0 ||
        (r = sandbox_workdir_create(m->rc.jobdir, &m->workdir)) < 0)
        return r;
    m->rc.workdir = m->workdir;
    (void)python_cupy_seed(env, lab, m->workdir); /* none is no error */
    baseline_limits_set(&m->rc, 0);               /* its ceiling: the lab's */
    if ((r = run_start(m, &m->check, "check")) < 0)
        return r;
    if (m->lab.timing_case && (r = run_start(m, &m->time, "timing")) < 0)
        return r;
    return 0;
}

int pool_start(const struct grade_env *env, const char *lab)
{
    assert(!pool_one && env && lab);
    struct pool_member *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->env = env;
    clock_gettime(CLOCK_REALTIME, &m->started);
    int r = member_make(m, lab);
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
    int alive = 1;
    struct pool_run *runs[] = {&m->check, &m->time};
    for (size_t i = 0; i < 2; i++) {
        if (!runs[i]->name)
            continue;
        pthread_mutex_lock(&runs[i]->mu);
        alive &= runs[i]->state != M_GONE;
        pthread_mutex_unlock(&runs[i]->mu);
    }
    return alive;
}

void pool_end(void)
{
    struct pool_member *m = pool_one;
    pool_one = NULL;
    member_free(m, 1);
}

/* 1 when a file of the lab's folder that the owner reads changed after
 * the member started (the owner loaded the old one): lab.json and the
 * folder's Python files (lab.py; an owner of the lab's own and the scripts
 * it starts, such as the profiling lab's trainer.py and starter.py). */
static int lab_changed(const struct pool_member *m)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/labs/%s", m->env->root, m->lab.name);
    DIR *d = opendir(dir);
    if (!d)
        return 1; /* the lab is gone: its member is stale */
    int changed = 0;
    struct dirent *e;
    while (!changed && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (strcmp(e->d_name, "lab.json") != 0 && (n < 4 || strcmp(e->d_name + n - 3, ".py") != 0))
            continue;
        struct stat st;
        changed =
            fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
            (st.st_mtim.tv_sec > m->started.tv_sec ||
             (st.st_mtim.tv_sec == m->started.tv_sec && st.st_mtim.tv_nsec >= m->started.tv_nsec));
    }
    closedir(d);
    return changed;
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
    int fd = m->check.chan;
    m->check.chan = -1;
    return fd;
}

/* ---------------------------------------------------------------------- */
/* The job. */

/* Wait for the run's 'r' (or its end), at most seconds. Returns 1 when
 * it is ready for the job. */
static int run_ready(struct pool_run *w, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&w->mu);
    while (w->state == M_STARTING)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT)
            break;
    int ready = w->state == M_READY;
    pthread_mutex_unlock(&w->mu);
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

/* Give run w its job (ready within wait seconds, its wall ceiling the
 * one wall): its clock restarted to limit, the line sent. Returns 0, or
 * -ESTALE (then the run is ended: the job's cold run has the work
 * directory alone). */
static int run_give(struct pool_run *w, double wall, double wait, const char *src,
                    const char *cases, const char *seed, double limit)
{
    char *line = job_line(src, cases, seed);
    if (!line || wall != w->wall || !run_ready(w, wait)) {
        free(line);
        run_end(w, 0);
        return -ESTALE;
    }
    share_clock_restart(&w->sc, limit);
    pthread_mutex_lock(&w->mu);
    w->line = line;
    w->go = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    run_task_join(&w->gate_thread, &w->gate_started);
    if (!w->sent) { /* the owner was gone before the job */
        run_end(w, 0);
        return -ESTALE;
    }
    return 0;
}

int pool_go(struct pool_member *m, const struct run_ctx *rc, const char *seed, const char *cases,
            const char *src, double limit, struct sandbox_verdict *v, struct share_clock *sc,
            int *shared)
{
    assert(m && rc && strcmp(rc->workdir, m->workdir) == 0 && limit > 0);
    struct pool_run *w = &m->check;
    if (run_give(w, share_wall_ceiling(rc->limits.ceiling, limit), PYTHON_STARTUP_SECONDS, src,
                 cases, seed, limit) < 0)
        return -ESTALE;
    run_end(w, 0);
    share_clock_timeout(&w->v, run_clock_stop(w));
    *v = w->v;
    memset(&w->v, 0, sizeof w->v);
    *sc = w->sc;
    *shared = 1;
    return w->r;
}

int pool_time_give(struct pool_member *m, const struct run_ctx *rc, const char *seed,
                   const char *src, double tlim, struct pool_time *t)
{
    assert(m && rc && strcmp(rc->workdir, m->workdir) == 0 && tlim > 0);
    struct pool_run *w = &m->time;
    if (!w->name || !m->lab.timing_case)
        return -ESTALE;
    if (run_give(w, share_wall_ceiling(2 * rc->limits.ceiling, tlim), PYTHON_STARTUP_SECONDS, src,
                 m->lab.timing_case, seed, tlim) < 0)
        return -ESTALE;
    t->gate = fcntl(w->gate, F_DUPFD_CLOEXEC, 0);
    if (t->gate < 0) {
        run_end(w, 1); /* its job was sent: ended, a failure of ours */
        return -ESTALE;
    }
    t->chan = w->chan;
    w->chan = -1;
    t->pause = &w->pause;
    t->boost = &w->boost;
    t->clock = &w->sc;
    return 0;
}

int pool_time_join(struct pool_member *m, struct sandbox_verdict *v)
{
    struct pool_run *w = &m->time;
    run_task_join(&w->run_thread, &w->run_started);
    *v = w->v;
    memset(&w->v, 0, sizeof w->v);
    return w->r;
}

int pool_time_clock_stop(struct pool_member *m)
{
    return run_clock_stop(&m->time);
}

void pool_member_free(struct pool_member *m)
{
    member_free(m, 0);
}

/*
 * job.c - see job.h. The phases in the order grade_job_run calls them.
 */
#include "runner/grade/job.h"
#include "runner/config.h"
#include "runner/grade/job_phase.h"
#include "status.h"
#include "runner/gpu/admit.h"
#include "runner/timing/baseline.h"
#include "runner/grade/inspect.h"
#include "runner/grade/labcache.h"
#include "runner/gpu/lock.h"
#include "runner/feedback/profile.h"
#include "runner/grade/pool.h"
#include "runner/grade/python.h"
#include "runner/gpu/health.h"
#include "runner/feedback/hint.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Small helpers. */

int progress_call(const struct job *j, const char *phase, const char *detail)
{
    return j->progress ? j->progress(j->arg, phase, detail) : 0;
}

static int valid_filename(const char *f)
{
    size_t n = f ? strlen(f) : 0;
    /* Not '-' first: nvcc would take "--dryrun.cu" for an option. */
    if (n < 4 || n > 64 || (strcmp(f + n - 3, ".cu") != 0 && !python_submission(f)) ||
        f[0] == '.' || f[0] == '-')
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

/* Work of the timed case for the physical floor: the timing record's
 * "bytes"/"flops", else the case's params "bytes"/"flops", else the lab's
 * "work" formulas (lab.json) over the case's params. */
void case_work(const struct lab *lab, const char *case_name, const json_t *timing,
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
    if (lab_case_work(lab, c, "bytes", bytes) != 0)
        *bytes = 0;
    if (lab_case_work(lab, c, "flops", flops) != 0)
        *flops = 0;
}

void job_clock_mark(struct job_clock *pc, const char *name)
{
    double now = run_now();
    if (pc->obj) {
        double prev = json_real_value(json_object_get(pc->obj, name));
        json_object_set_new(pc->obj, name, json_real(prev + (now - pc->last)));
    }
    pc->last = now;
}

int job_stop_at(struct job *j, const char *phase)
{
    if (!j->g->stop_after || strcmp(j->g->stop_after, phase) != 0)
        return 0;
    j->st = status_name(STATUS_GRADED);
    j->stopped_after = j->g->stop_after;
    return 1;
}

/* A system_error of ours: the sentence into j->err, r (< 0) returned. */
int job_fail(struct job *j, int r, const char *fmt, ...)
{
    va_list ap;
    assert(r < 0);
    va_start(ap, fmt);
    vsnprintf(j->err, sizeof j->err, fmt, ap);
    va_end(ap);
    return r;
}

/* ---------------------------------------------------------------------- */
/* The job's life. */

void job_init(struct job *j, const struct grade_env *env, const struct grade_job *g,
              grade_progress_fn progress, void *arg)
{
    memset(j, 0, sizeof *j);
    j->env = env;
    j->g = g;
    j->progress = progress;
    j->arg = arg;
    j->pc.start = j->pc.last = run_now();
    j->pc.obj = json_object();
    j->rc.env = env;
    j->rc.lab = &j->lab;
    j->tc = (struct compile_toolchain){env->cuda_home, env->arch};
    for (size_t i = 0; i < 2; i++)
        sanitizer_task_init(&j->san_tasks[i]);
    judge_session_init(&j->js, &j->rc);
    j->job_lk = j->chk_fd = -1;
    j->st = status_name(STATUS_SYSTEM_ERROR);
    j->in.timing.naive_ms = j->in.timing.optimized_ms = j->in.timing.cublas_ms =
        j->in.timing.cpu_ms = NAN;
}

void job_free(struct job *j)
{
    /* No thread may outlive the buffers it writes. */
    job_time_prestart_end(j);
    run_task_join(&j->so_task.thread, &j->so_task.started);
    compile_result_free(&j->so_task.res);
    for (size_t i = 0; i < j->nsan_tasks; i++) {
        sanitizer_cancel(&j->san_tasks[i]); /* a no-op for a run that ended */
        sanitizer_finish(&j->san_tasks[i]);
    }
    lock_gpu_release(j->job_lk);
    j->job_lk = -1;
    job_unreserve(j);
    judge_session_end(&j->js);
    channel_info_clear(&j->ti);
    sandbox_verdict_free(&j->tv);
    json_decref(j->profile);
    json_decref(j->hold);
    json_decref(j->pc.obj);
    if (j->chk_fd >= 0)
        close(j->chk_fd);
    channel_info_clear(&j->ci);
    sandbox_verdict_free(&j->v);
    compile_result_free(&j->cres);
    free(j->log_keep);
    free(j->objbuf);
    free(j->case_names);
    free(j->case_list);
    score_cases_free(j->in.cases, j->in.ncases);
    for (size_t i = 0; i < 2; i++)
        score_sanitizer_clear(&j->sans[i]);
    pool_member_free(j->warm); /* its run ended or ends now; its folders are the job's */
    j->warm = NULL;
    if (j->rc.jobdir[0] && !j->env->keep_jobs)
        run_jobdir_remove(j->rc.jobdir, j->workdir);
    free(j->workdir);
    if (j->rub_loaded)
        rubric_free(&j->rub);
    if (j->lab_loaded)
        lab_free(&j->lab);
}

/* ---------------------------------------------------------------------- */
/* Setup: the job and its lab, the job's private directory, the source. */

static int job_load(struct job *j)
{
    const struct grade_job *g = j->g;
    char labdir[PATH_MAX];
    int r;
    if (!g->lab || strchr(g->lab, '/') || g->lab[0] == '.' || !*g->lab)
        return job_fail(j, -EINVAL, "bad lab name");
    snprintf(labdir, sizeof labdir, "%s/labs/%s", j->env->root, g->lab);
    if ((r = lab_load(labdir, &j->lab, j->err, sizeof j->err)) < 0)
        return r;
    j->lab_loaded = 1;
    if (!g->rubric)
        return job_fail(j, -EINVAL, "the job has no rubric");
    if ((r = rubric_parse(g->rubric, &j->lab, &j->rub, j->err, sizeof j->err)) < 0)
        return r;
    j->rub_loaded = 1;
    if (!valid_seed(g->seed))
        return job_fail(j, -EINVAL, "the job's seed is not hex");
    /* The server's 128-bit seed, whole: the harness and judge take 1 to 32
     * hex digits (labs/common/gen.cuh gen_seed_parse_wide). */
    snprintf(j->seed, sizeof j->seed, "%s", g->seed);
    j->in.lab = g->lab;
    j->in.gpu = j->env->gpu_name;
    j->in.rubric_version = g->rubric_version;
    return 0;
}

/* The job's private directory and its sandbox work directory: a warm
 * check run's (pool.h) for a Python file when this process has one of
 * the lab's, else new ones. 0 or -errno (j->err says it). */
static int job_dirs(struct job *j)
{
    const struct grade_env *env = j->env;
    int r;
    if (python_submission(j->g->filename) && (j->warm = pool_take(j->g->lab))) {
        snprintf(j->rc.jobdir, sizeof j->rc.jobdir, "%s", pool_member_jobdir(j->warm));
        if (!(j->workdir = strdup(pool_member_workdir(j->warm))))
            return job_fail(j, -ENOMEM, "out of memory");
        j->rc.workdir = j->workdir;
        return 0;
    }
    if ((r = run_jobdir_make(env, j->rc.jobdir, sizeof j->rc.jobdir)) < 0) {
        snprintf(j->err, sizeof j->err, "cannot create a job directory under %s: %s", env->work,
                 strerror(-r));
        return -EIO;
    }
    if ((r = sandbox_workdir_create(j->rc.jobdir, &j->workdir)) < 0)
        return job_fail(j, r, "cannot create the sandbox work directory: %s", strerror(-r));
    j->rc.workdir = j->workdir;
    if (python_submission(j->g->filename)) /* the lab's CuPy kernels (a member has them) */
        (void)python_cupy_seed(j->env, j->g->lab, j->workdir);
    return 0;
}

int job_setup(struct job *j)
{
    int r;
    if ((r = job_load(j)) < 0 || (r = job_dirs(j)) < 0)
        return r;
    snprintf(j->src, sizeof j->src, "%s",
             valid_filename(j->g->filename) ? j->g->filename
             : python_submission(j->g->filename) ? "kernel.py" : "kernel.cu");
    /* The extension picks the language (docs/python.md). */
    j->python = python_submission(j->src);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", j->workdir, j->src);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || write(fd, j->g->source, j->g->source_len) != (ssize_t)j->g->source_len) {
        int e = errno ? errno : EIO;
        if (fd >= 0)
            close(fd);
        return job_fail(j, -e, "cannot write the source: %s", strerror(e));
    }
    close(fd);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Pre-start: what waits for the program starts during nvcc. */

/* Measure the device record if this GPU has none yet, then start the job's
 * judge session and, when the rubric asks for them, its sanitizers, waiting
 * for the program (the lab is built). Returns 0, or -errno with a sentence
 * in j->err. */
static int job_prestart_now(struct job *j)
{
    const struct lab *lab = &j->lab;
    const struct rubric *rub = &j->rub;
    int r;
    assert(!j->prestarted && j->nsan_tasks == 0);
    assert(j->admitted); /* its contexts are counted in the reservation */
    if ((r = job_case_list(j)) < 0)
        return r;
    judge_session_start(&j->rc, &j->js, j->seed, j->case_list);
    j->prestarted = 1;
    if (!lab->sanitize_case || !(rub->sanitize_memcheck || rub->sanitize_racecheck))
        return 0;
    const char *tools[2] = {rub->sanitize_memcheck ? "memcheck" : NULL,
                            rub->sanitize_racecheck ? "racecheck" : NULL};
    snprintf(j->cs, sizeof j->cs, "%s/bin/compute-sanitizer", j->env->cuda_home);
    if (access(j->cs, X_OK) != 0)
        return job_fail(j, -ENOENT, "compute-sanitizer not found at %.300s", j->cs);
    if (!j->python && (r = labcache_launch_ensure(j->env, j->launch, sizeof j->launch, j->err,
                                                  sizeof j->err)) < 0)
        return r;
    for (int t = 0; t < 2; t++) {
        if (!tools[t])
            continue;
        struct sanitizer_task *sk = &j->san_tasks[j->nsan_tasks];
        sanitizer_task_init(sk);
        sk->rc = &j->rc;
        sk->tool = tools[t];
        sk->cs = j->cs;
        sk->launch = j->launch;
        /* A throwaway seed, never the run's: the tool is dumpable and its
         * command line is in /proc, and the run's seed would regenerate the
         * check's and the re-check's inputs. Nothing of a sanitizer run's
         * outputs is judged, so any inputs do. */
        python_sanitize_seed(&sk->py);
        sk->seed = sk->py.seed;
        sk->sanitize_case = lab->sanitize_case;
        sk->job_id = j->g->id;
        sk->limit = j->rc.limits.sanitize;
        sk->s = &j->sans[j->nsan_tasks];
        j->sans[j->nsan_tasks].tool = tools[t];
        if (j->python) {
            /* The .py under the Python harness: started at job_admit, once
             * the file compiled (a syntax error starts none). */
            sk->python = 1;
            sk->limit += PYTHON_SANITIZE_SECONDS;
            r = python_sanitize_prepare(&sk->py, &sk->py_opts, j->env->root, lab, j->cs, tools[t],
                                        lab->sanitize_case, sk->py.seed, j->src);
            if (r < 0)
                return job_fail(j, r, "the lab's hidden libraries (lab.json python.hide): %s",
                                strerror(-r));
            j->nsan_tasks++;
            continue;
        }
        if ((r = sanitizer_prestart(sk)) < 0) {
            snprintf(j->err, sizeof j->err, "cannot start %s: %s", tools[t], strerror(-r));
            return r;
        }
        j->nsan_tasks++;
    }
    return 0;
}

/* The judge's CUDA context and the sanitizers' injection and context are
 * most of their cost and need no program: they come up while the student's
 * file compiles (docs/runner.md "Order and overlap") -- but only when the
 * GPU lane has room for the job now: they hold device memory, so they
 * start under the job's reservation, and a job never waits for one
 * before its compile (the CPU lane answers a compile error whatever the
 * GPU queue holds). Otherwise, and for a lab not built yet
 * (--lazy-build), they start at job_admit. */
int job_prestart(struct job *j)
{
    int r = 0;
    double waited = 0;
    j->limits_measured = !j->g->stop_after && labcache_built(j->env, j->g->lab);
    baseline_limits_set(&j->rc, j->limits_measured);
    if (j->limits_measured && !health_gpu_down(j->env, NULL, 0)) {
        /* exclusive GPU lock when not cached: before anything of ours holds one */
        baseline_device_record(&j->rc);
        r = job_reserve(j, 0, &waited);
        if (r == 0)
            r = job_prestart_now(j);
        else if (r == -EBUSY)
            r = 0; /* the GPU lane is full: start at job_admit */
        else
            snprintf(j->err, sizeof j->err, "GPU memory admission: %s", strerror(-r));
    }
    job_clock_mark(&j->pc, "prestart");
    return r;
}

/* ---------------------------------------------------------------------- */
/* Compile, inspect, link: CPU work. */

void job_keep_compile_log(struct job *j, struct compile_result *res)
{
    free(j->log_keep);
    j->log_keep = res->log;
    res->log = NULL;
    j->in.compile_log = j->log_keep;
}

int job_compile(struct job *j)
{
    if (progress_call(j, status_name(STATUS_COMPILING), j->python ? "python" : "nvcc") ==
        -ECANCELED)
        return -ECANCELED;
    if (!j->python && j->lab.python_only) {
        /* A Python-only lab (no CUDA harness to link with): the student's
         * mistake, said before anything runs. */
        j->st = status_name(STATUS_COMPILE_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg,
                 "this lab takes a Python file (.py, as its starter.py); a .cu file cannot be "
                 "graded here");
        return JOB_VERDICT;
    }
    if (j->python_parsed) { /* checked in the front lane: nothing more to compile */
        job_clock_mark(&j->pc, "compile");
        return JOB_NEXT;
    }
    int r = j->python ? compile_python(&j->tc, &j->lab, j->workdir, j->src, 0, &j->cres)
                      : compile_student(&j->tc, &j->lab, j->workdir, j->src, "student.o", &j->cres);
    job_clock_mark(&j->pc, "compile");
    if (r < 0)
        return job_fail(j, r, "the compile sandbox failed: %s", strerror(-r));
    if (j->cres.starved)
        return job_fail(j, -EAGAIN, "%s", j->cres.message);
    job_keep_compile_log(j, &j->cres);
    if (!j->cres.ok) {
        j->st = status_name(STATUS_COMPILE_ERROR);
        snprintf(j->status_msg, sizeof j->status_msg, "%s", j->cres.message);
        return JOB_VERDICT;
    }
    return JOB_NEXT;
}

int job_inspect(struct job *j)
{
    struct inspect_report rep;
    size_t olen = 0;
    if (progress_call(j, status_name(STATUS_COMPILING), "inspecting symbols") == -ECANCELED)
        return -ECANCELED;
    int r = sandbox_take_file(j->workdir, "student.o", 512u << 20, &j->objbuf, &olen);
    if (r == -ELOOP || r == -EINVAL || r == -EFBIG) {
        j->st = status_name(STATUS_REJECTED);
        j->in.rejection_symbol = "";
        j->in.rejection_reason = "the compiled object is not a regular file of sane size.";
        return JOB_VERDICT;
    }
    if (r < 0)
        return job_fail(j, r, "cannot read student.o: %s", strerror(-r));
    r = inspect_buffer((const unsigned char *)j->objbuf, olen, &j->lab, &rep);
    if (r < 0)
        return job_fail(j, r, "inspection failed: %s", strerror(-r));
    if (!rep.accepted) {
        j->st = status_name(STATUS_REJECTED);
        j->in.rejection_symbol = rep.symbol;
        j->in.rejection_reason = rep.reason;
        return JOB_VERDICT;
    }
    job_clock_mark(&j->pc, "inspect");
    return JOB_NEXT;
}

static void *link_so_main(void *p)
{
    struct job_link_task *t = p;
    t->r = compile_link(t->tc, t->lab, t->workdir, "student.o", t->harness, "prog.so", 1, &t->res);
    return NULL;
}

/* A link error is the student's (an undefined helper, a clash with the
 * harness): shown like a compile error, its log after the compile's. */
static int job_link_error(struct job *j)
{
    const char *log = j->log_keep, *ll = j->cres.log;
    size_t a = log ? strlen(log) : 0, b = ll ? strlen(ll) : 0;
    char *joined = malloc(a + b + 32);
    if (joined) {
        snprintf(joined, a + b + 32, "%s%s%s", log ? log : "", a ? "\n--- link ---\n" : "",
                 ll ? ll : "");
        free(j->log_keep);
        j->log_keep = joined;
        j->in.compile_log = j->log_keep;
    }
    j->st = status_name(STATUS_COMPILE_ERROR);
    snprintf(j->status_msg, sizeof j->status_msg, "linking with the lab's harness failed");
    return JOB_VERDICT;
}

/* The executable, and beside it (on a thread) the shared object the
 * pre-started sanitizers load. */
int job_link(struct job *j)
{
    int r;
    if ((r = grade_lab_ensure(j->env, j->g->lab, j->err, sizeof j->err)) < 0)
        return r;
    if (j->python)
        return JOB_NEXT; /* nothing to link: the owner runs the file */
    run_lab_dir(j->env, j->g->lab, j->harness, sizeof j->harness);
    strncat(j->harness, "/harness.o", sizeof j->harness - strlen(j->harness) - 1);
    if (progress_call(j, status_name(STATUS_COMPILING), "linking") == -ECANCELED)
        return -ECANCELED;
    compile_result_free(&j->cres);
    if (job_sanitizers_wanted(j) && !j->g->stop_after) {
        j->so_task.tc = &j->tc;
        j->so_task.lab = &j->lab;
        j->so_task.workdir = j->workdir;
        j->so_task.harness = j->harness;
        run_task_start(&j->so_task.thread, &j->so_task.started, link_so_main, &j->so_task);
    }
    r = compile_link(&j->tc, &j->lab, j->workdir, "student.o", j->harness, "prog", 0, &j->cres);
    run_task_join(&j->so_task.thread, &j->so_task.started);
    job_clock_mark(&j->pc, "link");
    if (r < 0)
        return job_fail(j, r, "the link sandbox failed: %s", strerror(-r));
    if (j->cres.starved)
        return job_fail(j, -EAGAIN, "%s", j->cres.message);
    if (!j->cres.ok)
        return job_link_error(j);
    return JOB_NEXT;
}

/* ---------------------------------------------------------------------- */
/* Admission: what the job's GPU work needs, before any student code runs. */

/* The executable linked and the same objects as a shared object did not:
 * ours. The sanitizers do not run; their line is not charged (score.c,
 * infra_failed). */
static void job_sanitizers_off(struct job *j)
{
    const struct job_link_task *t = &j->so_task;
    fprintf(stderr, "cugrade-runner: job %lld: the sanitizers' prog.so did not link (%s): %.400s\n",
            j->g->id, t->r < 0 ? strerror(-t->r) : t->res.message, t->res.log ? t->res.log : "");
    for (size_t i = 0; i < j->nsan_tasks; i++) {
        sanitizer_cancel(&j->san_tasks[i]);
        sanitizer_finish(&j->san_tasks[i]);
        j->sans[i].infra_failed = 1;
        snprintf(j->sans[i].note, sizeof j->sans[i].note,
                 "compute-sanitizer could not run on this runner (our problem, not yours): "
                 "the program did not link as a shared object");
    }
}

/* The job's GPU memory reservation (waiting holds nothing), then its
 * shared GPU lock: the sanitizers' work, the check run and its judge
 * happen under it; it is let go (after the sanitizers ended) before the
 * timing run's exclusive lock. The sanitizers get the program now, before
 * any student code runs. */
int job_admit(struct job *j)
{
    double waited = 0;
    int r;
    job_lane_say(j, 'g'); /* it leaves the CPU lane: the runner may claim another */
    if (!j->admitted && (r = job_gpu_up(j)) < 0)
        return r;
    if (!j->limits_measured) {
        baseline_device_record(&j->rc); /* a lab built just now (--lazy-build) */
        baseline_limits_set(&j->rc, 1);
    }
    if (!j->admitted && (r = job_admit_wait(j, &waited)) < 0) {
        job_clock_mark(&j->pc, "admit_wait");
        if (r == GRADE_HANDED_BACK)
            return r;
        snprintf(j->err, sizeof j->err, "GPU memory admission: %s after %.0f s",
                 r == -EBUSY ? "the GPU's memory stayed taken by other jobs" : strerror(-r),
                 waited);
        return r;
    }
    job_clock_mark(&j->pc, "admit_wait");
    if (!j->prestarted) {
        if ((r = job_prestart_now(j)) < 0)
            return r;
        job_clock_mark(&j->pc, "prestart");
    }
    j->so_failed = !j->python && j->nsan_tasks && (j->so_task.r < 0 || !j->so_task.res.ok);
    if (j->so_failed)
        job_sanitizers_off(j);
    /* A Python job's sanitizers, up to their gate now: their imports and
     * contexts while the job waits for its shared lock (sanitizer.h). */
    for (size_t i = 0; i < j->nsan_tasks && j->python; i++)
        (void)sanitizer_prestart(&j->san_tasks[i]); /* (a run not started starts at the go) */
    assert(j->job_lk < 0);
    if ((r = job_gpu_lock_say(j)) < 0)
        return r;
    j->job_lk = lock_gpu_shared_user(j->env); /* waits while timing runs wait or run */
    job_clock_mark(&j->pc, "gpu_wait");
    if (!j->so_failed)
        for (size_t i = 0; i < j->nsan_tasks; i++)
            sanitizer_go(&j->san_tasks[i]);
    j->in.nsanitizers = j->nsan_tasks;
    return JOB_NEXT;
}

/* ---------------------------------------------------------------------- */
/* The sanitizers' verdicts (they ran beside the check); the GPU let go. */

int job_sanitize(struct job *j)
{
    job_time_prestart_end(j); /* a timing run the job did not reach */
    if (j->check_timed_out) {
        /* An endless program: the sanitizers would only run into their
         * own limit. Ended now and not reported, as when they started
         * after the check. (A crash keeps them: their findings say why.) */
        for (size_t i = 0; i < j->nsan_tasks; i++)
            sanitizer_cancel(&j->san_tasks[i]);
        j->in.nsanitizers = 0;
    }
    /* What is left on the GPU is the sanitizers' small case: the next job
     * is admitted while they finish (a check run that failed or timed
     * out, or a job with nothing to time; a timed job's already did). */
    size_t left = j->check_timed_out ? 0 : job_sanitizers_wanted(j);
    job_reserve_to(j, lock_admit_sanitize_only(&j->lab, left));
    sanitizer_settle(j->san_tasks, j->nsan_tasks);
    lock_gpu_release(j->job_lk);
    j->job_lk = -1;
    job_unreserve(j);
    for (size_t i = 0; i < j->nsan_tasks; i++)
        sanitizer_finish(&j->san_tasks[i]);
    job_clock_mark(&j->pc, "sanitize");
    for (size_t i = 0; i < j->nsan_tasks; i++)
        if (j->san_tasks[i].r < 0) {
            snprintf(j->err, sizeof j->err, "%s", j->san_tasks[i].err);
            return j->san_tasks[i].r;
        }
    /* runtime_error or timeout: how the check or timing run ended. */
    enum status st = status_parse(j->st);
    if (st != STATUS_RUNTIME_ERROR && st != STATUS_TIMEOUT && st != STATUS_COMPILE_ERROR)
        j->st = status_name(STATUS_GRADED);
    return JOB_NEXT;
}

/* ---------------------------------------------------------------------- */
/* Score. */

/* The profiler's numbers for the catalogue's three profile entries, from
 * the profile's own hints (runner/feedback/profile.c: uncoalesced_global's value is
 * sectors per request, bank_conflicts' the ways, divergence's the threads
 * active per warp instruction), each with its own worst line where the
 * source page gave one. Returns 1 when the profile ran and p is filled. */
static int job_hint_profile(const json_t *profile, struct hint_profile *p)
{
    const json_t *h;
    size_t i;
    memset(p, 0, sizeof *p);
    p->sectors_per_request = p->ideal_sectors_per_request = NAN; /* hint.c: 4 */
    p->bank_conflict_ways = p->branch_efficiency = NAN;
    const char *st = json_string_value(json_object_get(profile, "status"));
    if (!st || strcmp(st, "ok") != 0)
        return 0;
    json_array_foreach(json_object_get(profile, "hints"), i, h) {
        const char *id = json_string_value(json_object_get(h, "id"));
        double v = json_number_value(json_object_get(h, "value"));
        int line = (int)json_integer_value(json_object_get(h, "line"));
        if (!id || !(v > 0))
            continue;
        if (strcmp(id, "uncoalesced_global") == 0 && isnan(p->sectors_per_request)) {
            p->sectors_per_request = v;
            p->line_uncoalesced = line;
        } else if (strcmp(id, "bank_conflicts") == 0 && isnan(p->bank_conflict_ways)) {
            p->bank_conflict_ways = v;
            p->line_bank_conflicts = line;
        } else if (strcmp(id, "divergence") == 0 && isnan(p->branch_efficiency)) {
            p->branch_efficiency = v / 32.0;
            p->line_divergence = line;
        } else {
            continue;
        }
        if (!p->kernel) /* the first profiled hint's kernel */
            p->kernel = json_string_value(json_object_get(h, "kernel"));
        if (!p->file && line > 0)
            p->file = json_string_value(json_object_get(h, "file"));
    }
    return 1;
}

/* The classic-bug catalogue over what the job learnt (runner/feedback/hint.h):
 * not for a file that never ran. */
static void job_hints(struct job *j, struct hint_list *hl)
{
    enum status st = status_parse(j->st);
    hl->n = 0;
    if (st == STATUS_COMPILE_ERROR || st == STATUS_REJECTED || st == STATUS_SYSTEM_ERROR ||
        j->stopped_after)
        return;
    struct hint_profile hp;
    int have_profile = j->profile && job_hint_profile(j->profile, &hp);
    struct hint_facts f = {&j->lab, j->python, j->g->source, j->g->source_len, j->v.err,
                           j->in.cases, j->in.ncases, j->ci.case_errors, j->sans,
                           j->in.nsanitizers, have_profile ? &hp : NULL};
    hint_recognize(&f, hl);
    j->in.hints = hl->v;
    j->in.nhints = hl->n;
    j->in.hints_ran = 1;
}

json_t *job_profile_update(struct job *j)
{
    static __thread struct hint_list hl;
    json_t *u = json_pack("{s:O}", "profile", j->profile ? j->profile : json_null());
    job_hints(j, &hl);
    json_t *doc = score_result(&j->rub, &j->in);
    j->in.hints = NULL;
    j->in.nhints = 0;
    json_t *cg = json_object_get(doc, "cugrade");
    json_t *h = json_object_get(cg, "hints"), *hd = json_object_get(cg, "hint_details");
    if (!u || !doc || !json_is_object(j->profile) || (h && json_object_set(u, "hints", h) < 0) ||
        (hd && json_object_set(u, "hint_details", hd) < 0)) {
        json_decref(u);
        u = NULL;
    }
    json_decref(doc);
    return u;
}

int job_score(struct job *j, const char **status, json_t **result)
{
    static __thread struct hint_list hl; /* 14 KiB: not on a worker's stack */
    j->in.status = j->st;
    j->in.status_message = j->status_msg[0] ? j->status_msg : NULL;
    j->in.sanitizers = j->sans;
    job_hints(j, &hl);
    json_t *doc = score_result(&j->rub, &j->in);
    j->in.hints = NULL;
    j->in.nhints = 0;
    if (!doc)
        return -ENOMEM;
    job_clock_mark(&j->pc, "score");
    json_t *cg = json_object_get(doc, "cugrade");
    if (j->pc.obj) {
        json_object_set_new(j->pc.obj, "total", json_real(run_now() - j->pc.start));
        json_object_set(cg, "phases", j->pc.obj);
    }
    if (j->hold)
        json_object_set(cg, "hold_s", j->hold);
    const struct sandbox_verdict *v = &j->v;
    if ((v->out && *v->out) || (v->err && *v->err)) {
        /* The student's own prints are feedback, never a verdict: at
         * most 2000 bytes of each stream, cut between characters, without
         * control characters (score_text_clean). */
        char out[2001], err[2001], buf[4096];
        score_text_clean(out, sizeof out, v->out, v->out ? strlen(v->out) : 0, 0);
        score_text_clean(err, sizeof err, v->err, v->err ? strlen(v->err) : 0, 0);
        snprintf(buf, sizeof buf, "%s%s%s", out, out[0] ? "\n" : "", err);
        json_object_set_new(cg, "program_output", json_string(buf));
    }
    if (j->stopped_after)
        json_object_set_new(cg, "stopped_after", json_string(j->stopped_after));
    if (j->python) { /* the runs the pool started before the job (pool.h) */
        json_t *w = json_array();
        if (j->warm_runs & JOB_WARM_CHECK)
            json_array_append_new(w, json_string("check"));
        if (j->warm_runs & JOB_WARM_TIMING)
            json_array_append_new(w, json_string("timing"));
        json_object_set_new(cg, "warm_runs", w);
    }
    if (j->profile)
        json_object_set(cg, "profile", j->profile);
    *status = j->st;
    *result = doc;
    return 0;
}

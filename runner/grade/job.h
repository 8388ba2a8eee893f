/*
 * job.h - one job in flight through the runner's pipeline, as phases
 * (docs/runner.md, "A job" and "Order and overlap"):
 *
 *   job_setup     the lab, the rubric, the seed, the job's directories
 *   job_front     the front pass (nvcc's preprocessor and cudafe++): a
 *                 file that does not parse               -> compile_error
 *   job_cpu_lane  waits for the runner's grant of a CPU lane slot
 *   job_prestart  device record; when the GPU lane has room now, the
 *                 reservation, and the judge session and sanitizers start
 *                 (they come up during nvcc); else they wait for job_admit
 *   job_compile   nvcc in the compile sandbox            -> compile_error
 *   job_inspect   symbol inspection of student.o         -> rejected
 *   job_link      with the lab's harness (+ prog.so)     -> compile_error
 *   job_admit     leaves the CPU lane: wall limits, GPU memory reservation
 *                 (waiting holds nothing), late pre-start, the shared GPU
 *                 lock, the sanitizers' go
 *   job_check     the check run and its judge            -> runtime_error,
 *                                                           timeout
 *   job_time      the timing run alone on the GPU, its judge, baselines
 *                 and, for a correct submission, its profile (profile.h)
 *   job_sanitize  the sanitizers' verdicts; the GPU let go
 *   job_score     the result document
 *
 * Every phase returns JOB_NEXT (0: go on), JOB_VERDICT (j->st and
 * j->status_msg say how the submission ended: score it), -ECANCELED (the
 * lease was lost: post nothing) or another -errno with a sentence in
 * j->err (ours: system_error). Each phase marks its seconds in j->pc.
 * Whatever a phase starts or takes, job_free ends or lets go of, on every
 * path.
 */
#ifndef CUGRADE_JOB_H
#define CUGRADE_JOB_H

#include "runner/run/channel.h"
#include "runner/grade/compile.h"
#include "runner/grade/grade.h"
#include "runner/grade/judge.h"
#include "lab.h"
#include "rubric.h"
#include "runner/run/run.h"
#include "runner/grade/sanitizer.h"
#include "runner/grade/score.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>

#define JOB_NEXT    0
#define JOB_VERDICT 1

/* The shared object the sanitizers load, linked beside the executable on a
 * thread of its own. */
struct job_link_task {
    pthread_t thread;
    int started;
    const struct compile_toolchain *tc;
    const struct lab *lab;
    const char *workdir, *harness;
    struct compile_result res;
    int r;
};

/* Seconds spent per phase, for the result document ("phases") and the
 * latency benchmark: each mark adds the time since the previous mark. */
struct job_clock {
    double start, last;
    json_t *obj;
};

/* A job in flight. Pointers into it are handed to threads (rc, js, the
 * sanitizer tasks): it never moves between job_init and job_free. */
/* struct job's warm_runs: the pool's runs a Python job used (pool.h). */
#define JOB_WARM_CHECK 1u
#define JOB_WARM_TIMING 2u

struct job {
    const struct grade_env *env;
    const struct grade_job *g;       /* as claimed; borrowed */
    grade_progress_fn progress;
    void *arg;
    struct lab lab;
    struct rubric rub;
    int lab_loaded, rub_loaded;
    char seed[33];
    char src[80];                    /* the student's file name in /work */
    int python;                      /* a .py file (docs/python.md): no inspect, no link */
    int python_parsed;               /* its syntax checked in the front lane (job_front) */
    char *workdir;                   /* the sandbox's /work on the host */
    struct run_ctx rc;
    struct job_clock pc;

    /* compile, inspect, link */
    struct compile_toolchain tc;
    struct compile_result cres;
    char *log_keep;                  /* the compile (+ link) log shown to the student */
    char *objbuf;
    char harness[PATH_MAX];
    struct job_link_task so_task;
    int so_failed;                   /* prog.so did not link: sanitizers off (ours) */

    /* pre-started: judge session, sanitizers */
    int limits_measured, prestarted;
    struct judge_session js;
    struct sanitizer_task san_tasks[2];
    size_t nsan_tasks;
    char cs[512], launch[PATH_MAX];

    /* held on the GPU: reservation first, then the shared lock */
    char admit_file[PATH_MAX];
    long long admit_token;           /* this job's GPU memory reservation, or 0 */
    int admitted;                    /* reserved (or admission off): let go in job_free */
    int job_lk;                      /* the shared GPU lock, or -1 */

    /* check */
    const char **case_names;         /* the rubric's cases, in lab order */
    size_t ncase_names;
    char *case_list;                 /* the same, comma-separated */
    int chk_fd;
    struct sandbox_verdict v;        /* the run whose prints are the feedback */
    struct channel_info ci;
    int check_timed_out;
    const char *why;                 /* how the check run ended badly, or NULL */
    char fatal[700];
    char why_buf[1024];

    struct pool_member *warm; /* the warm runs this job adopted (pool.h), or NULL */
    unsigned warm_runs;       /* JOB_WARM_*: which of them it used */

    /* time */
    struct time_pre *pre;            /* the first timing run, started beside the check */
    int time_again;                  /* 1 once a timing run that timed out beside
                                        other jobs was run again (job_time_run) */
    struct sandbox_verdict tv;
    struct channel_info ti;
    char judge_flag[400];

    /* profile (docs/runner.md "Profiling hints"): feedback, never the grade */
    json_t *profile;                 /* result.cugrade.profile, or NULL: not profiled */
    json_t *hold;                    /* result.cugrade.hold_s: the first timing round's steps
                                        in the exclusive hold as its record says them, or NULL */
    int profile_later;               /* served: the verdict posts first, the profile after */
    const struct grade_later *later; /* served: how to post (NULL: local grading) */
    int profile_pending;             /* ... and this job's profile is due (job_profile_after) */

    /* the outcome */
    struct score_input in;
    struct score_sanitizer sans[2];
    const char *st;                  /* status so far (static string) */
    const char *stopped_after;
    char status_msg[800];
    char err[1024];
};

/* Ready j for g (env, g, progress and arg are borrowed for its life). */
void job_init(struct job *j, const struct grade_env *env, const struct grade_job *g,
              grade_progress_fn progress, void *arg);
/* End every run j started, let go of what it holds, free it (not j). */
void job_free(struct job *j);

int job_setup(struct job *j);
int job_front(struct job *j);
int job_cpu_lane(struct job *j);
int job_prestart(struct job *j);
int job_compile(struct job *j);
int job_inspect(struct job *j);
int job_link(struct job *j);
int job_admit(struct job *j);
int job_check(struct job *j);
/* The rubric's cases (every case of the lab when it lists none), in the
 * lab's order, as j->case_names and j->case_list, once (the pre-start's
 * judge session wants them before the check). 0 or -ENOMEM. */
int job_case_list(struct job *j);
int job_time(struct job *j);
int job_sanitize(struct job *j);

/* 1 when the job was asked to stop after phase ("compile", "inspect",
 * "link"); then j->st is "graded" and the document says so. */
int job_stop_at(struct job *j, const char *phase);
/* Add the seconds since the last mark to phase name. */
void job_clock_mark(struct job_clock *pc, const char *name);
/* Score first, the profile after (grade.h, struct grade_later): once the
 * verdict (whose profile said "pending") is posted, wait for this GPU to
 * have room and profile, or say why it was skipped, into j->profile. */
void job_profile_after(struct job *j);
/* The profile update of j: {profile, hints, hint_details}, the catalogue's
 * hints now with the profile's numbers (never a score). New reference or
 * NULL. */
json_t *job_profile_update(struct job *j);
/* The result document of j's outcome (j->st). Returns 0 with *status and
 * *result (new reference) set, or -ENOMEM. */
int job_score(struct job *j, const char **status, json_t **result);

struct share_clock;
/* run_failure (runner/run/run.h) for a check run under limits l and its wall limit lim: a
 * wall-clock timeout says how the limit was set and which case ran
 * (case_name, NULL when hidden; limit_timeout_message), and, when its
 * share clock sc (NULL: the run was not shared) counted it well past lim
 * on the wall clock, that other jobs shared the GPU; a CPU-time or output
 * limit keeps run_failure's own sentence, never the wall limit's advice
 * nor the share's. */
const char *job_check_failure(const struct sandbox_verdict *v, const struct run_limits *l,
                              double lim, const char *case_name, const struct share_clock *sc,
                              char *buf, size_t len);

#endif

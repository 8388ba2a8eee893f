/*
 * judge.h - the lab's trusted judge (reference/<lab>/judge, built by
 * labs/build-lab.sh), started once per job as `judge --serve` before the
 * compile (labs/common/judge_common.cu): its CUDA context comes up while
 * nvcc runs, and each channel is then one command line on its stdin and one
 * verdict line on its stdout. Without a session (it could not start)
 * judge_run runs the one-shot `judge --seed ...` instead. The judge is
 * ours: every failure of it is a system_error.
 *
 * A judge whose work per case does not need the channel (a reference
 * computed from the seed alone: the pipeline lab's NumPy pipeline) says so
 * in its first line, "ready prepare"; the session then hands it the job's
 * seed and cases at once ("prepare\t--seed\tS\t--cases\ta,b", no answer)
 * and the judge makes the references in the background while the check
 * run runs (reference/pipeline/judge.py). "ready" alone: no prepare line.
 */
#ifndef CUGRADE_JUDGE_H
#define CUGRADE_JUDGE_H

#include "runner/run/run.h"
#include "runner/grade/score.h"

#include <jansson.h>
#include <pthread.h>
#include <sys/types.h>

struct judge_session {
    const struct run_ctx *rc;
    pid_t pid;                   /* -1: none */
    int in, out;                 /* its stdin, its stdout */
    char *buf;                   /* what has been read of its stdout */
    size_t len, cap;
    pthread_t thread;            /* reads its "ready" */
    int started;
    int ready;                   /* 1 ready, -1 it failed */
    char *prepare;               /* the prepare line (NULL: none to send) */
};

/* No session (yet): judge_session_end and judge_run are safe on it. */
void judge_session_init(struct judge_session *js, const struct run_ctx *rc);
/* Start `judge --serve` for rc's lab (no GPU lock: only its context comes
 * up); seed (hex) and cases (a,b; may be NULL: every case) go to a judge
 * that asks for them (above). On failure js stays without a session. */
void judge_session_start(const struct run_ctx *rc, struct judge_session *js, const char *seed,
                         const char *cases);
/* End the session in the background (the judge exits at EOF; a straggler
 * is killed after 10 s) and free what js holds. Safe on an inited js. */
void judge_session_end(struct judge_session *js);

/* The session's judge at nice (its process group and its session's
 * autogroup; best effort, as nice is): a timing round's judge runs in the
 * job's exclusive hold (lock.h TIME_HOLD_NICE). No session: a no-op. */
void judge_session_boost(struct judge_session *js, int nice);

/* Run the judge on a channel: `judge --seed S --channel F [--cases a,b]
 * [--device D]`, through js when it has a session (js may be NULL).
 * Returns 0 with its verdict document in *doc (new reference) and the
 * cases parsed into *cases and *n (caller frees with score_cases_free), or
 * a negative errno with a sentence in err (a system_error). */
int judge_run(const struct run_ctx *rc, struct judge_session *js, const char *seed,
              const char *channel, const char *cases_csv, json_t **doc,
              struct score_case **cases, size_t *n, char *err, size_t errlen);

#endif

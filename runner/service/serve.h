/*
 * serve.h - the runner's service loop: claim jobs from the server, grade
 * each in a child of its own (two lanes: CPU work at once, the GPU lane
 * after), heartbeat while grading, post the result. See docs/runner.md.
 */
#ifndef CUGRADE_SERVE_H
#define CUGRADE_SERVE_H

#include "runner/service/client.h"
#include "runner/grade/grade.h"
#include "runner/service/host.h"

/* The CPU lane's default size: the host's cores shared by its GPUs' runners
 * ($CUGRADE_RUNNERS_PER_HOST, default 1), 1 to 64. */
int serve_default_jobs(void);

/* Claim and grade until SIGTERM or SIGINT (or one job with once), then let
 * the jobs in flight finish. jobs: children in their CPU lane at most;
 * queue: children in flight at most (1 <= jobs <= queue <= 256). Installs
 * its own SIGTERM/SIGINT handlers (SIGPIPE: main() ignores it). */
void serve_run(struct client *cl, struct host *h, const struct grade_env *env, int once, int jobs,
               int queue);

#endif

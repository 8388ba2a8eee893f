/*
 * runner.h - the runners table: which runners exist, which GPU they have,
 * when each last talked to us and how many results it posted. The
 * protocol itself (claim, progress, result) is server/runner_api.c over
 * the queue's leases (server/queue.h).
 */
#ifndef CUGRADE_SERVER_RUNNER_H
#define CUGRADE_SERVER_RUNNER_H

#include "server/app.h"

/* A runner named name (with its GPU, or NULL to keep the known one) talked
 * to us now. */
void runner_seen(struct app *app, const char *name, const char *gpu);

/* The runner posted a result: count it. */
void runner_job_done(struct app *app, const char *name);

/* Unix time any runner last talked to us; 0 when none ever did. */
double runner_last_seen(struct app *app);

/* 1 if a runner is parked in a claim or talked to us in the last 2 minutes. */
int runner_any_active(struct app *app);

/* Every runner: a new array of {"name","gpu","last_seen" (Unix seconds),
 * "jobs_done"}, by name or (by_name 0) most recently seen first. 0 or
 * -errno. */
int runner_list(struct app *app, int by_name, json_t **out);

#endif

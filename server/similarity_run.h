/*
 * similarity_run.h - a similarity check's run, between similarity.c (its
 * start, the scheduler, the reports) and similarity_run.c (the files for
 * sim, sim's child process, its output parsed, the run's end stored).
 * Private to those two files. Loop thread only.
 */
#ifndef CUGRADE_SIMILARITY_RUN_H
#define CUGRADE_SIMILARITY_RUN_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "server/similarity.h"

struct app;

enum step { STEP_MASK, STEP_PERCENT, STEP_REGIONS, STEP_DONE };

struct sim_file {
    long long sub;
    char *src;
    size_t len;
};

struct sim_pair {
    long long a, b; /* a < b */
    double pa, pb;  /* % of a found in b, of b found in a */
    json_t *regions;
};

struct sim_job {
    struct app *app;
    long long run_id;
    char lab[65];
    char dir[256];
    const char *tool; /* "sim_c" or "sim_text" */
    const char *ext;  /* "cu" or "py" */
    int has_starter;
    struct sim_file *files;
    size_t nfiles;
    struct sim_pair *pairs;
    size_t npairs, cappairs;
    enum step step;
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    int open_handles; /* closes still to come */
    int exited, eof, closing, killed_time, killed_size, spawn_rc;
    long exit_status;
    char *buf;
    size_t buflen, bufcap;
    int stopping;
};

/* The run in progress, or NULL: one run at a time in the server. */
extern struct sim_job *sim_active;

/* Write data (len bytes) to dir/name, a new file (0600). 0 or -errno. */
int sim_write_file(const char *dir, const char *name, const char *data, size_t len);

/* Free j: its files, pairs and output, its folder removed; sim_active is
 * cleared when it was j. */
void sim_job_free(struct sim_job *j);

/* Store j's end (status "done" or "failed", detail) on the writer: its
 * pairs (taken from j) and its row. Nothing when the server is stopping. */
void sim_run_finish(struct sim_job *j, const char *status, const char *detail);

/* Spawn sim for j's current step (j->step). 0, or -errno (then j's
 * handles close and the run fails through them, or nothing was started). */
int sim_step_spawn(struct sim_job *j);

#endif

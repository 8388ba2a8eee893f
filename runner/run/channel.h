/*
 * channel.h - the harness's result channel (docs/formats.md): JSON lines,
 * each optionally followed by "bytes" raw bytes, written on fd 3 by a
 * process that holds student code, so every field is checked and every
 * size bounded. The file lives in the job's private directory (root's,
 * 0600): the student's process cannot name or reopen it.
 */
#ifndef CUGRADE_CHANNEL_H
#define CUGRADE_CHANNEL_H

#include "runner/run/env.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

/* A reader's place in a channel file. */
struct channel {
    int fd;
    off_t pos;
};

/* What the runner itself reads from a channel. */
struct channel_info {
    int done;            /* the final {"type":"done"} was seen */
    int ncases;          /* case records */
    json_t *device;      /* the device record, or NULL */
    json_t *timing;      /* the timing record, or NULL */
    json_t *hold;        /* the hold record (a Python owner's steps), or NULL */
    json_t *case_errors; /* object: case name -> "error: cause" of launch errors */
    char *harness_error; /* the harness's own failure ("harness_error" record), or NULL */
    char *compile_error; /* a Python owner's "compile_error" record (exit 5), or NULL */
};

/* Progress while a check runs: a thread counts case records and reports
 * "checking" "k/total" through the job's progress callback. */
struct channel_watch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, cancelled, started;
    int fd, total;
    grade_progress_fn progress;
    void *arg;
};

/* Read the next record header at ch->pos. Returns 1 and a new reference in
 * *hdr (ch->pos moves past its payload), 0 at the end or at an incomplete
 * record, -EBADMSG for garbage, -errno. */
int channel_next(struct channel *ch, json_t **hdr);
/* Read the whole channel fd into *ci (zeroed first; clear it with
 * channel_info_clear even on failure). Returns 0, -EBADMSG (what came
 * before the garbage is kept) or -errno. */
int channel_read_all(int fd, struct channel_info *ci);
void channel_info_clear(struct channel_info *ci);

/* Open a fresh channel file JOBDIR/channel-NAME (read-write, 0600).
 * Returns the fd (caller closes) or -errno. channel_path writes its path. */
int channel_open(const char *jobdir, const char *name);
void channel_path(const char *jobdir, const char *name, char *out, size_t len);

/* Start watching channel fd (total cases expected); fn may be NULL.
 * channel_watch_stop joins the thread: 0, or -ECANCELED when the progress
 * callback said the job was abandoned. */
void channel_watch_start(struct channel_watch *w, int fd, int total, grade_progress_fn fn,
                         void *arg);
int channel_watch_stop(struct channel_watch *w);

#endif

/*
 * channel.c - see channel.h.
 */
#include "runner/run/channel.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL_LINE_MAX (1u << 20)

/* ---------------------------------------------------------------------- */
/* The result channel (docs/formats.md): JSON lines, each optionally followed
 * by "bytes" raw bytes. Written by a process that holds student code, so
 * every field is checked and every size bounded. */

/* Read the next record header at ch->pos. Returns 1 and a new reference in
 * *hdr (ch->pos moves past its payload), 0 at the end or at an incomplete
 * record, -EBADMSG for garbage. */
int channel_next(struct channel *ch, json_t **hdr)
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

void channel_info_clear(struct channel_info *ci)
{
    json_decref(ci->device);
    json_decref(ci->timing);
    json_decref(ci->hold);
    json_decref(ci->case_errors);
    free(ci->harness_error);
    free(ci->compile_error);
    memset(ci, 0, sizeof *ci);
}

int channel_read_all(int fd, struct channel_info *ci)
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
        } else if (strcmp(t, "hold") == 0 && !ci->hold) {
            ci->hold = json_incref(h);
        } else if (strcmp(t, "harness_error") == 0 && !ci->harness_error) {
            const char *m = json_string_value(json_object_get(h, "message"));
            ci->harness_error = strndup(m ? m : "", 400);
        } else if (strcmp(t, "compile_error") == 0 && !ci->compile_error) {
            /* A Python submission's owner (labs/common/py/owner.py, trusted,
             * the only writer of this channel): the module did not import
             * or its first call did not compile. The text is the student's
             * traceback, for the student. */
            const char *m = json_string_value(json_object_get(h, "message"));
            ci->compile_error = strndup(m ? m : "", 4000);
        }
        json_decref(h);
    }
    return r < 0 ? r : 0;
}

/* ---------------------------------------------------------------------- */
/* Progress, heartbeat-friendly: a watcher thread counts case records while
 * the sandboxed check runs, so the student sees "checking 3/6". */

static void *watch_main(void *p)
{
    struct channel_watch *w = p;
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
            if (w->progress && w->progress(w->arg, status_name(STATUS_CHECKING), d) == -ECANCELED)
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

void channel_watch_start(struct channel_watch *w, int fd, int total, grade_progress_fn fn,
                         void *arg)
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

int channel_watch_stop(struct channel_watch *w)
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

/* Open a fresh channel file in the job's private directory. */
int channel_open(const char *jobdir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/channel-%s", jobdir, name);
    unlink(p);
    int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd < 0 ? -errno : fd;
}

void channel_path(const char *jobdir, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/channel-%s", jobdir, name);
}

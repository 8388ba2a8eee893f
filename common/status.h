/*
 * status.h - a submission's status, one name for the server, the runner,
 * the database, the API and the pages (docs/api.md):
 *
 *   queued -> compiling -> checking -> running -> timing -> graded
 *
 * or an end state: compile_error, rejected, runtime_error, timeout,
 * system_error (our fault), superseded (replaced while queued).
 */
#ifndef CUGRADE_STATUS_H
#define CUGRADE_STATUS_H

enum status {
    STATUS_QUEUED,
    STATUS_COMPILING,
    STATUS_CHECKING,
    STATUS_RUNNING,
    STATUS_TIMING,
    STATUS_GRADED,
    STATUS_COMPILE_ERROR,
    STATUS_REJECTED,
    STATUS_RUNTIME_ERROR,
    STATUS_TIMEOUT,
    STATUS_SYSTEM_ERROR,
    STATUS_SUPERSEDED,
    STATUS_COUNT
};

/* The status's name ("compile_error"); s must be a valid status. */
const char *status_name(enum status s);

/* The status called name, or -1 when name is none (NULL included). */
int status_parse(const char *name);

/* compiling, checking, running, timing: a runner holds the job. */
int status_in_progress(const char *name);

/* A verdict a runner may post: graded, compile_error, rejected,
 * runtime_error, timeout, system_error. */
int status_verdict(const char *name);

/* A verdict, or superseded: the row will not change again by itself. */
int status_final(const char *name);

#endif

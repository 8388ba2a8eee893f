/*
 * limit.h - wall limits derived from the lab's naive reference.
 *
 * A flat limit (lab.json limits.run_seconds, 300 s in the course's labs)
 * let one endless submission hold its GPU share for five minutes while every
 * job behind it waited. Instead, the runner measures once per GPU model how
 * long the lab's naive reference takes for the whole check run (every case,
 * start-up included) and gives a student's run
 *
 *     min(run_seconds, max(floor, factor x naive) + startup)
 *
 * (limits.derive in lab.json). The timing run and the sanitizers get limits
 * computed from the same number. run_seconds stays the ceiling and the
 * fallback when there is no measurement.
 */
#ifndef CUGRADE_LIMIT_H
#define CUGRADE_LIMIT_H

#include "lab.h"

/* The wall limits of one job's runs, in seconds. */
struct run_limits {
    double naive_seconds;          /* the naive reference's check run on this GPU, or 0 */
    double check;                  /* the student's check run */
    double timing;                 /* the timing run (time_max_ms of samples on top) */
    double sanitize;               /* each compute-sanitizer run, from its go */
    double ceiling;                /* run_seconds (120 when unset): no run's wall time exceeds it */
    double factor, floor, startup; /* limits.derive's, when derived */
    int derived;                   /* 1 when check came from naive_seconds */
};

/* Fill *out for lab from the naive reference's measured check-run wall time
 * (naive_seconds; 0 or NAN when unknown: run_seconds is used) and the timing
 * run's sample budget (time_max_ms). Pure; never fails. */
void limit_compute(const struct lab *lab, double naive_seconds, double time_max_ms,
                   struct run_limits *out);

/* One sentence for a student whose run ran past limit_seconds (caller's
 * buffer): names the case in progress (case_name, may be NULL) and how the
 * limit was set. Returns buf. */
char *limit_timeout_message(const struct run_limits *l, double limit_seconds, const char *case_name,
                            char *buf, size_t len);

/* The same for a timing run that ran past limit_seconds (its start-up and
 * its samples; the wait for the GPU at its gate is not counted): names the
 * timed case. Returns buf. */
char *limit_timing_message(double limit_seconds, const char *case_name, char *buf, size_t len);

/* Read the cached naive measurement at path ({"naive_seconds": x}).
 * Returns the seconds, or 0 when absent or unusable. */
double limit_cache_read(const char *path);

/* Write it atomically (path's folder must exist). Returns 0 or -errno. */
int limit_cache_write(const char *path, double naive_seconds);

#endif

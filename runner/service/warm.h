/*
 * warm.h - warm job children: a serving runner's children started before
 * their job, each with a warm Python check run of one lab (grade/pool.h;
 * docs/python.md "The warm pool").
 *
 * A Python claim of a lab is handed to a warm child of that lab when there
 * is one (serve.c kid_start: the claim's JSON written to the child's job
 * pipe, then closed), else to a child forked for it, as a CUDA claim
 * always is. Which labs get warm children follows the claims: every lab
 * with a Python claim in the last WARM_IDLE_S seconds has one, the most
 * recently claimed first, and the rest of the runner's room (warm_room)
 * goes to the lab claimed last, so a deadline's burst of one lab finds
 * several. A child no longer wanted is ended (its job pipe closed: it
 * ends its member and exits). Not thread-safe: the serve loop's.
 */
#ifndef CUGRADE_WARM_H
#define CUGRADE_WARM_H

#include <stddef.h>
#include <sys/types.h>

/* A lab with no Python claim for this long keeps no warm child. */
#define WARM_IDLE_S 600.0

/* At most this many warm children per runner. */
#define WARM_MAX 4

struct warm_kid {
    pid_t pid;
    int job;   /* write end of its job pipe */
    int lane;  /* read end of its lane pipe (serve.c's kid.lane), or -1 */
    int grant; /* write end of its grant pipe (kid.grant), or -1 */
    char lab[64];
    double born;
};

/* How many warm children a runner whose CPU lane holds jobs keeps: one for
 * every four lane slots (each warm child holds two interpreters with NumPy,
 * Numba and CuPy imported, about 1 GB of host memory), at least 1 and at
 * most WARM_MAX. Pure. */
size_t warm_room(int jobs);

/* A Python claim of lab at time now (seconds, run_now()). */
void warm_want(const char *lab, double now);

/* Bring the warm children in line with the claims at time now within room
 * children: end those no longer wanted; returns the lab to start one more
 * for (the caller forks it and warm_add()s it), or NULL when none is
 * missing. */
const char *warm_next(size_t room, double now);

/* A warm child started for w->lab. */
void warm_add(const struct warm_kid *w);

/* Take a warm child of lab: 1 and *out (forgotten here), or 0. The oldest
 * first. */
int warm_take(const char *lab, struct warm_kid *out);

/* 1 when pid was a warm child (it ended before a job: forgotten, its fds
 * closed), else 0. */
int warm_reaped(pid_t pid);

/* In a child just forked: close every warm child's fds (they are the
 * parent's). */
void warm_close_inherited(void);

/* End every warm child (the runner stops). */
void warm_end_all(void);

/* Warm children ended (their job pipe closed) and not reaped yet: the
 * runner waits for them when it stops, so that its exit means its pool is
 * gone. */
size_t warm_ending(void);

/* Warm children now. */
size_t warm_count(void);

#endif

/*
 * memgate.h - a Python check run's big cases: device memory reserved only
 * while they run (docs/python.md "Memory for the big case").
 *
 * A lab's biggest case can need several times what the others do (the
 * reduction's 2.5e9 case: 9.8 GB of its 12; the embedding's big vocabulary:
 * 19 GB). A job that reserved it for its whole check run (admit.h) held
 * it for the 15-20 s of a Python check run's start-up, JIT and small cases,
 * so a burst of Python jobs waited a minute on average for admission with
 * the GPU's memory mostly idle. Now a Python job reserves what its other
 * cases need (lock_admit_need), and its owner asks for the rest before a
 * case that declares its own device_mb (lab.json) and gives it back after:
 * on its gate (fd 4 inside, a socket only the owner holds),
 *     "m CASE\n"  -> the runner moves the reservation up by what the case
 *                    needs past the others (lock_admit_case_more), waiting
 *                    its turn, and answers 'g' ('n': it could not; the
 *                    owner ends the run as ours, a system_error);
 *     "d CASE\n"  -> back down (no answer).
 * While it waits, the run's clocks are stopped (the wall ceiling and the
 * share clock): waiting for others' memory is never the student's time.
 * The ledger keeps room for one job's growth beside every reservation
 * (admit_fits_more), so two jobs that grow never wait on each other for
 * good. A CUDA harness does not ask: a CUDA job reserves its biggest case
 * for its whole check run, which is short (0.5 s against 15-20 s).
 */
#ifndef CUGRADE_MEMGATE_H
#define CUGRADE_MEMGATE_H

#include "runner/sandbox/sandbox.h"

#include <pthread.h>

/* What a case costs: 0 (granted: the reservation holds it now), or
 * -errno (not granted). The case name is as the owner sent it (checked
 * by the callee). stop (memgate's) says when to give up waiting. */
typedef int (*memgate_grow_fn)(void *arg, const char *case_name, int (*stop)(void *), void *g);
/* The case is over: the reservation back down. */
typedef void (*memgate_back_fn)(void *arg, const char *case_name);

/* The job's side of the gate. */
struct memgate_ops {
    memgate_grow_fn grow;
    memgate_back_fn back;
    void *arg;
};

struct memgate {
    int fd;                        /* our end of the owner's gate, or -1 */
    struct sandbox_pause *pause;   /* the run's clocks, stopped while it waits */
    struct memgate_ops ops;
    pthread_t thread;
    int started;
    _Atomic int stop;              /* memgate_stop: a wait gives up */
    char grown[80];                /* the case holding more, "" when none */
    double waited;                 /* seconds the owner waited in all */
    int asked;                     /* "m" lines served */
};

/* Serve the gate fd (a dup is taken: the caller keeps its own) in a
 * thread of its own until EOF, an error, a line that is not one of the
 * two, or memgate_stop. Returns 0 or -errno (then there is no thread and
 * the owner's questions go unanswered: it sees EOF once the caller closes
 * its end). */
int memgate_start(struct memgate *g, int fd, struct sandbox_pause *pause,
                  const struct memgate_ops *ops);

/* End the thread (the run is over, or being ended) and give back what a
 * case still holds. A no-op for a gate never started. */
void memgate_stop(struct memgate *g);

/* A cold run's gate: a socket pair, the owner's end for the run's fd 4
 * (run_opts.control_fd), ours served by g; the run's clocks' pause. */
struct memgate_pair {
    int ours, theirs;
    struct sandbox_pause pause;
    struct memgate g;
};

/* Make the pair and start serving it. Returns 0, or -errno (then nothing
 * is open: the run goes without a gate). */
int memgate_pair_open(struct memgate_pair *p, const struct memgate_ops *ops);

/* memgate_stop, and both ends closed. */
void memgate_pair_close(struct memgate_pair *p);

/* Pure: parse one line of the owner's ("m NAME" or "d NAME", no newline).
 * Returns 'm' or 'd' with the name copied to name (size len), or 0. */
int memgate_parse(const char *line, char *name, size_t len);

#endif

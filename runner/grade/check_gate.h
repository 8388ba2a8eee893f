/*
 * check_gate.h - the memory gate of a CUDA check run: the run holds the
 * GPU memory of every case but the big ones (lab.json limits.check_device_mb)
 * and grows its reservation to the biggest case's (limits.device_mb) only
 * when it reaches a case marked "big" (docs/runner.md, "GPU memory
 * admission").
 *
 * The harness (labs/common/harness_common.cu, hc_mem_gate) says 'b' on
 * fd 4 before it sets up a big case and waits for 'g'. Our thread then
 * grows the job's reservation (admit_grow: it waits while the others'
 * big cases run), with the run's clocks stopped (sandbox_pause: the wait
 * for memory is not the student's time), and answers 'g'. One growth per
 * run: a second 'b' (a second big case, or the student's code writing on
 * fd 4) is answered at once. A growth that fails closes the gate: ours,
 * a system_error (check_gate_failed).
 */
#ifndef CUGRADE_CHECK_GATE_H
#define CUGRADE_CHECK_GATE_H

#include <pthread.h>

#include "runner/sandbox/sandbox.h"

struct run_opts;

struct check_gate {
    int fd;                      /* our end of the socket, or -1 */
    pthread_t thread;
    int started;
    struct sandbox_pause pause;  /* the run's clocks, stopped while it waits */
    const char *ledger;          /* admit.h's ledger of the job's GPU */
    long long token;             /* the job's reservation there */
    unsigned long long capacity; /* the GPU's admissible MiB */
    _Atomic int stop;            /* set by check_gate_close: stop waiting */
    int asked;                   /* 1: the run said 'b' */
    int r;                       /* admit_grow's result once asked */
    double waited;               /* seconds the growth waited */
};

/* Open the gate for a check run: o gets the harness's end as fd 4 and the
 * pause clock; *child_fd is that end (closed by the caller after the run).
 * Returns 0 or -errno (then o is as it was and no gate runs). */
int check_gate_open(struct check_gate *g, const char *ledger, long long token,
                    unsigned long long capacity, struct run_opts *o, int *child_fd);

/* After the run: stop a growth still waiting, join the thread, close. */
void check_gate_close(struct check_gate *g);

/* 1 when the run asked to grow and we could not (our failure, not the
 * student's), else 0. */
int check_gate_failed(const struct check_gate *g);

#endif

/*
 * admit.h - GPU memory admission: a ledger per GPU, shared by every runner
 * process on the host, of the device memory that admitted jobs may use.
 *
 * Five runners on one 80 GB GPU ran five check runs at once, each with its
 * sanitizers and judge; the embedding lab's biggest case alone needs 20 GB,
 * and the harness of a correct submission could not allocate its buffers
 * (blamed on the student). A job now declares what it needs (lab.json
 * limits.device_mb plus a context per process) and is admitted to the GPU
 * only when the sum of the live reservations and its own fits the GPU's
 * capacity. A job alone is always admitted (it may still fail: then the
 * harness tells whose memory it was). While it waits a job holds no lock;
 * the entries of processes that died are dropped, so a crashed runner
 * cannot wedge the GPU.
 */
#ifndef CUGRADE_ADMIT_H
#define CUGRADE_ADMIT_H

#include <stddef.h>

/* One reservation: the process that holds it, a token unique in that
 * process, and the MiB reserved. */
struct admit_entry {
    long pid;
    long long token;
    unsigned long long mb;
};

/* Pure: 1 when need_mb fits beside the n live entries within capacity_mb
 * (or when there are none: a job alone always runs), else 0. */
int admit_fits(const struct admit_entry *e, size_t n, unsigned long long capacity_mb,
               unsigned long long need_mb);

/* Reserve need_mb in the ledger file at path (created 0644 when absent),
 * waiting -- polling, holding nothing -- until it fits or max_wait seconds
 * passed. capacity_mb 0 means unknown: admitted at once without an entry.
 * *token (out) names the reservation for admit_release; *waited gets the
 * seconds waited. Returns 0, -EBUSY when it did not fit in time, or -errno
 * for the file. */
int admit_reserve(const char *path, unsigned long long capacity_mb, unsigned long long need_mb,
                  double max_wait, long long *token, double *waited);

/* admit_reserve in turn: the waiter enters the queue ledger at queue (a
 * line with its need, file order being arrival order) and is admitted only
 * when it fits beside the live reservations *and* every waiter ahead of
 * it, so a big job is never passed forever by smaller ones that fit in the
 * gaps (first come, first served; a waiter that is alone in the ledger and
 * first in the queue always runs). queue NULL: by fit alone
 * (admit_reserve). give_up (may be NULL) is asked before each wait
 * (every 100 ms): once it answers non-zero the waiter leaves the queue and
 * returns -EXDEV (the job is handed to another GPU: docs/runner.md
 * "Hand-back"). */
int admit_reserve_turn(const char *path, const char *queue, unsigned long long capacity_mb,
                       unsigned long long need_mb, double max_wait, long long *token,
                       double *waited, int (*give_up)(void *arg), void *give_up_arg);

/* Enter the ledger at path with a line of 0 MiB (a count, not memory:
 * always at once). Returns the token for admit_release, 0 when it could
 * not (then this process is simply not counted there). */
long long admit_enter(const char *path);

/* Drop this process's reservation token (0: none, a no-op). Returns 0 or
 * -errno. */
int admit_release(const char *path, long long token);

/* Shrink this process's reservation token to mb MiB (a job whose biggest
 * case is behind it keeps only what is left to run: admit.h's ledger then
 * admits the next job sooner). Never grows one: an mb above the entry's
 * leaves it as it is. Token 0 is a no-op. Returns 0, -ENOENT when the
 * token has no entry, or -errno for the file. */
int admit_resize(const char *path, long long token, unsigned long long mb);

/* The live entries in the ledger at path (dead processes' not counted).
 * Returns n >= 0 or -errno. */
int admit_count(const char *path);

/* The GPU's memory in MiB read from a device record (the harness's
 * "device" record, "mem_bytes"), or 0. */
unsigned long long admit_device_mb(const char *device_record_path);

#endif

/*
 * baseline.h - what a job measures once per GPU model and caches in the lab
 * cache: the reference timings (baselines) of the timed case, the device
 * record handed to the judge, and the naive reference's check run that the
 * wall limits derive from (limit.h). Each is measured under the exclusive
 * GPU lock, looked up again under it (another runner may have just
 * measured it), and never while the caller holds a GPU lock.
 */
#ifndef CUGRADE_BASELINE_H
#define CUGRADE_BASELINE_H

#include "runner/run/run.h"

#include <jansson.h>

/* Time one baseline on case_name (cached). Returns its median in ms, or
 * NAN. A device record seen on the way is stored into *device (new
 * reference) when that is NULL. */
double baseline_time(const struct run_ctx *rc, const char *name, const char *case_name,
                     json_t **device);
/* One batch of baseline name on case_name, timed now, not cached: for the
 * interleaved timing of a job (docs/runner.md, "Noise and re-timing"). A
 * GPU baseline runs in the sandbox and the caller holds the exclusive GPU
 * lock; "cpu" runs outside the sandbox and needs no lock. *x (malloc'd,
 * *n samples in ms) on success; a device record seen on the way into
 * *device when that is NULL. Returns 0, -ENOENT (no such program), -EIO
 * (the run failed; logged) or -ENOMEM. */
int baseline_batch(const struct run_ctx *rc, const char *name, const char *case_name,
                   double **x, size_t *n, json_t **device);
/* Batches shared between the jobs of one GPU (docs/runner.md, "Noise and
 * re-timing": shared batches). Every GPU batch baseline_batch times is
 * also kept, with the wall-clock second it was measured, as
 * CACHE/gpu-N.batch-LAB-CASE-NAME.json (one file per GPU, not per model:
 * two cards of one model differ). A job's first round takes a batch at
 * most fresh_s seconds old instead of timing its own inside its exclusive
 * hold: in a deadline burst the cuBLAS or naive batch is then timed about
 * once per window, not once per job (stop 21 on the H100: the baselines
 * were 1.98 s of a 2.95 s hold). */
#define BASELINE_SHARE_S 600.0
/* The batch of baseline name on case_name that a job of this GPU timed at
 * most fresh_s seconds ago: *x (malloc'd, *n samples in ms) and its age in
 * *age_s. Returns 0, -ENOENT (none kept), -ESTALE (older than fresh_s, or
 * dated in the future) or -EIO (unreadable: not a regular file, too big,
 * not the document written). Only the runner writes CACHE: no sandbox has
 * a path to it, so a batch kept there was timed by trusted code. */
int baseline_batch_recent(const struct run_ctx *rc, const char *name, const char *case_name,
                          double fresh_s, double **x, size_t *n, double *age_s);
/* Keep samples (n, ms) as the newest batch of baseline name on case_name
 * on this GPU, dated now (atomic replace). Returns 0 or -errno. */
int baseline_batch_keep(const struct run_ctx *rc, const char *name, const char *case_name,
                        const double *x, size_t n);
/* The host's record of CPU baseline batches (docs/runner.md, "Noise and
 * re-timing"): one batch median per line, appended by every interleaved
 * CPU batch, the newest BASELINE_CPU_RECORD read back. A CPU baseline's
 * batches differ far more from process to process (+-10% on the H100
 * host: memory placement, clocks) than its samples within one, so its
 * median and interval come from the medians of many batches. */
#define BASELINE_CPU_RECORD 25
/* Append one batch median ms to the record at path. Returns 0 or -errno. */
int baseline_record_add(const char *path, double ms);
/* The newest (at most max) batch medians of the record at path into out,
 * oldest first; the number read (0 when there is none). */
size_t baseline_record_read(const char *path, double *out, size_t max);
/* Seconds since a batch was last appended to the record at path (its
 * mtime), or NAN when there is none, it is not a regular file, or it is
 * dated in the future. A job's first round takes the record as it is
 * while this is within the sharing window (shared batches, above): the
 * record is the CPU's measure, and another job's batch of a few seconds
 * ago is as fresh as one of its own. */
double baseline_record_age(const char *path);
/* ... but only once the record holds this many batches: below 9 medians
 * the 95% interval is the whole range (stats.h), and a young record (a
 * fresh host) taken as it is by every job of a burst would decide their
 * tiers on one or two batches; until then every job adds its own. */
#define BASELINE_CPU_SHARE_MIN 9
/* The record's path for lab rc->lab, case case_name, on this GPU model. */
void baseline_record_path(const struct run_ctx *rc, const char *case_name, char *out,
                          size_t len);
/* The GPU's baseline record (docs/runner.md, "Baselines per GPU"): every
 * baseline of rc->lab's timing case whose kept batch (GPU) or CPU record is
 * older than stale_s seconds, or missing, is timed now and kept for the
 * jobs of this GPU; the CPU record is also filled to BASELINE_CPU_SHARE_MIN
 * batches. Each GPU batch under the exclusive GPU lock (the caller holds
 * none). At `prepare` and in the background of a serving runner, so that
 * a job's first timing round finds a fresh record and times no baseline
 * inside the student's latency. Returns the batches timed. */
int baseline_refresh(const struct run_ctx *rc, double stale_s);
/* Fill rc->device_path with this GPU's device record (measured once per GPU
 * model, cached as CACHE/ARCH/LAB/device-GPU.chan); left empty when none
 * can be made. Takes the exclusive GPU lock when it measures. */
void baseline_device_record(struct run_ctx *rc);
/* Set rc->limits for rc->lab from the naive reference's cached check-run
 * time, measuring it first when measure is set (exclusive GPU lock). */
void baseline_limits_set(struct run_ctx *rc, int measure);

#endif

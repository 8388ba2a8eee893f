/*
 * profile.h - profiling feedback for a correct submission (docs/runner.md,
 * "Profiling hints"): the timed case's kernels profiled once by Nsight
 * Compute (ncu) in the same sandbox as the student's runs, with a handful of
 * metrics (not --set full), and the numbers turned into hints a student can
 * act on: uncoalesced global access, shared-memory bank conflicts, low
 * occupancy and its limiter, warp divergence, a grid smaller than the GPU,
 * and where the kernel sits against the roofline.
 *
 * Feedback only: the profile never changes the grade, and a profiler that
 * cannot run (missing, no counter permission, past its time limit) is never
 * charged: the result says "unavailable" and why.
 *
 * The parts: profile_argv (the ncu command line), profile_csv_parse (ncu's
 * `--csv --page raw` report), profile_hints (the rules, thresholds below),
 * profile_json (result.cugrade.profile) in profile.c; profile_run (the
 * sandboxed run, the profiler's lock and queue) in profile_run.c; the
 * source page's lines in profile_source.c.
 */
#ifndef CUGRADE_PROFILE_H
#define CUGRADE_PROFILE_H

#include <jansson.h>
#include <stddef.h>

struct run_ctx;
struct run_opts;
struct grade_env;

/* Where the profiled run leaves its files in the sandbox's /work. */
#define PROFILE_LOG "/work/.cugrade-profile.csv"
#define PROFILE_LOG_NAME ".cugrade-profile.csv"
/* The same pass's report (ncu adds .ncu-rep), for the source page. */
#define PROFILE_REPORT "/work/.cugrade-profile"
#define PROFILE_SOURCE_LOG "/work/.cugrade-profile-source.csv"
#define PROFILE_SOURCE_LOG_NAME ".cugrade-profile-source.csv"
#define PROFILE_STUDENT_DIR "/work" /* where the student's file is, in the sandbox */
#define PROFILE_LOG_CAP (4u << 20)

/* Where ncu lives when $CUGRADE_NCU (the ncu executable) is unset. */
#define PROFILE_NCU_DEFAULT "/opt/nvidia/nsight-compute/2025.3.1/ncu"
/* Profiled launches at most (the harness's own kernels count too). */
#define PROFILE_LAUNCH_COUNT "24"
/* The profile run's wall limit in seconds, and
 * the longest wait for the GPU's profile lock: together they bound what
 * profiling can add to a submission (measured: 2-3.5 s alone). */
#define PROFILE_SECONDS 10.0
/* How many times one profile gives the GPU back to a timing run that
 * waits, and starts again after it (profile_run.c, profile_pass). */
#define PROFILE_YIELDS 3
#define PROFILE_LOCK_WAIT 30.0
/* Profiles already waiting for the GPU's profiler past which another does
 * not wait ("busy" at once): one takes 2.5-5 s (H100), so the seventh in
 * line would not get it within PROFILE_LOCK_WAIT anyway. */
#define PROFILE_QUEUE_MAX 6
/* Hints kept at most, and a kernel's share of the profiled GPU time below
 * which it gets none (a helper kernel of 1 % is not worth a student's
 * attention). */
#define PROFILE_MAX_HINTS 6
#define PROFILE_MAX_KERNELS 8 /* distinct kernels in the result, longest first */
#define PROFILE_MIN_SHARE 0.10

/* The hint rules' thresholds (profile.c). Each is what Nsight Compute's own
 * rules or the CUDA Best Practices Guide treat as worth fixing. */
#define PROFILE_COALESCE_EFF 0.50     /* used bytes / fetched sector bytes below this */
#define PROFILE_COALESCE_SHARE 0.10   /* ... for loads or stores with this share of the sectors */
#define PROFILE_SECTORS_FALLBACK 16.5 /* sectors/request past this without byte counts */
#define PROFILE_BANK_EXTRA 1.0        /* extra shared wavefronts per shared instruction */
#define PROFILE_OCCUPANCY_PCT 40.0    /* achieved occupancy (% of the SM's warps) below this */
#define PROFILE_THREADS_PER_WARP 24.0 /* average active threads per executed instruction */
#define PROFILE_BRANCH_UNIFORM 85.0   /* % of branches all active threads take alike */
#define PROFILE_BOUND_PCT 60.0        /* DRAM or SM throughput (% of peak) to call it bound */
#define PROFILE_IDLE_PCT 30.0         /* both below this: latency-bound */

/* The metrics asked for: one list, collected in as few passes as ncu can
 * (the launch__ and device__ ones need no pass). */
extern const char PROFILE_METRICS[];

struct profile_kernel {
    char *name;      /* the function's base name */
    json_t *metrics; /* {metric: number}, metrics ncu gave a number for */
};

struct profile_report {
    struct profile_kernel *kernels;
    size_t nkernels;
    size_t skipped; /* the harness's own kernels left out */
};

/* Zero r. */
void profile_report_init(struct profile_report *r);
/* Free what r holds and zero it. */
void profile_report_free(struct profile_report *r);

/* Parse ncu's `--csv --page raw` output (other lines, ncu's ==PROF== and
 * the program's own prints, are skipped): one kernel per row, its metrics
 * as numbers (thousands separators dropped; "n/a" and text left out).
 * Kernels whose name is in skip (NULL-terminated, may be NULL: the
 * harness's own) are counted in r->skipped, not kept. Returns 0 (r filled;
 * zero kernels when there was no report), -EBADMSG for a header without
 * the kernel name column, or -ENOMEM. */
int profile_csv_parse(const char *text, const char *const *skip, struct profile_report *r);

/* The hints of r as a new JSON array of {id, text, kernel, value} (text is
 * Markdown with the numbers), at most PROFILE_MAX_HINTS, worst first per
 * kernel. NULL on out of memory. */
json_t *profile_hints(const struct profile_report *r);

/* The result document's profile: {kernels: [{name, metrics}] (distinct
 * names, longest launch first, at most PROFILE_MAX_KERNELS), hints, seconds,
 * status: "ok"}. New reference, or NULL on out of memory. */
json_t *profile_json(const struct profile_report *r, double seconds);
/* {status: "unavailable", message, seconds}: the profiler could not run
 * (ours, never charged). New reference or NULL. A profile skipped after
 * its verdict (profile_wait_turn) is the same with status "skipped". */
json_t *profile_json_unavailable(const char *message, double seconds);

/* The harness's kernel names for lab: every `__global__ void NAME(` in
 * ROOT/labs/common/harness_common.cu and ROOT/labs/<lab>/harness.cu. Returns
 * a NULL-terminated array (caller frees with profile_names_free; empty when
 * the files cannot be read), or NULL on out of memory. */
char **profile_harness_kernels(const char *root, const char *lab);
void profile_names_free(char **names);

/* ---------------------------------------------------------------------- */
/* Source lines (runner/feedback/profile_source.c): the same ncu pass also saves its
 * report with per-instruction source counters (PROFILE_SOURCE_METRICS, one
 * more metric group in the SASS-instrumented pass, no replay of its own);
 * when a hint that has a line fired (uncoalesced_global, bank_conflicts,
 * divergence), `ncu -i REPORT --csv --page source --print-source cuda,sass`
 * prints them per line of each file the -lineinfo build names, and the worst
 * line of the student's file goes into the hint. */
#define PROFILE_SOURCE_METRICS                                                                     \
    "inst_executed,thread_inst_executed,smsp__branch_targets_threads_divergent,"                   \
    "memory_l2_theoretical_sectors_global,memory_l2_theoretical_sectors_global_ideal,"             \
    "memory_l1_wavefronts_shared,memory_l1_wavefronts_shared_ideal"
#define PROFILE_SOURCE_MAX_LINES 4096 /* distinct (kernel, file, line) kept */
#define PROFILE_SOURCE_TEXT 100       /* a line's text shown, at most (bytes) */

/* One line of a student's file, summed over the profiled launches of one
 * kernel. */
struct profile_line {
    char *kernel; /* the function's base name ("row_per_thread", Numba's "half_warps") */
    char *file;   /* the file's base name ("kernel.cu") */
    char *text;   /* the line's text: trimmed, printable ASCII, no backticks; may be "" */
    int line;
    double inst;                         /* warp-level instructions executed */
    double threads;                      /* thread-level instructions executed */
    double divergent;                    /* divergent branch targets */
    double sectors, sectors_ideal;       /* global L2 sectors, and what coalesced access needs */
    double wavefronts, wavefronts_ideal; /* shared-memory wavefronts, and without conflicts */
};

struct profile_source {
    struct profile_line *lines;
    size_t n;
};

void profile_source_init(struct profile_source *s);
void profile_source_free(struct profile_source *s);

/* Parse ncu's `--csv --page source --print-source cuda,sass` output: the
 * blocks ("File Path", "Function Name", a "Line No" header, then a row per
 * source line followed by its SASS rows); only rows of files directly in
 * dir (the sandbox's "/work": the student's file, not the harness's, not
 * CUDA's headers) are kept, SASS rows skipped, a line seen in several
 * launches summed. Bounded: at most PROFILE_SOURCE_MAX_LINES lines kept.
 * Returns 0 (zero lines when there are none), or -ENOMEM. */
int profile_source_parse(const char *text, const char *dir, struct profile_source *s);

/* For each hint of hints (profile_hints' array) that a line explains --
 * uncoalesced_global: the most excess global sectors; bank_conflicts: the
 * most excess shared wavefronts; divergence: the most divergent branch
 * targets, else the most idle lanes -- of the lines of its kernel in s (or
 * of the only kernel s has): sets "file", "line" and "source" on the hint
 * and appends a sentence with the line's numbers to its "text". Returns how
 * many hints got a line. */
int profile_hints_locate(json_t *hints, const struct profile_source *s);
/* Does hints hold a hint that a line explains? */
int profile_hints_want_lines(const json_t *hints);

/* Shared with profile_source.c: ncu's CSV fields of one line (unquoted into
 * one buffer, out[0] owns it), and a value as a number (NAN for text). */
int profile_csv_fields(const char *line, size_t len, char **out, int max);
void profile_csv_fields_free(char **f, int n);
double profile_csv_number(const char *s);

/* The ncu executable: $CUGRADE_NCU, else PROFILE_NCU_DEFAULT; NULL when it
 * is not an executable file. Points into static or environment storage. */
const char *profile_ncu_path(void);

/* CUGRADE_NCU=none: no profiling on this runner (no profile, none pending). */
int profile_off(void);

/* Fill argv (room for n, NULL-terminated) with ncu's command line for the
 * target command target (NULL-terminated; e.g. /work/prog check ...): the
 * report written to log (inside the sandbox); the kernels named in skip
 * (the harness's; may be NULL) left out through a --kernel-name regex
 * written into filter (room for filter_len). Returns the number of entries, or -ENOSPC. */
int profile_argv(const char *ncu, const char *log, const char *const *skip,
                 const char *const *target, const char **argv, size_t n, char *filter,
                 size_t filter_len);

/* Profile target (as profile_argv) in the job's sandbox: channel_fd as
 * fd 3 (the harness writes its records there; -1 for none), o's binds and
 * limits (may be NULL; the ncu directory is added), under a host-wide
 * profile lock of the job's GPU (one ncu session per GPU: its own lock file
 * lives in the sandbox's private /tmp). Returns a new reference: the
 * result's profile, "ok" or "unavailable" (never a verdict on the student:
 * the program passed every check before). NULL on out of memory. */
json_t *profile_run(const struct run_ctx *rc, const char *const *target, int channel_fd,
                    const struct run_opts *o, unsigned long long need_mb);

/* profile_run for a caller that holds the GPU's profile lock (lock_fd,
 * from profile_wait_turn; closed here once the profiled run is over). */
json_t *profile_run_held(const struct run_ctx *rc, const char *const *target, int channel_fd,
                         const struct run_opts *o, unsigned long long need_mb, int lock_fd);

/* Score first, the profile after: profiles that wait for a GPU, at most
 * PROFILE_AFTER_MAX (the ledger CACHE/gpu-N.profilew), each for its turn
 * at most CUGRADE_PROFILE_WAIT seconds (config.h, 300 by default). A
 * profile takes 2.5-5 s (H100): past these the student is told it was
 * skipped rather than wait for minutes. */
#define PROFILE_AFTER_MAX 32

/* Wait, holding nothing a grading job needs, for this GPU's profiler and
 * then for a moment when no job waits for its memory admission (the
 * grading comes first), at most max_wait seconds. Returns the profile
 * lock's fd (for profile_run_held), or < 0 with a "profile skipped: ..."
 * sentence in why: PROFILE_AFTER_MAX profiles already wait, the GPU stayed
 * busy, or the lock file cannot be opened. */
int profile_wait_turn(const struct grade_env *env, double max_wait, char *why, size_t len);

/* The GPU's profile lock at path, waiting at most max_wait seconds in the
 * queue ledger at queue (admit.h; none when PROFILE_QUEUE_MAX wait there
 * already). Returns an fd to close, -2 when busy, -1 when the lock file
 * cannot be had (the caller profiles anyway). */
int profile_lock_at(const char *path, const char *queue, double max_wait);

#endif

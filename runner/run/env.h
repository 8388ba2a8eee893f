/*
 * env.h - where and on what the runner grades: the one environment every
 * phase of a job reads (its tree, cache, toolkit, GPU, and the pipes to the
 * runner's lanes). The runner fills it at start (service/host.c).
 */
#ifndef CUGRADE_ENV_H
#define CUGRADE_ENV_H

/* Where and on what the runner grades. Strings are borrowed. */
struct grade_env {
    const char *root;               /* source tree: labs/, reference/, rubrics/ */
    const char *cache;              /* built labs and cached baselines: CACHE/ARCH/LAB/ */
    const char *work;               /* parent of per-job directories */
    const char *cuda_home;          /* "/usr/local/cuda" */
    const char *arch;               /* "sm_90" */
    const char *gpu_name;           /* "NVIDIA H100 80GB HBM3", "" when none */
    const char *gpu_index;          /* value of CUDA_VISIBLE_DEVICES inside runs, or NULL */
    const char *const *gpu_devices; /* /dev nodes of this GPU, NULL-terminated; may be NULL */
    const char *launch;             /* cugrade-launch (runner/launch.c): the sanitizers' target */
    int keep_jobs;                  /* 1 (--keep-jobs): each job's directory stays, for debugging */
    int lane_fd;                    /* -1, or a pipe to the runner: 'f' when the job's front
                                  pass is done and it asks for a CPU lane slot, 'g' when
                                  it leaves the CPU lane (compile, inspection and link
                                  done), 'w' when it waits for its GPU's memory
                                  (admission), 'a' when it is admitted */
    int grant_fd;                   /* -1, or a pipe from the runner: one byte grants the
                                  CPU lane slot asked for with 'f'; later, 'h' asks a
                                  job that waits for admission to give itself back
                                  (struct grade_later's release) */
};

/* Called at each phase change ("compiling", "checking" + "3/6", "running",
 * "timing"). Returns 0 to go on, or -ECANCELED when the job must be
 * abandoned (the server answered 409: another runner holds the lease). May
 * be called from a helper thread. */
typedef int (*grade_progress_fn)(void *arg, const char *phase, const char *detail);

#endif

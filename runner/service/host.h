/*
 * host.h - the host a runner grades on: its source tree, cache and work
 * directories, its GPU (name, arch, device nodes), the process that keeps
 * that GPU initialised, and the labs built for it. See docs/runner.md.
 */
#ifndef CUGRADE_HOST_H
#define CUGRADE_HOST_H

#include "runner/grade/grade.h"

#include <limits.h>

struct host {
    char root[PATH_MAX];
    char cache[PATH_MAX];
    char work[PATH_MAX];
    char cuda_home[PATH_MAX];
    char gpu_index[64];
    char gpu_name[256];
    char arch[32];
    char minor[16];
    char hostname[128];
    char launch[PATH_MAX]; /* cugrade-launch: beside this binary */
    const char *devices[16];
    char devbuf[16][64];
    int have_gpu;
};

/* Fill *h: the tree (opt root, $CUGRADE_ROOT, cwd or beside this binary),
 * cache and work directories, cugrade-launch, the GPU (index gpu, else
 * $CUDA_VISIBLE_DEVICES, else 0) from nvidia-smi, its arch (arch, else the
 * GPU's, else sm_90) and device nodes; then make
 * every CUDA program we start see that one GPU (CUDA_VISIBLE_DEVICES).
 * Returns 0 (a host without a GPU is one with have_gpu 0), or -EINVAL
 * when arch is not sm_NN (said on stderr). */
int host_setup(struct host *h, const char *gpu, const char *cache, const char *work,
               const char *root, const char *arch);

/* The device nodes of this GPU only, into h->devices (scanned again before
 * every job: /dev/nvidia-uvm appears only once the UVM module is loaded). */
void host_scan_devices(struct host *h);

/* Make sure the UVM nodes exist (nvidia-modprobe, else the built lab's
 * judge run outside the sandbox when lab is not NULL); then rescan. */
void host_ensure_uvm(struct host *h, const char *lab);

/* The grading environment of this host (pointers into *h, which must
 * outlive *env; lane_fd -1). */
void host_grade_env(const struct host *h, struct grade_env *env);

/* `cugrade-runner gpu-hold`: hold a context on the first visible device
 * until stdin reaches EOF. Returns the exit status (1: no CUDA). */
int host_gpu_hold_main(void);

/* Start the GPU holder (once per process; nothing without a GPU or with
 * CUGRADE_NO_GPU=1). Best effort. */
void host_gpu_hold_start(const struct host *h);

/* Build every lab (in parallel), then measure the device record and the
 * baselines one lab at a time. Failures are logged; a lab that does not
 * build is built again on its first job. The Python root's bytecode is
 * compiled beside the builds; `prepare` waits for it, a serving runner
 * (serving 1) does not (python.h python_bytecode_reaped). */
void host_build_labs(struct host *h, const struct grade_env *env, int serving);
/* The GPU's baseline record of every built lab refreshed where stale
 * (grade_lab_refresh): what a serving runner's background child runs. */
void host_refresh_baselines(const struct grade_env *env);

#endif

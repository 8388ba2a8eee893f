/*
 * cgroup.h - one control group per sandboxed run: memory and pids limits,
 * CPU accounting, peak memory, OOM events, whole-tree kill, removal.
 *
 * Two layouts are handled, detected at run time:
 *   - cgroup v2 (GPU hosts): /sys/fs/cgroup is cgroup2; the run's group is
 *     created below a parent that has +memory +pids in subtree_control.
 *   - cgroup v1 (this CI machine): memory and pids controllers mounted at
 *     /sys/fs/cgroup/{memory,pids} (cpuacct if mounted, for CPU time), with
 *     a controller-less v2 tree beside them (/sys/fs/cgroup/unified), where
 *     the run also gets a group when it can, for its CPU pressure only.
 * The parent is the caller's own cgroup, or $CUGRADE_CGROUP when set (a
 * delegated subtree, path relative to the v2 mount or to each v1 mount).
 */
#ifndef CUGRADE_CGROUP_H
#define CUGRADE_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

enum cgroup_version { CGROUP_NONE = 0, CGROUP_V1 = 1, CGROUP_V2 = 2 };

#define CGROUP_FDS 4 /* v2; v1 memory, pids, cpuacct, unified */

struct cgroup {
    enum cgroup_version version;
    char name[64];        /* leaf name, e.g. "cugrade-1234-7" */
    char v2[4096];        /* v2: the run's group directory */
    char mem[4096];       /* v1: memory group directory */
    char pids[4096];      /* v1: pids group directory */
    char cpuacct[4096];   /* v1: cpuacct group directory, "" when unmounted */
    char unified[4096];   /* v1: a group in the v2 tree beside it (its CPU
                             pressure), "" when there is none */
    int procs_fd[CGROUP_FDS]; /* open cgroup.procs of each group, -1 unused (O_CLOEXEC) */
    uint64_t peak_sampled; /* highest memory.current seen by cgroup_sample */
};

/* Which layout this host has, detected once. Returns CGROUP_V1, CGROUP_V2,
 * or CGROUP_NONE when neither memory+pids layout is usable. */
enum cgroup_version cgroup_detect(void);

/* A leftover run group (cugrade-<pid>-<n> of a runner that died: empty,
 * its pid gone) is removed by the next cgroup_create in the same parent
 * once it is this many seconds old: a runner in another pid namespace
 * sharing the parent has live groups that are never empty for longer than
 * the instant between mkdir and entering them. */
#define CGROUP_SWEEP_AGE 60
/* Tests only (tests/tools/sandbox_run --sweep-age): another age. */
void cgroup_sweep_age_set(long seconds);

/* Create a fresh, empty group for one run with memory_bytes (0 = no limit;
 * swap set to 0 where the kernel has a knob for it) and pids (0 = none).
 * Returns 0 and fills *cg, or -errno (then nothing is left behind).
 * The caller must call cgroup_destroy. */
int cgroup_create(struct cgroup *cg, uint64_t memory_bytes, uint64_t pids);

/* Move the calling process into cg. Async-signal-safe: meant for the child
 * between fork and exec (it only uses the fds opened by cgroup_create). */
int cgroup_enter_self(const struct cgroup *cg);

/* CPU time consumed by the group so far, in seconds, or -1 when unknown. */
double cgroup_cpu_seconds(const struct cgroup *cg);

/* How long, so far, at least one of the group's tasks was ready to run but
 * waited for a CPU (the "some total" of its cpu.pressure), in seconds, or
 * -1 when unknown (a kernel without PSI, a v1 host without the v2 tree). */
double cgroup_cpu_wait_seconds(const struct cgroup *cg);

/* How long, so far, every one of the group's tasks that had work waited
 * for a CPU at once (the "full total" of its cpu.pressure: time in which
 * the group made no progress for want of a CPU), in seconds, or -1 when
 * unknown (no PSI, or a kernel older than 5.13 without the line). */
double cgroup_cpu_stall_seconds(const struct cgroup *cg);

/* Set the nice of every task (thread) of the group, best effort (a raise
 * needs CAP_SYS_NICE; a task gone in between is skipped). Returns how many
 * tasks took it, or -errno when the group's task list is unreadable. */
int cgroup_renice(const struct cgroup *cg, int nice);

/* Record memory usage now (for hosts without a peak counter). */
void cgroup_sample(struct cgroup *cg);

/* Peak memory of the group in bytes (kernel counter where present, else the
 * highest sample). */
uint64_t cgroup_peak_memory(struct cgroup *cg);

/* Number of OOM kills the group has seen (0 when unknown). */
uint64_t cgroup_oom_kills(const struct cgroup *cg);

/* 1 when the group still holds processes, 0 when empty, -errno on error. */
int cgroup_populated(const struct cgroup *cg);

/* How long a killed group may take to empty. A process that held a CUDA
 * context leaves the group only once the driver has torn the context
 * down, and the driver tears down every GPU's contexts one at a time for
 * the whole host: at the start of a burst (57 jobs sent at once to two
 * H200s) that took past the 5 s this once was, and a correct job's run
 * was a system_error ("Connection timed out"). Waiting longer costs
 * nothing when the group empties sooner. */
#define CGROUP_EMPTY_MS 60000

/* Kill every process in the group and wait until it is empty, at most
 * CGROUP_EMPTY_MS. Uses cgroup.kill where the kernel has it, else SIGKILLs every
 * listed pid in a loop (a fork bomb racing us is bounded by pids.max).
 * Returns 0 when empty, -ETIMEDOUT or -errno otherwise. */
int cgroup_kill(const struct cgroup *cg);

/* Kill what is left, then remove the group directories. Safe on a zeroed or
 * half-created *cg. Returns 0 or the first -errno (the sandbox reports it as
 * a system error: a group that cannot be removed is a leak). */
int cgroup_destroy(struct cgroup *cg);

#endif

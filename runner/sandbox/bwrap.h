/*
 * bwrap.h - the sandbox's launch of bubblewrap (internal to the sandbox:
 * sandbox.c is its one user). Two parts: the argument list bwrap reads
 * from a memfd (--args), and the plan the forked child follows between
 * fork and exec -- cgroup, rlimits, no_new_privs, the descriptor table,
 * the box's credentials -- which is async-signal-safe throughout.
 */
#ifndef CUGRADE_BWRAP_H
#define CUGRADE_BWRAP_H

#include "runner/sandbox/cgroup.h"
#include "runner/sandbox/sandbox.h"

#include <sys/resource.h>
#include <sys/types.h>

/* How bwrap is started. In the first two modes the command's host uid/gid
 * is its box's (box.h): never root, never another running job's.
 *   BOX:  we drop to the box uid before exec'ing bwrap, which builds an
 *         unprivileged user namespace (uid 65534 inside). Needs
 *         unprivileged user namespaces.
 *   ROOT: where they are off: we (root) create the user namespace
 *         ourselves as the box uid (kept CAP_SYS_ADMIN), map uid 0 inside
 *         to the box uid, and exec bwrap as that namespace's root, which
 *         builds the rest without a user namespace of its own. The command
 *         is uid 0 inside, host uid = the box, no capabilities: root-owned
 *         0400/0600 files (/proc/timer_list, /sys/class/zram-control/
 *         hot_add) are not its own. (The old root-mapped mode mapped it to
 *         host root: such files were readable, and reading hot_add made a
 *         zram device on the host.)
 *   SELF: we are not root: bwrap runs as whoever we are (unprivileged user
 *         namespace, uid 65534 inside); no boxes.
 * Chosen per process (sandbox.c): BOX first, ROOT when bwrap cannot set up
 * as the box ($CUGRADE_SANDBOX_USER=root|nobody forces one). */
enum bwrap_mode { BWRAP_MODE_UNKNOWN, BWRAP_MODE_BOX, BWRAP_MODE_ROOT, BWRAP_MODE_SELF };

/* "box", "root" or "self", for messages. */
const char *bwrap_mode_name(enum bwrap_mode m);

/* What the child does between fork and exec. Everything in it is ready
 * before the fork: the child only reads it (and sets reaper). */
struct bwrap_plan {
    const struct cgroup *cg;
    struct rlimit fsize, core, nofile, cpu;
    int nice;              /* 0, or the run's CPU priority, -20..19 (sandbox_config.nice) */
    int uid, gid;          /* -1: keep who we are; else the box */
    int own_userns;        /* ROOT mode: make the user namespace ourselves */
    gid_t groups[8];       /* supplementary groups: the GPU nodes' */
    int ngroups;
    char uid_map[32], gid_map[32]; /* "0 <box> 1" */
    int src[10], dst[10], n; /* dup2 plan; all src >= 10, all dst < 10 */
    int keep_from;         /* close everything from here up, but the error pipe */
    int errpipe;           /* CLOEXEC; errno written here if exec fails */
    const char *bwrap;
    char *const *argv;
    char *const *envp;
    pid_t runner, reaper;  /* to notice a parent that died before PDEATHSIG was set */
};

/* Fill the plan's limits (from cfg) and credentials (the box, in modes BOX
 * and ROOT; in ROOT the user namespace's maps; the groups of the GPU nodes
 * in cfg->devices that are open to their group only). Leaves the
 * descriptor plan, bwrap, argv, envp and runner alone. */
void bwrap_plan_creds(struct bwrap_plan *p, const struct sandbox_config *cfg,
                      enum bwrap_mode mode, unsigned box);

/* cfg->diag_no_seccomp: no seccomp filter. For measuring what the filter
 * costs (tests/bench/sandbox_diag.sh, through tests/tools/sandbox_run)
 * only, never for grading: the deny-list is a wall (docs/sandbox.md).
 * Warned about on stderr once. Returns 1 when off. */
int bwrap_seccomp_off(const struct sandbox_config *cfg);

/* Build bwrap's whole argument list for cfg in mode, naming seccomp_fd
 * and status_fd as the descriptors bwrap will find them at. Returns a
 * memfd (O_CLOEXEC, offset 0; caller closes) or -errno. */
int bwrap_args_build(const struct sandbox_config *cfg, enum bwrap_mode mode, int seccomp_fd,
                     int status_fd);

/* Set the nice of pid's autogroup (its session's; pid 0: the caller's own),
 * best effort (no autogroup, or a raise without CAP_SYS_NICE: unchanged).
 * Async-signal-safe. */
void bwrap_autogroup_nice(pid_t pid, int nice);

/* In the forked child of the runner: become the reaper (a child subreaper
 * outside the cgroup), fork the grandchild that follows p and execs bwrap,
 * reap everything re-parented to us, and exit with bwrap's status (code,
 * or 128+signal). A failure before exec writes its errno on p->errpipe
 * and exits 127. Never returns; async-signal-safe only. */
_Noreturn void bwrap_child_run(struct bwrap_plan *p);

#endif

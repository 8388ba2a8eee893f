/*
 * sandbox.h - run one untrusted command (nvcc on a student's file, or a
 * program linked with a student's object) under bubblewrap, in its own
 * cgroup, with hard limits, and return a verdict.
 *
 * Two ways to fail, kept apart (as in isolate):
 *   - sandbox_run() returns a negative errno: the sandbox itself broke
 *     (bwrap missing, cgroup not writable...). The job is a system_error.
 *   - sandbox_run() returns 0 and fills a verdict: the command ran and the
 *     verdict says how it ended (exit code, signal, timeout, OOM...).
 */
#ifndef CUGRADE_SANDBOX_H
#define CUGRADE_SANDBOX_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct sandbox_bind {
    const char *src;  /* host path */
    const char *dst;  /* path inside the sandbox; NULL means same as src */
    int writable;     /* 0: read-only bind */
};

struct sandbox_config {
    const char *const *argv;     /* command inside the sandbox, argv[0] resolved via PATH */
    const char *const *env;      /* complete environment, NULL-terminated; nothing else leaks */
    const char *workdir;         /* host dir, fresh, bound read-write at /work; cwd is /work */
    const struct sandbox_bind *binds; /* extra binds (lab files, CUDA toolkit); may be NULL */
    size_t nbinds;
    const char *const *devices;  /* extra /dev nodes, e.g. "/dev/nvidia0"; NULL-terminated or NULL */
    int result_fd;               /* -1, or a host fd that appears as fd 3 inside */
    double wall_seconds;         /* wall-clock limit, measured by the supervisor
                                    from the command's start (bwrap's set-up has
                                    SANDBOX_SETUP_SECONDS of its own) */
    double cpu_seconds;          /* CPU-time limit (cgroup usage; RLIMIT_CPU as backstop) */
    uint64_t memory_bytes;       /* cgroup memory limit (never RLIMIT_AS: it breaks CUDA) */
    uint64_t pids;               /* cgroup pids limit */
    uint64_t file_bytes;         /* RLIMIT_FSIZE */
    uint64_t workdir_bytes;      /* size cap of /work (tmpfs size or quota) */
    size_t output_cap;           /* bytes kept of stdout and of stderr each */
    int allow_gpu;               /* bind the GPU nodes named in devices */
    /* Diagnostics only (tests/tools/sandbox_run --no-cgroup, --no-seccomp;
     * tests/bench/sandbox_diag.sh measures what each layer costs, and a
     * host whose cgroupfs we may not write is tested without one): 1 runs
     * WITHOUT cgroup limits (wall clock only, the tree still killed through
     * the PDEATHSIG chain), or WITHOUT the seccomp filter. The runner never
     * sets them: nothing in its environment turns a layer off. */
    int diag_no_cgroup, diag_no_seccomp;
    /* Extensions (sandbox_config_init sets them; zero is a safe default). */
    const char *bwrap;           /* NULL: $CUGRADE_BWRAP, else /usr/bin/bwrap */
    uint64_t nofile;             /* RLIMIT_NOFILE; 0 means 1024 */
    int control_fd;              /* -1, or a host fd that appears as fd 4 inside
                                    (needs result_fd): a control socket to a
                                    trusted program inside (cugrade-launch) */
    int cancel_fd;               /* -1, or a host fd the supervisor polls: a byte
                                    or EOF on it kills the run (v->cancelled) */
    uint64_t output_limit;       /* stdout + stderr together, in bytes: past it the
                                    run is killed at once (v->output_limit, as
                                    DOMjudge and isolate do); 0: never killed for
                                    output (only truncated to output_cap).
                                    sandbox_config_init: SANDBOX_OUTPUT_LIMIT */
    const struct sandbox_pause *pause; /* NULL, or a clock that another thread of
                                    the caller stops while the command waits on it
                                    (a Python timing run waiting at its gate for the
                                    GPU's exclusive lock): the wall limit does not
                                    count the stopped time. */
    struct sandbox_stall *stall;       /* NULL, or where the supervisor publishes,
                                    every tick, how long the command has been
                                    stalled for want of a CPU so far (a clock
                                    of the caller's, share.h, counts only the
                                    time the run could run) */
    int secret_fd;               /* -1, or a host fd that appears as fd 5 inside
                                    (needs result_fd): a pipe holding a secret
                                    (a run's seed) that the command reads and
                                    closes before it runs anything untrusted;
                                    never on a command line or in the
                                    environment, which bwrap's init (pid 1
                                    inside) keeps readable in its memory */
    int nice;                    /* 0 (the runner's own), or -20..19: the
                                    whole run at this CPU priority
                                    (setpriority before bwrap, best effort:
                                    raising one needs CAP_SYS_NICE). The
                                    front pass runs above the rest, the
                                    compiler's full steps below (compile.h) */
    struct sandbox_boost *boost; /* NULL, or a raise of the priority that
                                    another thread of the caller asks for
                                    while the command runs (a timing run
                                    given the GPU's exclusive hold) */
};

/* The default output limit: 8 MiB of stdout + stderr (DOMjudge's default). */
#define SANDBOX_OUTPUT_LIMIT (8ULL << 20)

/* bwrap's set-up (namespaces, mounts, the launcher's start), from fork to
 * the command's start: not the command's time (wall_seconds counts from
 * its start), but bounded: past this, the run is our failure. It takes
 * 10-50 ms on a quiet host, seconds on a loaded one at nice 19. */
#define SANDBOX_SETUP_SECONDS 30.0

/* A stopped clock shared between the supervisor and the caller's thread
 * (sandbox_pause_begin/_end, microseconds of CLOCK_MONOTONIC). */
struct sandbox_pause {
    _Atomic long long total_us; /* stopped time of pauses that have ended */
    _Atomic long long since_us; /* 0, or when the pause under way began */
};
void sandbox_pause_init(struct sandbox_pause *p);
void sandbox_pause_begin(struct sandbox_pause *p);
void sandbox_pause_end(struct sandbox_pause *p);
/* Seconds stopped so far, the pause under way included. */
double sandbox_pause_seconds(const struct sandbox_pause *p);

/* A raise of a running command's CPU priority, asked for by another thread
 * of the caller (sandbox_boost_ask) and applied by the supervisor within a
 * tick: every task of the run's cgroup gets nice (setpriority per thread),
 * and so does the run's session's autogroup (the reaper's, bwrap.c), which
 * is what the scheduler weighs where autogroup is on. Best effort, as nice
 * is; never lowered again (a timing run ends with its hold). */
struct sandbox_boost {
    int nice; /* -20..19 */
    _Atomic int asked;
};
void sandbox_boost_init(struct sandbox_boost *b, int nice);
void sandbox_boost_ask(struct sandbox_boost *b);

/* A run's CPU stall so far, written by the supervisor and read by another
 * thread of the caller's (microseconds; -1 until the run's cgroup has said:
 * a host without CPU pressure accounting never says). The stall is the
 * "full" CPU pressure of the run's cgroup: time in which every task of the
 * run that had work waited for a CPU at once. A busy host holds a correct
 * run back by that much; a run that spins (one thread, or a few) is never
 * stalled while it has a CPU, so a hang is still cut after its limit's
 * worth of running. */
struct sandbox_stall {
    _Atomic long long us;
};
void sandbox_stall_init(struct sandbox_stall *s);
/* Seconds stalled so far, or -1 unknown. */
double sandbox_stall_seconds(const struct sandbox_stall *s);

struct sandbox_verdict {
    int exited;           /* 1 if exited normally */
    int exit_code;        /* valid when exited */
    int signal;           /* terminating signal, 0 if none */
    int timed_out;        /* wall or CPU limit hit (killed by the supervisor) */
    int cpu_limit;        /* the CPU limit, not the wall limit, was hit */
    int oom_killed;       /* the cgroup's OOM killer fired */
    int output_truncated; /* stdout or stderr exceeded output_cap */
    double wall_seconds;
    double cpu_seconds;
    uint64_t peak_memory_bytes;
    uint64_t stdout_bytes, stderr_bytes; /* total produced, kept or not */
    char *out;            /* captured stdout, NUL-terminated, at most output_cap; caller frees via sandbox_verdict_free */
    char *err;            /* captured stderr, same */
    char message[256];    /* a sentence for the student when not a clean exit 0 */
    /* Extensions. */
    int file_limit;       /* killed by SIGXFSZ: a file grew past file_bytes */
    double setup_seconds; /* fork to the command's start (bwrap setup), included in
                             wall_seconds but not counted against cfg->wall_seconds */
    int cancelled;        /* ended through cancel_fd: killed, nothing to judge */
    unsigned host_uid;    /* the command's uid (and gid) on the host: its box's
                             uid, or the runner's own when it is not root */
    int output_limit;     /* killed for producing more than cfg->output_limit bytes
                             of stdout + stderr ("output limit exceeded"); the
                             byte counts say how far it got (at most ~1 MiB past) */
    double cpu_wait_seconds; /* how long it was ready to run but waited for a
                                CPU (its cgroup's CPU pressure), -1 unknown */
};

/* Boxes: every sandbox that runs at the same time as another has a host
 * uid/gid of its own (as isolate gives each box its own), uid = gid =
 * base + i for i < count, held through a lock file DIR/box-<i>.lock, so
 * that per-user kernel limits (inotify instances, user namespaces,
 * processes...) taken by one job starve only that job. A work directory
 * from sandbox_workdir_create holds one box until sandbox_workdir_remove:
 * all runs in it have that uid. Only when the caller is root (otherwise
 * the command runs as the caller). Defaults below; $CUGRADE_SANDBOX_UID_BASE
 * overrides the base (its range keeps the last box a valid uid), and
 * sandbox_boxes_configure (0/NULL: keep; tests) overrides all three. The lock directory is not a switch:
 * every runner of a host must lock its boxes in the same one, or two
 * sandboxes could get one uid. No user with
 * these uids needs to exist; nothing on the host should own files with
 * them (the range sits above systemd's container range, below 2^31). */
#define SANDBOX_BOX_UID_BASE 1900000000u
#define SANDBOX_BOXES 1000u
#define SANDBOX_BOX_DIR "/run/cugrade-sandbox"          /* when /run is writable */
#define SANDBOX_BOX_DIR_FALLBACK "/tmp/cugrade-sandbox-boxes" /* else (root's, 0700, checked) */
void sandbox_boxes_configure(unsigned base, unsigned count, const char *dir);

#define SANDBOX_MEMORY_BYTES (1ULL << 30) /* sandbox_config_init's, and a config's 0 */
/* Fill *cfg with safe defaults (10 s wall, 10 s CPU, 1 GiB memory, 64 pids,
 * 64 MiB files and work dir, 64 KiB of output kept per stream, killed past
 * SANDBOX_OUTPUT_LIMIT bytes of output). */
void sandbox_config_init(struct sandbox_config *cfg);

/* Run cfg->argv in a fresh sandbox and wait for it and all its descendants.
 * Returns 0 and fills *v, or a negative errno if the sandbox could not be
 * built or supervised (then *v is zeroed and must still be freed). Never
 * leaves processes or cgroups behind. */
int sandbox_run(const struct sandbox_config *cfg, struct sandbox_verdict *v);

/* Free what sandbox_run allocated in *v. Safe on a zeroed verdict. */
void sandbox_verdict_free(struct sandbox_verdict *v);

/* Read a file that the sandboxed program left in workdir: opened with
 * openat(O_NOFOLLOW) beneath workdir, regular files only, at most cap bytes.
 * Returns 0 and a malloc'd buffer (NUL-terminated, *len excludes the NUL),
 * -ELOOP for a link, -EINVAL for a non-regular file, -EFBIG over cap. */
int sandbox_take_file(const char *workdir, const char *name, size_t cap,
                      char **buf, size_t *len);

/* Create a fresh, empty work directory under parent (mode 0700, owned by the
 * uid of a box it takes and holds until sandbox_workdir_remove). Returns 0 and a malloc'd path. It is a tmpfs mount of its
 * own (the size cap; sandbox_run resizes it to workdir_bytes and refuses,
 * -ENOTSUP, a workdir that is not one while workdir_bytes is non-zero).
 * parent should be traversable by others (o+x) so the sandbox can run as
 * its box's uid; remove it with sandbox_workdir_remove (it unmounts, and
 * lets the box go). -EBUSY: every box is taken (a system error). */
int sandbox_workdir_create(const char *parent, char **path);

/* Set the size cap of a work directory made by sandbox_workdir_create (a
 * tmpfs) to bytes; what is in it stays. sandbox_run calls it with
 * cfg->workdir_bytes. Returns 0, -ENOTSUP when path is not a tmpfs mount
 * (then only RLIMIT_FSIZE bounds it), or -errno. */
int sandbox_workdir_resize(const char *path, uint64_t bytes);

/* Remove a work directory tree without following any link, and let its box
 * go. Returns 0 or -errno. */
int sandbox_workdir_remove(const char *path);

/* Remove the folder path and everything below it, following no link (a
 * folder of ours, not a work directory: no unmount, no box). A missing
 * path is no error. Returns 0 or -errno. */
int sandbox_tree_remove(const char *path);

/* The most files, and the biggest file, sandbox_copy_files copies. */
#define SANDBOX_COPY_FILES 256
#define SANDBOX_COPY_FILE_BYTES (4u << 20)

/* Copy the regular files directly in from (no links, nothing in a
 * subfolder, none of a name starting with '.', at most SANDBOX_COPY_FILES
 * of at most SANDBOX_COPY_FILE_BYTES each) into the folder to, made (0755)
 * when missing; to and the copies (0644) are then owned by uid:gid, unless
 * uid is (uid_t)-1. A missing from copies nothing. Returns how many files
 * were copied, or -errno. */
int sandbox_copy_files(const char *from, const char *to, uid_t uid, gid_t gid);

/* Read-only binds that make the CUDA toolkit at cuda_home visible in the
 * sandbox, which already sees /usr: none when it lives under /usr, else the
 * toolkit's real path (and cuda_home itself when that is not a link into
 * it). Fills up to 2 entries of out, using real (PATH_MAX bytes) for the
 * real path; returns how many. */
size_t sandbox_cuda_binds(const char *cuda_home, struct sandbox_bind *out, char *real);

#endif

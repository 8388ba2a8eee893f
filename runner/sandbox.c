/*
 * sandbox.c - run one untrusted command under bubblewrap in its own cgroup
 * (see sandbox.h and docs/sandbox.md).
 *
 * Who does what:
 *   bwrap       namespaces (user, pid, mount, net, ipc, uts, cgroup), the
 *               filesystem view, fresh /proc, /dev, the seccomp filter,
 *               --die-with-parent, --new-session, clean environment.
 *   this file   the cgroup (memory, pids, CPU accounting), rlimits,
 *               no_new_privs, the descriptor table, the wall and CPU clocks,
 *               output capture with a cap, the whole-tree kill, the verdict.
 *
 * As in isolate, two ways to fail are kept apart: a negative return means
 * the sandbox broke (the job is a system_error and is retried); a verdict
 * means the student's command ran and says how it ended. The line between
 * them is the ready pipe: a launcher inside writes one byte on it once
 * bwrap's setup is over, then becomes the command. No byte, our failure.
 */
#include "runner/sandbox.h"

#include "runner/cgroup.h"
#include "runner/seccomp.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The uid/gid the command has inside in box mode (root mode: 0). */
#define SANDBOX_UID 65534
#define SANDBOX_GID 65534
#define SANDBOX_TICK_MS 20

/* How bwrap is started. In the first two modes the command's host uid/gid
 * is its box's (below): never root, never another running job's.
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
 * Chosen per process: BOX first, ROOT when bwrap cannot set up as the box
 * ($CUGRADE_SANDBOX_USER=root|nobody forces one). */
enum sandbox_mode { MODE_UNKNOWN, MODE_BOX, MODE_ROOT, MODE_SELF };
static enum sandbox_mode sandbox_mode_cached = MODE_UNKNOWN;

static const char *mode_name(enum sandbox_mode m)
{
    return m == MODE_BOX ? "box" : m == MODE_ROOT ? "root" : "self";
}

/* ---- boxes: one host uid/gid per concurrent sandbox -----------------------
 * As isolate gives each box its own uid: per-user kernel limits
 * (inotify instances and watches, user namespaces, RLIMIT_NPROC, pending
 * signals, mqueue bytes) are counted per host uid, so one job that takes
 * them all must starve only itself. A box is uid = gid = base + i, held
 * through flock() on DIR/box-<i>.lock (one open file each: threads of one
 * runner and separate runner processes exclude each other alike; a dead
 * runner's locks go with it). A work directory made by
 * sandbox_workdir_create holds its box until sandbox_workdir_remove, so
 * every run of one job (and runs that share its work directory at the
 * same time) has the same uid; a run in any other directory holds a box
 * of its own for the run. */
static struct {
    pthread_mutex_t mu;
    int configured;
    unsigned base, count, next;
    char dir[256];
    struct box_held {
        dev_t dev; /* the work directory, by identity: any spelling of */
        ino_t ino; /* its path finds it */
        unsigned uid;
        int fd;
    } *held;
    size_t nheld, capheld;
} boxes = {.mu = PTHREAD_MUTEX_INITIALIZER};

static unsigned env_unsigned(const char *name, unsigned dflt)
{
    const char *e = getenv(name);
    char *end;
    if (!e || !*e)
        return dflt;
    unsigned long v = strtoul(e, &end, 10);
    return *end || v == 0 || v > 0xfffffff0UL ? dflt : (unsigned)v;
}

/* Under boxes.mu. */
static void boxes_setup(void)
{
    if (boxes.configured)
        return;
    boxes.base = env_unsigned("CUGRADE_SANDBOX_UID_BASE", SANDBOX_BOX_UID_BASE);
    boxes.count = env_unsigned("CUGRADE_SANDBOX_BOXES", SANDBOX_BOXES);
    const char *d = getenv("CUGRADE_SANDBOX_BOX_DIR");
    if (!d || *d != '/')
        /* /run where there is one to write (a container may lack it) */
        d = access("/run", W_OK) == 0 ? SANDBOX_BOX_DIR : SANDBOX_BOX_DIR_FALLBACK;
    snprintf(boxes.dir, sizeof boxes.dir, "%s", d);
    boxes.next = (unsigned)getpid() * 7919u;
    boxes.configured = 1;
}

void sandbox_boxes_configure(unsigned base, unsigned count, const char *dir)
{
    pthread_mutex_lock(&boxes.mu);
    boxes_setup();
    if (base)
        boxes.base = base;
    if (count)
        boxes.count = count;
    if (dir && *dir == '/')
        snprintf(boxes.dir, sizeof boxes.dir, "%s", dir);
    pthread_mutex_unlock(&boxes.mu);
}

/* Take a free box. Returns the lock's fd (O_CLOEXEC; closing it frees the
 * box) and *uid, or -EBUSY when every box is taken, or -errno. */
static int box_take(unsigned *uid)
{
    pthread_mutex_lock(&boxes.mu);
    boxes_setup();
    unsigned base = boxes.base, count = boxes.count, start = boxes.next++;
    char dir[256];
    memcpy(dir, boxes.dir, sizeof dir);
    pthread_mutex_unlock(&boxes.mu);
    if (base > 0xfffffff0u - count)
        return -ERANGE;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    struct stat st;
    if (fstat(dfd, &st) < 0 || st.st_uid != getuid() || (st.st_mode & 022)) {
        /* someone else's directory: they could hold every lock */
        close(dfd);
        return -EPERM;
    }
    int rc = -EBUSY;
    for (unsigned k = 0; k < count; k++) {
        unsigned i = (start + k) % count;
        char name[32];
        snprintf(name, sizeof name, "box-%u.lock", i);
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            *uid = base + i;
            close(dfd);
            return fd;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK) {
            rc = -e;
            break;
        }
    }
    close(dfd);
    return rc;
}

/* The box a work directory made by sandbox_workdir_create holds, or 0. */
static unsigned box_of_workdir(const char *path)
{
    struct stat st;
    unsigned uid = 0;
    if (stat(path, &st) < 0)
        return 0;
    pthread_mutex_lock(&boxes.mu);
    for (size_t i = 0; i < boxes.nheld; i++)
        if (boxes.held[i].dev == st.st_dev && boxes.held[i].ino == st.st_ino)
            uid = boxes.held[i].uid;
    pthread_mutex_unlock(&boxes.mu);
    return uid;
}

static int box_hold(const struct stat *st, unsigned uid, int fd)
{
    int rc = 0;
    pthread_mutex_lock(&boxes.mu);
    if (boxes.nheld == boxes.capheld) {
        size_t nc = boxes.capheld ? boxes.capheld * 2 : 16;
        struct box_held *nh = realloc(boxes.held, nc * sizeof *nh);
        if (!nh)
            rc = -ENOMEM;
        else {
            boxes.held = nh;
            boxes.capheld = nc;
        }
    }
    if (rc == 0)
        boxes.held[boxes.nheld++] = (struct box_held){st->st_dev, st->st_ino, uid, fd};
    pthread_mutex_unlock(&boxes.mu);
    return rc;
}

/* Let a work directory's box go (nothing when it holds none). */
static void box_release(dev_t dev, ino_t ino)
{
    int fd = -1;
    pthread_mutex_lock(&boxes.mu);
    for (size_t i = 0; i < boxes.nheld; i++)
        if (boxes.held[i].dev == dev && boxes.held[i].ino == ino) {
            fd = boxes.held[i].fd;
            boxes.held[i] = boxes.held[--boxes.nheld];
            break;
        }
    pthread_mutex_unlock(&boxes.mu);
    if (fd >= 0)
        close(fd);
}

void sandbox_config_init(struct sandbox_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->result_fd = -1;
    cfg->control_fd = -1;
    cfg->cancel_fd = -1;
    cfg->wall_seconds = 10;
    cfg->cpu_seconds = 10;
    cfg->memory_bytes = 1ULL << 30;
    cfg->pids = 64;
    cfg->file_bytes = 64ULL << 20;
    cfg->workdir_bytes = 64ULL << 20;
    cfg->output_cap = 64 << 10;
    cfg->nofile = 1024;
    cfg->output_limit = SANDBOX_OUTPUT_LIMIT;
}

void sandbox_verdict_free(struct sandbox_verdict *v)
{
    free(v->out);
    free(v->err);
    v->out = v->err = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void sandbox_pause_init(struct sandbox_pause *p)
{
    atomic_init(&p->total_us, 0);
    atomic_init(&p->since_us, 0);
}

void sandbox_pause_begin(struct sandbox_pause *p)
{
    assert(atomic_load(&p->since_us) == 0);
    atomic_store(&p->since_us, now_us());
}

void sandbox_pause_end(struct sandbox_pause *p)
{
    long long since = atomic_load(&p->since_us);
    assert(since > 0);
    /* total first: a reader between the two stores counts the pause twice
     * for an instant (a later deadline), never not at all */
    atomic_fetch_add(&p->total_us, now_us() - since);
    atomic_store(&p->since_us, 0);
}

double sandbox_pause_seconds(const struct sandbox_pause *p)
{
    long long since = atomic_load(&p->since_us);
    long long us = atomic_load(&p->total_us) + (since > 0 ? now_us() - since : 0);
    assert(us >= 0);
    return (double)us / 1e6;
}

/* Seconds the caller has stopped the wall limit's clock for (cfg->pause). */
static double sandbox_paused(const struct sandbox_config *cfg)
{
    return cfg->pause ? sandbox_pause_seconds(cfg->pause) : 0;
}

/* ---- bwrap's argument list, written to a memfd for --args ------------
 * Passing the arguments through a descriptor keeps them (host paths and the
 * environment's values) out of /proc/1/cmdline, which the command can read:
 * bwrap's own init is pid 1 in the sandbox. */

struct argbuf {
    char *p;
    size_t len, cap;
    int oom;
};

static void arg_add(struct argbuf *a, const char *s)
{
    size_t l = strlen(s) + 1;
    if (a->oom)
        return;
    if (a->len + l > a->cap) {
        size_t nc = (a->cap ? a->cap * 2 : 4096) + l;
        char *np = realloc(a->p, nc);
        if (!np) {
            a->oom = 1;
            return;
        }
        a->p = np;
        a->cap = nc;
    }
    memcpy(a->p + a->len, s, l);
    a->len += l;
}

static void arg_add2(struct argbuf *a, const char *x, const char *y)
{
    arg_add(a, x);
    arg_add(a, y);
}

static void arg_add3(struct argbuf *a, const char *x, const char *y, const char *z)
{
    arg_add(a, x);
    arg_add(a, y);
    arg_add(a, z);
}

/* The system part of the view: /usr read-only, and the top-level links or
 * directories of a merged or split /usr. */
static void args_system(struct argbuf *a)
{
    static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    arg_add3(a, "--ro-bind", "/usr", "/usr");
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        struct stat st;
        if (lstat(top[i], &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char t[PATH_MAX];
            ssize_t n = readlink(top[i], t, sizeof t - 1);
            if (n <= 0)
                continue;
            t[n] = 0;
            arg_add3(a, "--symlink", t, top[i]);
        } else if (S_ISDIR(st.st_mode)) {
            arg_add3(a, "--ro-bind", top[i], top[i]);
        }
    }
    /* Of /etc only what the dynamic linker and compiler drivers read.
     * Not /etc as a whole: /etc/shadow, ssh host keys, the runner's own
     * configuration (#include "/etc/shadow" must find nothing). */
    static const char *const etc[] = {
        "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
        "/etc/alternatives", "/etc/localtime",
    };
    arg_add2(a, "--dir", "/etc");
    for (size_t i = 0; i < sizeof etc / sizeof etc[0]; i++)
        arg_add3(a, "--ro-bind-try", etc[i], etc[i]);
}

/* $CUGRADE_SANDBOX_SECCOMP=off: no seccomp filter. For measuring what the
 * filter costs (tests/bench/sandbox_diag.sh) only, never for grading: the
 * deny-list is a wall (docs/sandbox.md). Warned about on stderr. */
static int seccomp_off(void)
{
    const char *e = getenv("CUGRADE_SANDBOX_SECCOMP");
    if (!e || strcmp(e, "off") != 0)
        return 0;
    static int warned;
    if (!warned++)
        fprintf(stderr, "sandbox: CUGRADE_SANDBOX_SECCOMP=off: running WITHOUT the seccomp filter\n");
    return 1;
}

static int dev_is_open_to_all(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return (st.st_mode & 005) == 005;
    return (st.st_mode & 006) == 006;
}

/* Build the whole argument list. Returns a memfd (offset 0) or -errno. */
static int args_build(const struct sandbox_config *cfg, enum sandbox_mode mode,
                      int seccomp_fd, int status_fd)
{
    struct argbuf a = {0};
    char num[32], num2[32];
    int fd = -1, rc;

    if (mode != MODE_ROOT)
        arg_add(&a, "--unshare-user"); /* ROOT: we made it, see grandchild_run */
    arg_add(&a, "--unshare-pid");
    arg_add(&a, "--unshare-net");       /* only a down loopback inside */
    arg_add(&a, "--unshare-ipc");       /* no SysV shm shared with the harness of another job */
    arg_add(&a, "--unshare-uts");
    arg_add(&a, "--unshare-cgroup-try"); /* /proc/self/cgroup shows "/" */
    if (mode != MODE_ROOT) {
        /* No nested user namespace: kernel attack surface. (ROOT: the
         * grandchild set max_user_namespaces to 0 in ours.) */
        arg_add(&a, "--disable-userns");
        snprintf(num, sizeof num, "%d", SANDBOX_UID);
        snprintf(num2, sizeof num2, "%d", SANDBOX_GID);
        arg_add2(&a, "--uid", num);
        arg_add2(&a, "--gid", num2);
    }
    arg_add2(&a, "--hostname", "cugrade");
    if (mode != MODE_BOX)
        arg_add2(&a, "--cap-drop", "ALL"); /* bounding set too, not only effective */
    arg_add(&a, "--die-with-parent");   /* runner dies: the sandbox dies */
    arg_add(&a, "--new-session");       /* TIOCSTI into a terminal we might share */
    arg_add(&a, "--clearenv");
    for (const char *const *e = cfg->env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e)
            continue;
        char key[256];
        size_t kl = (size_t)(eq - *e);
        if (kl >= sizeof key)
            continue;
        memcpy(key, *e, kl);
        key[kl] = 0;
        arg_add3(&a, "--setenv", key, eq + 1);
    }

    args_system(&a);
    arg_add3(&a, "--ro-bind", "/sys", "/sys"); /* CUDA reads the PCI topology */
    arg_add2(&a, "--proc", "/proc");           /* fresh: only our pid namespace */
    arg_add2(&a, "--dev", "/dev");             /* null zero full random urandom tty, a private devpts */
    /* Private /tmp and /dev/shm. tmpfs pages are charged to the writer's
     * memory cgroup, so the memory limit bounds them; size= says so too. */
    snprintf(num, sizeof num, "%llu", (unsigned long long)(cfg->memory_bytes ? cfg->memory_bytes : (1ULL << 30)));
    arg_add2(&a, "--size", num);
    arg_add2(&a, "--tmpfs", "/tmp");
    arg_add2(&a, "--size", num);
    arg_add2(&a, "--tmpfs", "/dev/shm");
    arg_add3(&a, "--bind", cfg->workdir, "/work");
    for (size_t i = 0; i < cfg->nbinds; i++) {
        const struct sandbox_bind *b = &cfg->binds[i];
        arg_add3(&a, b->writable ? "--bind" : "--ro-bind", b->src, b->dst ? b->dst : b->src);
    }
    if (cfg->allow_gpu)
        for (const char *const *d = cfg->devices; d && *d; d++)
            arg_add3(&a, "--dev-bind", *d, *d);
    /* The root of the view is bwrap's tmpfs: read-only from here on, so
     * the program writes only to /work, /tmp and /dev/shm. */
    arg_add2(&a, "--remount-ro", "/");
    arg_add2(&a, "--chdir", "/work");
    snprintf(num, sizeof num, "%d", seccomp_fd);
    if (!seccomp_off())
        arg_add2(&a, "--seccomp", num);
    snprintf(num, sizeof num, "%d", status_fd);
    arg_add2(&a, "--json-status-fd", num);
    /* The command follows in bwrap's real argv: bwrap does not take it
     * from an --args file. */
    if (a.oom) {
        rc = -ENOMEM;
        goto fail;
    }
    fd = memfd_create("cugrade-bwrap-args", MFD_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    for (size_t off = 0; off < a.len;) {
        ssize_t w = write(fd, a.p + off, a.len - off);
        if (w < 0) {
            rc = -errno;
            goto fail;
        }
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        rc = -errno;
        goto fail;
    }
    free(a.p);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    free(a.p);
    return rc;
}

/* ---- the child between fork and exec: async-signal-safe only ---------- */

struct child_plan {
    const struct cgroup *cg;
    struct rlimit fsize, core, nofile, cpu;
    int uid, gid;          /* -1: keep who we are; else the box */
    int own_userns;        /* ROOT mode: make the user namespace ourselves */
    gid_t groups[8];       /* supplementary groups: the GPU nodes' */
    int ngroups;
    char uid_map[32], gid_map[32]; /* "0 <box> 1" */
    int src[9], dst[9], n; /* dup2 plan; all src >= 10, all dst < 10 */
    int keep_from;         /* close everything from here up, but the error pipe */
    int errpipe;           /* CLOEXEC; errno written here if exec fails */
    const char *bwrap;
    char *const *argv;
    char *const *envp;
    pid_t runner, reaper;  /* to notice a parent that died before PDEATHSIG was set */
};

static void child_fail(int errpipe, int err)
{
    ssize_t w = write(errpipe, &err, sizeof err);
    (void)w;
    _exit(127);
}

static void grandchild_run(const struct child_plan *p)
{
    int err;
    /* Join the cgroup before anything else runs: every descendant,
     * including bwrap's init and whatever setsid()s later, is born in it. */
    if ((err = -cgroup_enter_self(p->cg)) != 0)
        child_fail(p->errpipe, err);
    /* Limits the cgroup has no knob for. RLIMIT_FSIZE: one huge file
     * (SIGXFSZ). RLIMIT_CORE 0: no core dumps of the harness's memory.
     * RLIMIT_NOFILE: descriptor exhaustion. RLIMIT_CPU: a backstop in case
     * the supervisor stalls. Never RLIMIT_AS: CUDA reserves terabytes of
     * virtual address space for unified addressing. */
    if (setrlimit(RLIMIT_FSIZE, &p->fsize) < 0 || setrlimit(RLIMIT_CORE, &p->core) < 0 ||
        setrlimit(RLIMIT_NOFILE, &p->nofile) < 0 || setrlimit(RLIMIT_CPU, &p->cpu) < 0)
        child_fail(p->errpipe, errno);
    /* setuid binaries and file capabilities are inert from here on. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        child_fail(p->errpipe, errno);
    /* The reaper dies: bwrap dies, and --die-with-parent takes the rest.
     * (If it died before the prctl, we are orphaned already: stop.) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != p->reaper)
        child_fail(p->errpipe, errno ? errno : ESRCH);
    for (int i = 0; i < p->n; i++)
        if (dup2(p->src[i], p->dst[i]) < 0)
            child_fail(p->errpipe, errno);
    int ep = p->errpipe;
    if (ep < p->keep_from) {
        /* cannot happen: the error pipe is above the plan */
        child_fail(ep, EBADF);
    }
    /* The inherited-descriptor attack: anything the runner had open
     * (database, sockets, other jobs' files) that lacks O_CLOEXEC. bwrap
     * passes every open descriptor through to the command. */
    if (ep > p->keep_from)
        close_range((unsigned)p->keep_from, (unsigned)ep - 1, 0);
    close_range((unsigned)ep + 1, ~0U, 0);
    if (p->gid >= 0) {
        /* The box. ROOT mode keeps its capabilities through the switch
         * (PR_SET_KEEPCAPS, then effective = permitted) for one thing:
         * creating a user namespace whose owner is the box uid where
         * unprivileged ones are refused. */
        if ((p->own_userns && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) ||
            setgroups((size_t)p->ngroups, p->groups) < 0 ||
            setresgid((gid_t)p->gid, (gid_t)p->gid, (gid_t)p->gid) < 0 ||
            setresuid((uid_t)p->uid, (uid_t)p->uid, (uid_t)p->uid) < 0)
            child_fail(ep, errno);
    }
    if (p->own_userns) {
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0)
            child_fail(ep, errno);
        d[0].effective = d[0].permitted;
        d[1].effective = d[1].permitted;
        /* The uid change made us non-dumpable, which makes /proc/self
         * root's: writing our own maps needs it to be ours again. */
        if (syscall(SYS_capset, &h, d) < 0 || unshare(CLONE_NEWUSER) < 0 ||
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
            child_fail(ep, errno);
        /* Inside it: uid/gid 0 is the box, nothing else is mapped (host
         * root's files are "nobody" here), no supplementary group can be
         * set again, and no user namespace can be nested. Then bwrap runs
         * as this namespace's root and drops every capability before the
         * command (--cap-drop ALL). */
        static const char *const files[] = {"/proc/self/setgroups", "/proc/self/uid_map",
                                            "/proc/self/gid_map", "/proc/sys/user/max_user_namespaces"};
        const char *data[] = {"deny", p->uid_map, p->gid_map, "0"};
        for (int i = 0; i < 4; i++) {
            int fd = open(files[i], O_WRONLY | O_CLOEXEC);
            size_t l = strlen(data[i]);
            if (fd < 0 || write(fd, data[i], l) != (ssize_t)l)
                child_fail(ep, errno ? errno : EIO);
            close(fd);
        }
        /* Empty the bounding set now: bwrap only does it when it makes a
         * user namespace itself, and every exec of uid 0 would otherwise
         * be given the whole set back (no_new_privs stops that too; this
         * is the second wall). bwrap still gets what it needs for its
         * setup through the inheritable set, and --cap-drop ALL clears
         * that before the command. */
        if (syscall(SYS_capget, &h, d) < 0)
            child_fail(ep, errno);
        d[0].inheritable = d[0].permitted;
        d[1].inheritable = d[1].permitted;
        if (syscall(SYS_capset, &h, d) < 0)
            child_fail(ep, errno);
        for (int cap = 0; cap < 64; cap++)
            if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                child_fail(ep, errno);
    }
    /* A change of credentials clears the parent-death signal: again. */
    if (p->gid >= 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != p->reaper))
        child_fail(ep, errno ? errno : ESRCH);
    execve(p->bwrap, p->argv, p->envp);
    child_fail(ep, errno);
}

/* The child of the runner: a reaper outside the cgroup. bwrap's outer
 * process exits as soon as it knows the command's status, leaving its
 * init (pid 1 of the sandbox) and whatever that init had not reaped to be
 * re-parented. As a child subreaper we inherit them and reap them, so no
 * zombie lands on the host's init; we exit once none is left, with bwrap's
 * status (code, or 128+signal). */
static void child_run(struct child_plan *p)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != p->runner ||
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        child_fail(p->errpipe, errno ? errno : ESRCH);
    p->reaper = getpid();
    pid_t g = fork();
    if (g < 0)
        child_fail(p->errpipe, errno);
    if (g == 0)
        grandchild_run(p);
    /* Hold nothing: the capture pipes must reach EOF when the sandbox ends. */
    close_range(3, ~0U, 0);
    int st, bst = 0;
    for (;;) {
        pid_t w = wait(&st);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (w == g)
            bst = st;
    }
    _exit(WIFEXITED(bst) ? WEXITSTATUS(bst) : 128 + WTERMSIG(bst));
}

/* Kill a running sandbox: the whole tree -- bwrap, its init, every fork and
 * every setsid()'d grandchild are in the group. Returns 0 or -errno. */
static int kill_tree(struct cgroup *cg, pid_t pid)
{
    if (cg->version == CGROUP_NONE)
        kill(pid, SIGKILL); /* the PDEATHSIG chain takes the rest */
    int k = cgroup_kill(cg, 5000);
    return k < 0 ? k : 0;
}

/* ---- output capture ---------------------------------------------------- */

struct capture {
    int fd;
    char *buf;
    size_t kept, cap;
    uint64_t total;
};

/* Drain what is readable. Returns 1 at EOF, 0 otherwise. Output past the
 * cap is read and counted but not kept; the supervisor kills the run once
 * both streams together pass cfg->output_limit (a flood must not hold a
 * runner until its time limit: 93 s were measured before that rule). */
static int capture_read(struct capture *c)
{
    char scratch[65536];
    /* At most 1 MiB per call: a writer as fast as we read must not keep
     * the supervisor from looking at its clocks. */
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(c->fd, scratch, sizeof scratch);
        if (n < 0)
            return errno == EINTR ? 0 : errno == EAGAIN ? 0 : 1;
        if (n == 0)
            return 1;
        size_t room = c->cap - c->kept, k = (size_t)n < room ? (size_t)n : room;
        memcpy(c->buf + c->kept, scratch, k);
        c->kept += k;
        c->total += (uint64_t)n;
    }
    return 0;
}

/* ---- the run ----------------------------------------------------------- */

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static const char *bwrap_path(const struct sandbox_config *cfg)
{
    if (cfg->bwrap && *cfg->bwrap)
        return cfg->bwrap;
    const char *e = getenv("CUGRADE_BWRAP");
    return e && *e ? e : "/usr/bin/bwrap";
}

/* Parse bwrap's JSON status lines for "exit-code" (the command's status).
 * Only bwrap writes to this pipe; the command never holds it. */
static void status_parse(const char *s, int *exit_code)
{
    const char *e = strstr(s, "\"exit-code\"");
    if (e && (e = strchr(e, ':')))
        *exit_code = atoi(e + 1);
}

static void verdict_message(struct sandbox_verdict *v, const struct sandbox_config *cfg)
{
    char *m = v->message;
    size_t n = sizeof v->message;
    if (v->timed_out && v->cpu_limit)
        snprintf(m, n, "CPU time limit exceeded (%.1f s of CPU): the program was killed", cfg->cpu_seconds);
    else if (v->timed_out)
        snprintf(m, n, "time limit exceeded (%.1f s wall clock): the program was killed", cfg->wall_seconds);
    else if (v->oom_killed)
        snprintf(m, n, "memory limit exceeded (%llu MiB): the program was killed",
                 (unsigned long long)(cfg->memory_bytes >> 20));
    else if (v->output_limit)
        snprintf(m, n, "output limit exceeded (more than %llu KiB of stdout and stderr): the program was killed",
                 (unsigned long long)(cfg->output_limit >> 10));
    else if (v->file_limit)
        snprintf(m, n, "file size limit exceeded (%llu MiB per file): the program was killed",
                 (unsigned long long)(cfg->file_bytes >> 20));
    else if (v->signal)
        snprintf(m, n, "killed by signal %d (%s)", v->signal, strsignal(v->signal));
    else if (v->exited && v->exit_code != 0)
        snprintf(m, n, "exited with status %d", v->exit_code);
    else
        m[0] = 0;
    if (v->output_truncated) {
        size_t l = strlen(m);
        snprintf(m + l, n - l, "%soutput truncated to %zu bytes per stream (%llu + %llu bytes produced)",
                 l ? "; " : "", cfg->output_cap, (unsigned long long)v->stdout_bytes,
                 (unsigned long long)v->stderr_bytes);
    }
}

/* One attempt in one mode. Returns 0 with a verdict, -EAGAIN when bwrap
 * could not set up (the caller may retry in the other mode), -errno when
 * the sandbox broke. */
static int run_once(const struct sandbox_config *cfg, enum sandbox_mode mode, unsigned box,
                    struct sandbox_verdict *v)
{
    struct cgroup cg;
    struct capture out = {.fd = -1}, err = {.fd = -1};
    int p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_status[2] = {-1, -1}, p_exec[2] = {-1, -1};
    int p_ready[2] = {-1, -1};
    int seccomp_fd = -1, args_fd = -1, null_fd = -1, pidfd = -1, hi[10], nhi = 0;
    int rc, cg_ok = 0;
    pid_t pid = -1;
    char **bargv = NULL;
    memset(v, 0, sizeof *v);
    for (int i = 0; i < 10; i++)
        hi[i] = -1;

    const char *bwrap = bwrap_path(cfg);
    if (access(bwrap, X_OK) < 0) {
        rc = -errno;
        fprintf(stderr, "sandbox: bwrap not usable at %s: %s\n", bwrap, strerror(errno));
        goto fail_early;
    }
    /* The work directory belongs to the uid that writes it (the uid the
     * command has on the host in this mode); only the top directory, and
     * never through a link. */
    uid_t owner = mode == MODE_SELF ? getuid() : (uid_t)box;
    gid_t group = mode == MODE_SELF ? getgid() : (gid_t)box;
    if (fchownat(AT_FDCWD, cfg->workdir, owner, group, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = -errno;
        goto fail_early;
    }
    /* The size cap of /work: our tmpfs, resized to this run's cap. */
    if (cfg->workdir_bytes && (rc = sandbox_workdir_resize(cfg->workdir, cfg->workdir_bytes)) < 0) {
        /* A plain directory has no cap at all: a disk-fill program would
         * fill the host's disk. Refuse rather than run uncapped. */
        fprintf(stderr, "sandbox: work directory %s cannot be capped (%s); make it with sandbox_workdir_create\n",
                cfg->workdir, strerror(-rc));
        goto fail_early;
    }
    out.cap = err.cap = cfg->output_cap;
    out.buf = malloc(cfg->output_cap + 1);
    err.buf = malloc(cfg->output_cap + 1);
    if (!out.buf || !err.buf) {
        rc = -ENOMEM;
        goto fail_early;
    }
    const char *cgenv = getenv("CUGRADE_SANDBOX_CGROUP");
    if (cgenv && strcmp(cgenv, "off") == 0) {
        /* Diagnostics only (a host whose cgroupfs we may not write): no
         * memory, pids or CPU accounting; the tree is still killed through
         * the PDEATHSIG chain reaper -> bwrap -> init -> pid namespace. */
        memset(&cg, 0, sizeof cg);
        cg.procs_fd[0] = cg.procs_fd[1] = cg.procs_fd[2] = -1;
        static int warned;
        if (!warned++)
            fprintf(stderr, "sandbox: CUGRADE_SANDBOX_CGROUP=off: running WITHOUT cgroup limits\n");
    } else if ((rc = cgroup_create(&cg, cfg->memory_bytes, cfg->pids)) < 0) {
        fprintf(stderr, "sandbox: cannot create a cgroup: %s\n", strerror(-rc));
        goto fail_early;
    }
    cg_ok = 1;
    if (pipe2(p_out, O_CLOEXEC) < 0 || pipe2(p_err, O_CLOEXEC) < 0 ||
        pipe2(p_status, O_CLOEXEC) < 0 || pipe2(p_exec, O_CLOEXEC) < 0 ||
        pipe2(p_ready, O_CLOEXEC) < 0) {
        rc = -errno;
        goto fail;
    }
    if (seccomp_off()) {
        /* Diagnostics only (tests/bench/sandbox_diag.sh): bwrap gets an
         * empty filter slot, /dev/null, which it is never told about. */
        if ((seccomp_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
            rc = -errno;
            goto fail;
        }
    } else if ((seccomp_fd = seccomp_filter_export()) < 0) {
        rc = seccomp_fd;
        goto fail;
    }
    if ((null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        goto fail;
    }

    /* Descriptor layout inside: 0 /dev/null, 1 and 2 the capture pipes,
     * 3 the result channel (only when given), 4 the control socket (only
     * when given, and only with a channel), then bwrap's own args,
     * seccomp and status descriptors, which bwrap closes before exec'ing
     * the command, and the ready pipe, which the launcher closes. Sources
     * are first copied above 10 so the dup2s cannot clobber each other. */
    struct child_plan plan = {.cg = &cg};
    int base = cfg->result_fd >= 0 ? (cfg->control_fd >= 0 ? 5 : 4) : 3;
    int src[9] = {null_fd, p_out[1], p_err[1], cfg->result_fd, -1, seccomp_fd, p_status[1], p_ready[1],
                  cfg->result_fd >= 0 ? cfg->control_fd : -1};
    int dst[9] = {0, 1, 2, 3, base, base + 1, base + 2, base + 3, 4};
    char fdnum[16];
    if ((args_fd = args_build(cfg, mode, base + 1, base + 2)) < 0) {
        rc = args_fd;
        goto fail;
    }
    src[4] = args_fd;
    for (int i = 0; i < 9; i++) {
        if (src[i] < 0)
            continue;
        if ((hi[nhi] = fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0) {
            rc = -errno;
            goto fail;
        }
        plan.src[plan.n] = hi[nhi++];
        plan.dst[plan.n++] = dst[i];
    }
    plan.keep_from = base + 4;
    if ((plan.errpipe = fcntl(p_exec[1], F_DUPFD_CLOEXEC, 10)) < 0) {
        rc = -errno;
        goto fail;
    }
    hi[nhi++] = plan.errpipe;
    plan.fsize.rlim_cur = plan.fsize.rlim_max = cfg->file_bytes ? cfg->file_bytes : RLIM_INFINITY;
    plan.core.rlim_cur = plan.core.rlim_max = 0;
    plan.nofile.rlim_cur = plan.nofile.rlim_max = cfg->nofile ? cfg->nofile : 1024;
    rlim_t cpu = cfg->cpu_seconds > 0 ? (rlim_t)ceil(cfg->cpu_seconds) + 1 : RLIM_INFINITY;
    plan.cpu.rlim_cur = cpu;
    plan.cpu.rlim_max = cpu == RLIM_INFINITY ? cpu : cpu + 1;
    plan.uid = mode == MODE_SELF ? -1 : (int)box;
    plan.gid = mode == MODE_SELF ? -1 : (int)box;
    plan.own_userns = mode == MODE_ROOT;
    snprintf(plan.uid_map, sizeof plan.uid_map, "0 %u 1\n", box);
    snprintf(plan.gid_map, sizeof plan.gid_map, "0 %u 1\n", box);
    /* A GPU node that is not open to others but to its group (root:video
     * 0660): the box joins that group, nothing more. One open to neither
     * (root's alone) stays closed to the program: said on stderr. */
    if (cfg->allow_gpu && mode != MODE_SELF)
        for (const char *const *d = cfg->devices; d && *d; d++) {
            struct stat st;
            if (stat(*d, &st) < 0 || dev_is_open_to_all(*d))
                continue;
            mode_t need = S_ISDIR(st.st_mode) ? 050 : 060;
            if (st.st_gid != 0 && (st.st_mode & need) == need && plan.ngroups < 8)
                plan.groups[plan.ngroups++] = st.st_gid;
            else
                fprintf(stderr, "sandbox: %s is open to root alone: the program cannot use it\n", *d);
        }
    v->host_uid = owner;
    plan.bwrap = bwrap;
    snprintf(fdnum, sizeof fdnum, "%d", base);
    size_t nargv = 0;
    while (cfg->argv[nargv])
        nargv++;
    bargv = calloc(nargv + 9, sizeof *bargv);
    if (!bargv) {
        rc = -ENOMEM;
        goto fail;
    }
    /* The launcher: bwrap says nothing once its setup is over and the
     * command is about to run ("child-pid" comes before the mounts), so a
     * shell inside says it, on the ready pipe, closes that pipe and becomes
     * the command. No byte on it: bwrap failed, which is our failure (a
     * system error), never the student's. */
    char launcher[96];
    snprintf(launcher, sizeof launcher, "printf . >&%d; exec %d>&-; exec \"$@\"", base + 3, base + 3);
    size_t k0 = 0;
    bargv[k0++] = "bwrap";
    bargv[k0++] = "--args";
    bargv[k0++] = fdnum;
    bargv[k0++] = "--";
    bargv[k0++] = "/bin/sh";
    bargv[k0++] = "-c";
    bargv[k0++] = launcher;
    bargv[k0++] = "sh";
    for (size_t k = 0; k < nargv; k++)
        bargv[k0 + k] = (char *)cfg->argv[k];
    /* bwrap's own environment: nothing from the runner (its tokens would
     * show in /proc/1/environ inside), only where its libraries are when
     * it was carried to a host without it (dist/env.sh). */
    char ldpath[PATH_MAX + 32] = "";
    const char *ld = getenv("LD_LIBRARY_PATH");
    char *benv[2] = {NULL, NULL};
    if (ld && *ld && snprintf(ldpath, sizeof ldpath, "LD_LIBRARY_PATH=%s", ld) < (int)sizeof ldpath)
        benv[0] = ldpath;
    plan.argv = bargv;
    plan.envp = benv;

    plan.runner = getpid();
    double t0 = now_s();
    pid = fork();
    if (pid < 0) {
        rc = -errno;
        goto fail;
    }
    if (pid == 0)
        child_run(&plan);

    for (int i = 0; i < nhi; i++) {
        close(hi[i]);
        hi[i] = -1;
    }
    close(p_out[1]);
    close(p_err[1]);
    close(p_status[1]);
    close(p_exec[1]);
    close(p_ready[1]);
    p_out[1] = p_err[1] = p_status[1] = p_exec[1] = p_ready[1] = -1;
    int child_err = 0;
    if (read(p_exec[0], &child_err, sizeof child_err) == (ssize_t)sizeof child_err) {
        /* The child could not join the cgroup, set limits or exec bwrap. */
        waitpid(pid, NULL, 0);
        pid = -1;
        fprintf(stderr, "sandbox: could not start bwrap: %s\n", strerror(child_err));
        rc = mode == MODE_BOX ? -EAGAIN : -child_err;
        goto fail;
    }
    if ((pidfd = pidfd_open_(pid)) < 0) {
        rc = -errno;
        goto fail;
    }
    out.fd = p_out[0];
    err.fd = p_err[0];
    fcntl(out.fd, F_SETFL, O_NONBLOCK);
    fcntl(err.fd, F_SETFL, O_NONBLOCK);
    fcntl(p_status[0], F_SETFL, O_NONBLOCK);
    fcntl(p_ready[0], F_SETFL, O_NONBLOCK);

    char status[4096];
    size_t status_len = 0;
    int ready = 0, bwrap_exit = -1, out_eof = 0, err_eof = 0, status_eof = 0, done = 0;
    int wstatus = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (!done) {
        struct pollfd pfd[6] = {
            {pidfd, POLLIN, 0},
            {out_eof ? -1 : out.fd, POLLIN, 0},
            {err_eof ? -1 : err.fd, POLLIN, 0},
            {status_eof ? -1 : p_status[0], POLLIN, 0},
            {ready ? -1 : p_ready[0], POLLIN, 0},
            {v->cancelled || v->timed_out || v->output_limit ? -1 : cfg->cancel_fd, POLLIN, 0},
        };
        double now = now_s();
        int wait_ms = SANDBOX_TICK_MS;
        double paused = sandbox_paused(cfg);
        if (!v->timed_out && cfg->wall_seconds > 0) {
            double left = t0 + paused + cfg->wall_seconds - now;
            if (left * 1000 < wait_ms)
                wait_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
        }
        int n = poll(pfd, 6, wait_ms);
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            goto fail;
        }
        if (pfd[1].revents)
            out_eof = capture_read(&out);
        if (pfd[2].revents)
            err_eof = capture_read(&err);
        if (cfg->output_limit && !v->output_limit && !v->timed_out && !v->cancelled && !done &&
            out.total + err.total > cfg->output_limit) {
            /* A flood: killed now, not at the time limit (the pipes stop
             * it within a read or two: capture_read takes at most 1 MiB). */
            v->output_limit = 1;
            if ((rc = kill_tree(&cg, pid)) < 0)
                goto fail;
        }
        if (pfd[3].revents) {
            ssize_t r = read(p_status[0], status + status_len, sizeof status - 1 - status_len);
            if (r <= 0) {
                status_eof = 1;
            } else {
                status_len += (size_t)r;
                status[status_len] = 0;
                status_parse(status, &bwrap_exit);
                if (status_len > sizeof status / 2) {
                    /* keep the tail: only the last document matters now */
                    memmove(status, status + status_len / 2, status_len - status_len / 2 + 1);
                    status_len -= status_len / 2;
                }
            }
        }
        if (pfd[4].revents) {
            char c;
            if (read(p_ready[0], &c, 1) == 1) {
                ready = 1;
                v->setup_seconds = now_s() - t0;
            } else {
                ready = -1; /* EOF: all holders closed it without a word */
            }
        }
        if (pfd[0].revents) {
            if (wait4(pid, &wstatus, 0, &ru) == pid) {
                pid = -1;
                done = 1;
            }
        }
        if (pfd[5].revents && !done) {
            /* The runner no longer wants this run (a pre-started sanitizer
             * whose submission did not compile): the whole tree, now. */
            v->cancelled = 1;
            if ((rc = kill_tree(&cg, pid)) < 0)
                goto fail;
        }
        now = now_s();
        if (!v->timed_out && !v->cancelled && !v->output_limit && !done) {
            int over_wall = cfg->wall_seconds > 0 && now >= t0 + sandbox_paused(cfg) + cfg->wall_seconds;
            double cpu_used = cgroup_cpu_seconds(&cg);
            int over_cpu = cfg->cpu_seconds > 0 && cpu_used >= cfg->cpu_seconds;
            if (over_wall || over_cpu) {
                v->timed_out = 1;
                v->cpu_limit = over_cpu;
                if ((rc = kill_tree(&cg, pid)) < 0)
                    goto fail;
            }
            cgroup_sample(&cg);
        }
    }
    v->wall_seconds = now_s() - t0;
    v->paused_seconds = sandbox_paused(cfg);
    if (ready != 1 && v->cancelled) {
        rc = -ECANCELED; /* cancelled before the command started: nothing ran */
        goto fail;
    }
    if (ready != 1) {
        /* The launcher never ran: bwrap's own setup failed (namespaces
         * refused, a bind source missing, a mount denied...) or hung past
         * the wall limit. Not the student's doing. */
        cgroup_kill(&cg, 5000);
        capture_read(&err);
        err.buf[err.kept] = 0;
        fprintf(stderr, "sandbox: bwrap (%s mode) failed to set up%s: %s\n", mode_name(mode),
                v->timed_out ? " in time" : "", err.buf);
        rc = mode == MODE_BOX ? -EAGAIN : -EIO;
        goto fail;
    }
    /* Whatever bwrap's init left (it kills its namespace when it exits,
     * but asynchronously): empty the group before reading its counters. */
    if ((rc = cgroup_kill(&cg, 5000)) < 0)
        goto fail;
    /* All writers are gone: drain the pipes to EOF. */
    fcntl(out.fd, F_SETFL, 0);
    fcntl(err.fd, F_SETFL, 0);
    while (!out_eof)
        out_eof = capture_read(&out);
    while (!err_eof)
        err_eof = capture_read(&err);

    double cg_cpu = cgroup_cpu_seconds(&cg);
    v->cpu_seconds = cg_cpu >= 0 ? cg_cpu
                                 : (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                                       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    v->peak_memory_bytes = cgroup_peak_memory(&cg);
    v->oom_killed = cgroup_oom_kills(&cg) > 0;

    /* How it ended. bwrap reports the command's status as an exit code:
     * the code itself, or 128+signal when a signal killed it. */
    int code = bwrap_exit >= 0 ? bwrap_exit : WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    if (bwrap_exit < 0 && WIFSIGNALED(wstatus)) {
        v->signal = WTERMSIG(wstatus); /* bwrap itself was killed (timeout, OOM group kill) */
    } else if (code > 128 && code < 128 + 65) {
        v->signal = code - 128;
    } else {
        v->exited = 1;
        v->exit_code = code;
    }
    if (v->signal == SIGXCPU) {
        v->timed_out = v->cpu_limit = 1; /* the RLIMIT_CPU backstop fired */
        v->exited = 0;
    }
    if (v->signal == SIGXFSZ)
        v->file_limit = 1;
    if (v->oom_killed || v->timed_out || v->cancelled || v->output_limit)
        v->exited = 0;
    v->stdout_bytes = out.total;
    v->stderr_bytes = err.total;
    v->output_truncated = out.total > out.kept || err.total > err.kept;
    out.buf[out.kept] = 0;
    err.buf[err.kept] = 0;
    v->out = out.buf;
    v->err = err.buf;
    out.buf = err.buf = NULL;
    verdict_message(v, cfg);
    rc = 0;

fail:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (cg_ok) {
        int d = cgroup_destroy(&cg);
        if (d < 0 && rc == 0) {
            fprintf(stderr, "sandbox: cannot remove cgroup %s: %s\n", cg.name, strerror(-d));
            rc = d;
        }
    }
    free(bargv);
    for (int i = 0; i < 10; i++)
        if (hi[i] >= 0)
            close(hi[i]);
    int fds[] = {p_out[0], p_out[1], p_err[0], p_err[1], p_status[0], p_status[1],
                 p_exec[0], p_exec[1], p_ready[0], p_ready[1], seccomp_fd, args_fd, null_fd, pidfd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
fail_early:
    free(out.buf);
    free(err.buf);
    if (rc < 0) {
        sandbox_verdict_free(v);
        memset(v, 0, sizeof *v);
    }
    return rc;
}

static enum sandbox_mode mode_initial(void)
{
    if (getuid() != 0)
        return MODE_SELF; /* not root: bwrap runs as whoever we are */
    const char *e = getenv("CUGRADE_SANDBOX_USER");
    if (e && strcmp(e, "root") == 0)
        return MODE_ROOT;
    if (e && (strcmp(e, "nobody") == 0 || strcmp(e, "box") == 0))
        return MODE_BOX;
    return sandbox_mode_cached == MODE_ROOT ? MODE_ROOT : MODE_BOX;
}

int sandbox_run(const struct sandbox_config *cfg, struct sandbox_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!cfg || !cfg->argv || !cfg->argv[0] || !cfg->workdir || cfg->workdir[0] != '/')
        return -EINVAL;
    if (cfg->control_fd >= 0 && cfg->result_fd < 0)
        return -EINVAL; /* fd 4 inside needs fd 3 below it */
    enum sandbox_mode mode = mode_initial();
    /* The box: the work directory's, else one for this run only. */
    unsigned box = 0;
    int box_fd = -1;
    if (mode != MODE_SELF && !(box = box_of_workdir(cfg->workdir)) && (box_fd = box_take(&box)) < 0) {
        fprintf(stderr, "sandbox: no free box (uid) for this run: %s\n", strerror(-box_fd));
        return box_fd;
    }
    int rc = run_once(cfg, mode, box, v);
    if (rc == -EAGAIN && mode == MODE_BOX && !getenv("CUGRADE_SANDBOX_USER")) {
        fprintf(stderr, "sandbox: retrying in root mode (kept for this process if it works)\n");
        rc = run_once(cfg, MODE_ROOT, box, v);
        if (rc == 0)
            sandbox_mode_cached = MODE_ROOT;
    }
    if (box_fd >= 0)
        close(box_fd); /* the run is over and its cgroup empty: the box is free */
    if (rc == -EAGAIN)
        rc = -EIO;
    return rc;
}

/* ---- files in and out of the work directory ---------------------------- */

int sandbox_take_file(const char *workdir, const char *name, size_t cap, char **buf, size_t *len)
{
    int dfd = -1, fd = -1, rc;
    char *b = NULL;
    *buf = NULL;
    *len = 0;
    dfd = open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    /* The planted-link attack: the program replaces its output file by a
     * link to /etc/shadow (or "../../etc/passwd" in the name) and lets the
     * runner, as root, read it back to the student. No link is followed
     * anywhere on the path, nothing resolves outside workdir. O_NONBLOCK:
     * a FIFO planted as the output must not hang the runner. */
    struct open_how how = {
        .flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) {
        if (strchr(name, '/')) {
            rc = -EINVAL;
            goto fail;
        }
        fd = openat(dfd, name, (int)how.flags);
    }
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto fail;
    }
    if ((uint64_t)st.st_size > cap) {
        rc = -EFBIG;
        goto fail;
    }
    b = malloc(cap + 1);
    if (!b) {
        rc = -ENOMEM;
        goto fail;
    }
    size_t n = 0;
    for (;;) {
        /* read one byte past the cap: the file may have grown since fstat */
        ssize_t r = read(fd, b + n, cap + 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > cap) {
            rc = -EFBIG;
            goto fail;
        }
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    close(fd);
    close(dfd);
    return 0;
fail:
    free(b);
    if (fd >= 0)
        close(fd);
    close(dfd);
    return rc;
}

int sandbox_workdir_create(const char *parent, char **path)
{
    char *p = NULL;
    int rc;
    *path = NULL;
    if (asprintf(&p, "%s/cugrade-work-XXXXXX", parent) < 0)
        return -ENOMEM;
    if (!mkdtemp(p)) {
        rc = -errno;
        goto fail;
    }
    /* A tmpfs of its own: the size cap of /work (sandbox_run sets size= to
     * the run's workdir_bytes), and a separate filesystem, so the program
     * cannot hard-link a host file into it (EXDEV). Where we may not mount
     * (not root), a plain directory: then only RLIMIT_FSIZE bounds it. */
    char opts[128];
    snprintf(opts, sizeof opts, "size=%llu,mode=0700,nr_inodes=65536", 64ULL << 20);
    if (mount("cugrade-work", p, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 && errno != EPERM) {
        rc = -errno;
        rmdir(p);
        goto fail;
    }
    if (getuid() == 0) {
        /* Its box, held until sandbox_workdir_remove. */
        unsigned uid = 0;
        rc = 0;
        int fd = box_take(&uid);
        if (fd < 0) {
            rc = fd;
            sandbox_workdir_remove(p);
            goto fail;
        }
        struct stat st;
        if (chown(p, uid, uid) < 0 || stat(p, &st) < 0 || (rc = box_hold(&st, uid, fd)) < 0) {
            rc = rc < 0 ? rc : -errno;
            close(fd);
            sandbox_workdir_remove(p);
            goto fail;
        }
    }
    *path = p;
    return 0;
fail:
    free(p);
    return rc;
}

/* Resize the workdir's tmpfs to the run's cap. Data written so far stays.
 * Returns 0, or -ENOTSUP when workdir is not our tmpfs. */
int sandbox_workdir_resize(const char *workdir, uint64_t bytes)
{
    struct statfs sf;
    if (statfs(workdir, &sf) < 0)
        return -errno;
    if (sf.f_type != TMPFS_MAGIC)
        return -ENOTSUP;
    char opts[64];
    snprintf(opts, sizeof opts, "size=%llu", (unsigned long long)bytes);
    if (mount(NULL, workdir, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
        return -errno;
    return 0;
}

/* Remove everything below dirfd without following links. */
static int remove_tree_at(int dirfd, int depth)
{
    if (depth > 256)
        return -ELOOP;
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return -errno;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd, e->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            if (rc == 0)
                rc = -errno;
            continue;
        }
        int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            if (rc == 0)
                rc = -errno;
            continue;
        }
        int r = remove_tree_at(sub, depth + 1);
        if (r < 0 && rc == 0)
            rc = r;
        if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0 && rc == 0)
            rc = -errno;
    }
    closedir(d);
    return rc;
}

int sandbox_workdir_remove(const char *path)
{
    /* Its box, known by the mount's identity (before the unmount). */
    struct stat bst;
    int boxed = lstat(path, &bst) == 0 && S_ISDIR(bst.st_mode);
    /* Unmount our tmpfs (this drops its content at once); UMOUNT_NOFOLLOW:
     * the path itself could have been swapped for a link. */
    while (umount2(path, UMOUNT_NOFOLLOW | MNT_DETACH) == 0)
        ;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
    if (fd < 0) {
        rc = errno == ENOENT ? 0 : -errno;
    } else {
        rc = remove_tree_at(fd, 0);
        if (rmdir(path) < 0 && rc == 0)
            rc = -errno;
    }
    if (boxed)
        box_release(bst.st_dev, bst.st_ino);
    return rc;
}

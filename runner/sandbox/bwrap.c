/*
 * bwrap.c - how the sandbox starts bubblewrap: its argument list (written
 * to a memfd for --args) and the processes between fork and exec (the
 * reaper and the grandchild that becomes bwrap). See bwrap.h; the run that
 * uses them is in sandbox.c.
 */
#include "runner/sandbox/bwrap.h"
#include "runner/config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The uid/gid the command has inside in box mode (root mode: 0). */
#define SANDBOX_UID 65534
#define SANDBOX_GID 65534

const char *bwrap_mode_name(enum bwrap_mode m)
{
    return m == BWRAP_MODE_BOX ? "box" : m == BWRAP_MODE_ROOT ? "root" : "self";
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

/* The list in a memfd (O_CLOEXEC, offset 0). Returns it or -errno. */
static int argbuf_memfd(const struct argbuf *a)
{
    int fd, rc;
    if (a->oom)
        return -ENOMEM;
    fd = memfd_create("cugrade-bwrap-args", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    for (size_t off = 0; off < a->len;) {
        ssize_t w = write(fd, a->p + off, a->len - off);
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
    return fd;
fail:
    close(fd);
    return rc;
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

int bwrap_seccomp_off(const struct sandbox_config *cfg)
{
    if (!cfg->diag_no_seccomp)
        return 0;
    static int warned;
    if (!warned++)
        fprintf(stderr, "sandbox: --no-seccomp: running WITHOUT the seccomp filter\n");
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

int bwrap_args_build(const struct sandbox_config *cfg, enum bwrap_mode mode, int seccomp_fd,
                     int status_fd)
{
    struct argbuf a = {0};
    char num[32], num2[32];
    int rc;

    if (mode != BWRAP_MODE_ROOT)
        arg_add(&a, "--unshare-user"); /* ROOT: we made it, see grandchild_run */
    arg_add(&a, "--unshare-pid");
    arg_add(&a, "--unshare-net");       /* only a down loopback inside */
    arg_add(&a, "--unshare-ipc");       /* no SysV shm shared with the harness of another job */
    arg_add(&a, "--unshare-uts");
    arg_add(&a, "--unshare-cgroup-try"); /* /proc/self/cgroup shows "/" */
    if (mode != BWRAP_MODE_ROOT) {
        /* No nested user namespace: kernel attack surface. (ROOT: the
         * grandchild set max_user_namespaces to 0 in ours.) */
        arg_add(&a, "--disable-userns");
        snprintf(num, sizeof num, "%d", SANDBOX_UID);
        snprintf(num2, sizeof num2, "%d", SANDBOX_GID);
        arg_add2(&a, "--uid", num);
        arg_add2(&a, "--gid", num2);
    }
    arg_add2(&a, "--hostname", "cugrade");
    if (mode != BWRAP_MODE_BOX)
        arg_add2(&a, "--cap-drop", "ALL"); /* bounding set too, not only effective */
    arg_add(&a, "--die-with-parent");   /* runner dies: the sandbox dies */
    /* No --new-session: the reaper has already made the run a session of
     * its own, without a controlling terminal (bwrap_child_run), which cuts
     * TIOCSTI as that flag would, and a second setsid() in bwrap would put
     * the command in a new autogroup at nice 0 (bwrap_autogroup_nice). */
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
    snprintf(num, sizeof num, "%llu",
             (unsigned long long)(cfg->memory_bytes ? cfg->memory_bytes : SANDBOX_MEMORY_BYTES));
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
    if (!bwrap_seccomp_off(cfg))
        arg_add2(&a, "--seccomp", num);
    snprintf(num, sizeof num, "%d", status_fd);
    arg_add2(&a, "--json-status-fd", num);
    /* The command follows in bwrap's real argv: bwrap does not take it
     * from an --args file. */
    rc = argbuf_memfd(&a);
    free(a.p);
    return rc;
}

/* ---- the child between fork and exec: async-signal-safe only ---------- */

void bwrap_plan_creds(struct bwrap_plan *p, const struct sandbox_config *cfg,
                      enum bwrap_mode mode, unsigned box)
{
    p->fsize.rlim_cur = p->fsize.rlim_max = cfg->file_bytes ? cfg->file_bytes : RLIM_INFINITY;
    p->core.rlim_cur = p->core.rlim_max = 0;
    p->nofile.rlim_cur = p->nofile.rlim_max = cfg->nofile ? cfg->nofile : 1024;
    rlim_t cpu = cfg->cpu_seconds > 0 ? (rlim_t)ceil(cfg->cpu_seconds) + 1 : RLIM_INFINITY;
    p->cpu.rlim_cur = cpu;
    p->cpu.rlim_max = cpu == RLIM_INFINITY ? cpu : cpu + 1;
    assert(cfg->nice >= -20 && cfg->nice <= 19);
    p->nice = cfg->nice;
    p->uid = mode == BWRAP_MODE_SELF ? -1 : (int)box;
    p->gid = mode == BWRAP_MODE_SELF ? -1 : (int)box;
    p->own_userns = mode == BWRAP_MODE_ROOT;
    snprintf(p->uid_map, sizeof p->uid_map, "0 %u 1\n", box);
    snprintf(p->gid_map, sizeof p->gid_map, "0 %u 1\n", box);
    /* A GPU node that is not open to others but to its group (root:video
     * 0660): the box joins that group, nothing more. One open to neither
     * (root's alone) stays closed to the program: said on stderr. */
    if (cfg->allow_gpu && mode != BWRAP_MODE_SELF)
        for (const char *const *d = cfg->devices; d && *d; d++) {
            struct stat st;
            if (stat(*d, &st) < 0 || dev_is_open_to_all(*d))
                continue;
            mode_t need = S_ISDIR(st.st_mode) ? 050 : 060;
            if (st.st_gid != 0 && (st.st_mode & need) == need && p->ngroups < 8)
                p->groups[p->ngroups++] = st.st_gid;
            else
                fprintf(stderr, "sandbox: %s is open to root alone: the program cannot use it\n", *d);
        }
}

static _Noreturn void child_fail(int errpipe, int err)
{
    ssize_t w = write(errpipe, &err, sizeof err);
    (void)w;
    _exit(127);
}

/* ROOT mode, as the box with its capabilities kept: make the user
 * namespace, map uid/gid 0 inside to the box, and empty the bounding set.
 * Returns only on success. */
static void userns_own(const struct bwrap_plan *p, int ep)
{
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

static _Noreturn void grandchild_run(const struct bwrap_plan *p)
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
    if (p->own_userns)
        userns_own(p, ep);
    /* A change of credentials clears the parent-death signal: again. */
    if (p->gid >= 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != p->reaper))
        child_fail(ep, errno ? errno : ESRCH);
    execve(p->bwrap, p->argv, p->envp);
    child_fail(ep, errno);
}

/* The decimal digits of v, written backwards ending at end (not NUL-
 * terminated); returns where they begin. Async-signal-safe. */
static char *digits(char *end, long v)
{
    unsigned long u = (unsigned long)(v < 0 ? -v : v);
    do
        *--end = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--end = '-';
    return end;
}

/* Where the kernel groups CPU time by session (autogroup, on by default
 * in most distributions' kernels: /proc/sys/kernel/sched_autogroup_enabled),
 * a task's nice weighs only against the tasks of its own session; sessions
 * share the CPUs by their autogroup's nice. The run is a session of its
 * own (bwrap_child_run), so its priority must be its autogroup's too, or a
 * compile at nice 10 would weigh as much as any other session. Best effort
 * (no autogroup: ENOENT; a negative nice needs CAP_SYS_NICE). Async-signal-
 * safe: the runner may have threads. */
void bwrap_autogroup_nice(pid_t pid, int nice)
{
    char path[40] = "/proc/self/autogroup", num[24], *e = num + sizeof num - 1;
    *e = 0;
    if (pid > 0) {
        char pnum[24], *pe = pnum + sizeof pnum - 1, *d;
        *pe = 0;
        d = digits(pe, pid);
        memcpy(path, "/proc/", 6);
        memcpy(path + 6, d, (size_t)(pe - d));
        memcpy(path + 6 + (pe - d), "/autogroup", sizeof "/autogroup");
    }
    e = digits(e, nice);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t w = write(fd, e, strlen(e));
    (void)w;
    close(fd);
}

/* The child of the runner: a reaper outside the cgroup. bwrap's outer
 * process exits as soon as it knows the command's status, leaving its
 * init (pid 1 of the sandbox) and whatever that init had not reaped to be
 * re-parented. As a child subreaper we inherit them and reap them, so no
 * zombie lands on the host's init; we exit once none is left, with bwrap's
 * status (code, or 128+signal). */
_Noreturn void bwrap_child_run(struct bwrap_plan *p)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != p->runner ||
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        child_fail(p->errpipe, errno ? errno : ESRCH);
    /* A session of the run's own, without a controlling terminal: nothing
     * in the sandbox can reach the runner's terminal (TIOCSTI), and no
     * job-control signal meant for the runner reaches the run. */
    if (setsid() < 0)
        child_fail(p->errpipe, errno);
    /* Before the fork: the reaper, bwrap and every process of the run
     * inherit the priority (and none of them may raise it again). */
    if (p->nice != 0) {
        /* Best effort: a runner without CAP_SYS_NICE cannot raise a
         * priority (a negative nice), and one started niced keeps its own
         * for a positive one; either way the run goes on as it is. */
        errno = 0;
        int cur = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && (p->nice < 0 || cur < p->nice)) {
            (void)setpriority(PRIO_PROCESS, 0, p->nice);
            bwrap_autogroup_nice(0, p->nice);
        }
    }
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

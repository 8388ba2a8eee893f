/*
 * cgroup.c - per-run control groups, v1 and v2 (see cgroup.h).
 *
 * The group is the sandbox's real boundary for resources: every process the
 * student starts (forks, setsid'd daemons, a fork bomb) stays in it, because
 * the sandbox has no writable cgroupfs and no CAP_SYS_ADMIN to leave it.
 * That makes "kill everything in the group until it is empty" a complete
 * whole-tree kill, and memory/pids limits hard ones.
 */
#include "runner/sandbox/cgroup.h"
#include "runner/config.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define CG_MNT "/sys/fs/cgroup"
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
/* Name of the leaf we move pre-existing processes into on v2 when our own
 * group holds processes (the "no internal processes" rule forbids enabling
 * controllers for children of a group that has members). */
#define CG_HOST_LEAF "cugrade-host"

static atomic_uint cg_seq;

static int path_exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* Read a small file into buf (NUL-terminated). Returns length or -errno. */
static ssize_t file_read(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return -ENAMETOOLONG;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = 0;
    close(fd);
    return (ssize_t)n;
}

/* Write a string to dir/name. Returns 0 or -errno. */
static int file_write(const char *dir, const char *name, const char *val)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return -ENAMETOOLONG;
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(val);
    ssize_t w = write(fd, val, len);
    int e = w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
    close(fd);
    return e;
}

static int file_write_u64(const char *dir, const char *name, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return file_write(dir, name, s);
}

/* Value of "key N" in a flat-keyed file (memory.events, cpu.stat...). */
static int keyed_u64(const char *dir, const char *file, const char *key, uint64_t *out)
{
    char buf[4096];
    ssize_t n = file_read(dir, file, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    size_t kl = strlen(key);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
            *out = strtoull(l + kl + 1, NULL, 10);
            return 0;
        }
    }
    return -ENOENT;
}

static int single_u64(const char *dir, const char *file, uint64_t *out)
{
    char buf[64];
    ssize_t n = file_read(dir, file, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    *out = strtoull(buf, NULL, 10);
    return 0;
}

/* Our own group's path for a controller ("" for the v2 line), from
 * /proc/self/cgroup. Returns 0 or -ENOENT. */
static int self_path(const char *ctrl, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -errno;
    char line[4096];
    int rc = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = 0;
        const char *ctrls = c1 + 1, *path = c2 + 1;
        int match = 0;
        if (!*ctrl) {
            match = !*ctrls && strcmp(line, "0") == 0; /* "0::/path" */
        } else {
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", ctrls);
            for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
                if (strcmp(t, ctrl) == 0)
                    match = 1;
        }
        if (match) {
            snprintf(out, cap, "%s", strcmp(path, "/") == 0 ? "" : path);
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* The directory below which this process creates run groups for a
 * controller mounted at mnt: $CUGRADE_CGROUP, else our own group (or its
 * parent when we are in the v2 host leaf), else the mount root when our
 * path is not visible (a container without a cgroup namespace). */
static int parent_dir(const char *mnt, const char *ctrl, char *out, size_t cap)
{
    const char *env = runner_cfg()->cgroup;
    char own[PATH_MAX] = "";
    if (env && *env) {
        snprintf(own, sizeof own, "%s%s", env[0] == '/' ? "" : "/", env);
    } else if (self_path(ctrl, own, sizeof own) == 0) {
        size_t l = strlen(own), hl = strlen("/" CG_HOST_LEAF);
        if (l >= hl && strcmp(own + l - hl, "/" CG_HOST_LEAF) == 0)
            own[l - hl] = 0;
    }
    if (snprintf(out, cap, "%s%s", mnt, own) >= (int)cap)
        return -ENAMETOOLONG;
    if (!path_exists(out))
        snprintf(out, cap, "%s", mnt);
    return 0;
}

enum cgroup_version cgroup_detect(void)
{
    static int cached = -1;
    if (cached >= 0)
        return (enum cgroup_version)cached;
    struct statfs sf;
    int v = CGROUP_NONE;
    if (statfs(CG_MNT, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
        v = CGROUP_V2;
    else if (path_exists(CG_MNT "/memory/memory.limit_in_bytes") &&
             path_exists(CG_MNT "/pids/cgroup.procs"))
        v = CGROUP_V1;
    cached = v;
    return (enum cgroup_version)v;
}

static int has_word(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += wl)
        if ((p == list || p[-1] == ' ' || p[-1] == '\n') && (p[wl] == 0 || p[wl] == ' ' || p[wl] == '\n'))
            return 1;
    return 0;
}

/* Move every process of dir into dir/CG_HOST_LEAF. */
static int v2_evacuate(const char *dir)
{
    char leaf[PATH_MAX], buf[65536];
    if (snprintf(leaf, sizeof leaf, "%s/" CG_HOST_LEAF, dir) >= (int)sizeof leaf)
        return -ENAMETOOLONG;
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
        return -errno;
    for (int round = 0; round < 10; round++) {
        ssize_t n = file_read(dir, "cgroup.procs", buf, sizeof buf);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return 0;
        for (char *save, *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
            int e = file_write(leaf, "cgroup.procs", t);
            (void)e; /* ESRCH: exited meanwhile; EINVAL: kernel thread */
        }
    }
    return 0;
}

/* Make sure groups created in dir get the memory and pids controllers. */
static int v2_prepare(const char *dir)
{
    char buf[512];
    ssize_t n = file_read(dir, "cgroup.subtree_control", buf, sizeof buf);
    if (n < 0)
        return (int)n;
    if (has_word(buf, "memory") && has_word(buf, "pids"))
        return 0;
    n = file_read(dir, "cgroup.controllers", buf, sizeof buf);
    if (n < 0)
        return (int)n;
    if (!has_word(buf, "memory") || !has_word(buf, "pids"))
        return -EOPNOTSUPP; /* the parent does not delegate them to us */
    int rc = file_write(dir, "cgroup.subtree_control", "+memory +pids");
    if (rc == -EBUSY) {
        /* Our group has members: the no-internal-process rule. Move them
         * (this runner, its shell...) into a leaf and retry. */
        rc = v2_evacuate(dir);
        if (rc == 0)
            rc = file_write(dir, "cgroup.subtree_control", "+memory +pids");
    }
    return rc;
}

static int open_procs(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/cgroup.procs", dir) >= (int)sizeof p)
        return -ENAMETOOLONG;
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* v2, when our own group is not given memory and pids by its parent (the
 * usual case for a process in someone else's service or session group):
 * the nearest ancestor that does distribute them gets a "cugrade" child of
 * its own, with the controllers on, and runs go below it. No existing
 * group's settings are touched; only a new subtree is created. */
static int v2_fallback_parent(const char *from, char *out, size_t cap)
{
    char dir[PATH_MAX], buf[512];
    snprintf(dir, sizeof dir, "%s", from);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (strcmp(dir, CG_MNT) == 0 || !slash || slash == dir)
            return -EOPNOTSUPP;
        *slash = 0;
        if (file_read(dir, "cgroup.subtree_control", buf, sizeof buf) >= 0 &&
            has_word(buf, "memory") && has_word(buf, "pids"))
            break;
        if (strcmp(dir, CG_MNT) == 0)
            return -EOPNOTSUPP;
    }
    if (snprintf(out, cap, "%s/cugrade", dir) >= (int)cap)
        return -ENAMETOOLONG;
    if (mkdir(out, 0755) < 0 && errno != EEXIST)
        return -errno;
    return v2_prepare(out);
}

/* Read the ids listed in one group's file (cgroup.procs: processes;
 * cgroup.threads, or v1's tasks: threads) into ids[] (cap 0: count only).
 * Returns the count (possibly more than cap, then only cap were stored) or
 * -errno. */
static int list_ids(const char *dir, const char *file, pid_t *ids, int cap)
{
    char buf[1 << 16];
    ssize_t n = file_read(dir, file, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    int cnt = 0;
    for (char *save, *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
        if (cnt < cap)
            ids[cnt] = (pid_t)atoi(t);
        cnt++;
    }
    return cnt;
}

static int list_pids(const char *dir, pid_t *pids, int cap)
{
    return list_ids(dir, "cgroup.procs", pids, cap);
}

/* SIGKILL every member of the group at dir (cgroup_kill's walk without
 * cgroup.kill, and the sweep's of an orphaned group). */
static void kill_members(const char *dir)
{
    pid_t pids[4096];
    int n = list_pids(dir, pids, (int)(sizeof pids / sizeof pids[0]));
    for (int i = 0; i < n && i < (int)(sizeof pids / sizeof pids[0]); i++)
        if (pids[i] > 1)
            kill(pids[i], SIGKILL);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The parent of pid as this namespace sees it, or -1 (gone). */
static pid_t proc_parent(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *r = strrchr(buf, ')');
    int ppid;
    return r && sscanf(r + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

/* pid's command name (/proc/PID/comm, no newline) into out, or -1. */
static int proc_comm(pid_t pid, char *out, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return -1;
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
    return 0;
}

/* A stale group with members is orphaned when nothing of ours supervises
 * them: every member is visible here (pid 0: one in a namespace we cannot
 * see into) and none has a parent outside the group that runs this
 * program (a reaper, the runner's child: a live runner in another pid
 * namespace, whose own pid we could not check, has one). */
static int group_orphaned(const char *dir)
{
    pid_t pids[256];
    int n = list_pids(dir, pids, 256);
    char self[64], comm[64];
    if (n <= 0 || n > 256 || proc_comm(getpid(), self, sizeof self) < 0)
        return 0;
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0)
            return 0;
        pid_t pp = proc_parent(pids[i]);
        int inside = 0;
        for (int k = 0; k < n && !inside; k++)
            inside = pids[k] == pp;
        if (pp > 1 && !inside && proc_comm(pp, comm, sizeof comm) == 0 && strcmp(comm, self) == 0)
            return 0;
    }
    return 1;
}

/* SIGKILL an orphaned group's members; 1 once it is empty (within about a
 * second), else 0. */
static int group_reap(const char *dir)
{
    for (int i = 0; i < 50; i++) {
        int n = list_pids(dir, NULL, 0);
        if (n <= 0)
            return n == 0;
        kill_members(dir);
        sleep_ms(20);
    }
    return 0;
}

/* A runner that crashed (SIGKILL, OOM) never removed its run groups: its
 * sandbox died with it (PDEATHSIG -> bwrap -> --die-with-parent), but the
 * empty directories stay. Remove groups named cugrade-<pid>-<n> below
 * parent whose <pid> is gone and that are over a minute old (a runner in
 * another pid namespace sharing this parent has live groups that are never
 * empty for longer than the instant between mkdir and entering them).
 *
 * Not every sandbox dies with its runner: bwrap 0.8's init waits on an
 * eventfd for its parent's go-ahead before it asks for PDEATHSIG, so a
 * runner killed in that instant leaves it blocked there for good,
 * re-parented to the host's init, in the run's groups (once in CI, a
 * runner killed with SIGKILL by deploy/slurm.t). Such a group's members are
 * killed first when it is orphaned (group_orphaned). */
static long sweep_min_age = CGROUP_SWEEP_AGE;

void cgroup_sweep_age_set(long seconds)
{
    assert(seconds >= 0);
    sweep_min_age = seconds;
}

static void sweep_stale(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    long min_age = sweep_min_age;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        unsigned seq;
        char tail;
        if (sscanf(e->d_name, "cugrade-%d-%u%c", &pid, &seq, &tail) != 2 || pid <= 0 || pid == getpid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue; /* its runner lives (or is not ours to judge) */
        char dir[PATH_MAX], buf[4096];
        struct stat st;
        if (snprintf(dir, sizeof dir, "%s/%s", parent, e->d_name) >= (int)sizeof dir ||
            stat(dir, &st) < 0 || time(NULL) - st.st_mtime < min_age)
            continue;
        uint64_t populated = 1;
        if (keyed_u64(dir, "cgroup.events", "populated", &populated) < 0)
            populated = file_read(dir, "cgroup.procs", buf, sizeof buf) != 0;
        if (populated && group_orphaned(dir))
            populated = !group_reap(dir);
        if (!populated)
            (void)rmdir(dir);
    }
    closedir(d);
}

static int make_group(const char *mnt, const char *ctrl, const char *name, char *out, size_t cap)
{
    char parent[PATH_MAX];
    int rc = parent_dir(mnt, ctrl, parent, sizeof parent);
    if (rc < 0)
        return rc;
    if (cgroup_detect() == CGROUP_V2 && (rc = v2_prepare(parent)) < 0) {
        char alt[PATH_MAX];
        if (rc != -EOPNOTSUPP || runner_cfg()->cgroup[0])
            return rc;
        if ((rc = v2_fallback_parent(parent, alt, sizeof alt)) < 0)
            return rc;
        snprintf(parent, sizeof parent, "%s", alt);
    }
    sweep_stale(parent);
    if (snprintf(out, cap, "%s/%s", parent, name) >= (int)cap)
        return -ENAMETOOLONG;
    if (mkdir(out, 0755) < 0) {
        out[0] = 0;
        return -errno;
    }
    return 0;
}

/* Every directory a run's groups may have, "" where it has none: one list
 * for the walks over them all (populated, kill, destroy). */
#define CG_DIRS(cg) {(cg)->v2, (cg)->mem, (cg)->pids, (cg)->cpuacct, (cg)->unified}
#define CG_NDIRS 5

int cgroup_create(struct cgroup *cg, uint64_t memory_bytes, uint64_t pids)
{
    memset(cg, 0, sizeof *cg);
    for (int i = 0; i < CGROUP_FDS; i++)
        cg->procs_fd[i] = -1;
    cg->version = cgroup_detect();
    snprintf(cg->name, sizeof cg->name, "cugrade-%d-%u", (int)getpid(),
             atomic_fetch_add(&cg_seq, 1));
    int rc;
    if (cg->version == CGROUP_V2) {
        if ((rc = make_group(CG_MNT, "", cg->name, cg->v2, sizeof cg->v2)) < 0)
            goto fail;
        if (memory_bytes) {
            if ((rc = file_write_u64(cg->v2, "memory.max", memory_bytes)) < 0)
                goto fail;
            /* Swap would let a memory bomb outlive the limit, slowly. */
            rc = file_write(cg->v2, "memory.swap.max", "0");
            if (rc < 0 && rc != -ENOENT)
                goto fail;
        }
        /* On OOM kill the whole group, not one victim: no half-dead job. */
        (void)file_write(cg->v2, "memory.oom.group", "1");
        if (pids && (rc = file_write_u64(cg->v2, "pids.max", pids)) < 0)
            goto fail;
        if ((rc = open_procs(cg->v2)) < 0)
            goto fail;
        cg->procs_fd[0] = rc;
    } else if (cg->version == CGROUP_V1) {
        if ((rc = make_group(CG_MNT "/memory", "memory", cg->name, cg->mem, sizeof cg->mem)) < 0)
            goto fail;
        if ((rc = make_group(CG_MNT "/pids", "pids", cg->name, cg->pids, sizeof cg->pids)) < 0)
            goto fail;
        if (path_exists(CG_MNT "/cpuacct/cpuacct.usage") &&
            make_group(CG_MNT "/cpuacct", "cpuacct", cg->name, cg->cpuacct, sizeof cg->cpuacct) < 0)
            cg->cpuacct[0] = 0; /* CPU time then comes from wait4's rusage */
        if (memory_bytes) {
            if ((rc = file_write_u64(cg->mem, "memory.limit_in_bytes", memory_bytes)) < 0)
                goto fail;
            /* memsw = mem: no swap (only when swap accounting is on). */
            rc = file_write_u64(cg->mem, "memory.memsw.limit_in_bytes", memory_bytes);
            if (rc < 0 && rc != -ENOENT)
                goto fail;
            (void)file_write(cg->mem, "memory.swappiness", "0");
        }
        if (pids && (rc = file_write_u64(cg->pids, "pids.max", pids)) < 0)
            goto fail;
        if ((rc = open_procs(cg->mem)) < 0)
            goto fail;
        cg->procs_fd[0] = rc;
        if ((rc = open_procs(cg->pids)) < 0)
            goto fail;
        cg->procs_fd[1] = rc;
        if (cg->cpuacct[0] && (rc = open_procs(cg->cpuacct)) >= 0)
            cg->procs_fd[2] = rc;
        /* The v2 tree beside v1 has no controllers here but keeps each
         * group's CPU pressure: best effort, as cpuacct. */
        if (path_exists(CG_MNT "/unified/cpu.pressure") &&
            make_group(CG_MNT "/unified", "", cg->name, cg->unified, sizeof cg->unified) == 0 &&
            (rc = open_procs(cg->unified)) >= 0)
            cg->procs_fd[3] = rc;
    } else {
        rc = -EOPNOTSUPP;
        goto fail;
    }
    return 0;
fail:
    cgroup_destroy(cg);
    return rc;
}

int cgroup_enter_self(const struct cgroup *cg)
{
    for (int i = 0; i < CGROUP_FDS; i++)
        if (cg->procs_fd[i] >= 0 && write(cg->procs_fd[i], "0", 1) != 1)
            return -errno;
    return 0;
}

double cgroup_cpu_seconds(const struct cgroup *cg)
{
    uint64_t v;
    if (cg->version == CGROUP_V2 && keyed_u64(cg->v2, "cpu.stat", "usage_usec", &v) == 0)
        return (double)v / 1e6;
    if (cg->version == CGROUP_V1 && cg->cpuacct[0] && single_u64(cg->cpuacct, "cpuacct.usage", &v) == 0)
        return (double)v / 1e9;
    return -1;
}

/* The total of one line ("some" or "full") of the group's cpu.pressure,
 * in seconds, or -1 when unknown. */
static double pressure_total(const struct cgroup *cg, const char *line)
{
    const char *dir = cg->version == CGROUP_V2 ? cg->v2 : cg->unified;
    char buf[512];
    if (!dir[0] || file_read(dir, "cpu.pressure", buf, sizeof buf) < 0)
        return -1;
    /* "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
     * "full avg10=0.00 avg60=0.00 avg300=0.00 total=12000\n" (microseconds) */
    size_t n = strlen(line);
    for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, line, n) != 0 || l[n] != ' ')
            continue;
        const char *t = strstr(l, " total="), *nl = strchr(l, '\n');
        if (!t || (nl && t > nl))
            return -1;
        return (double)strtoull(t + 7, NULL, 10) / 1e6;
    }
    return -1;
}

double cgroup_cpu_wait_seconds(const struct cgroup *cg)
{
    return pressure_total(cg, "some");
}

double cgroup_cpu_stall_seconds(const struct cgroup *cg)
{
    return pressure_total(cg, "full");
}

int cgroup_renice(const struct cgroup *cg, int nice)
{
    pid_t tids[4096];
    int n = cg->version == CGROUP_V2   ? list_ids(cg->v2, "cgroup.threads", tids, 4096)
            : cg->version == CGROUP_V1 ? list_ids(cg->pids, "tasks", tids, 4096)
                                       : -ENOENT;
    int took = 0;
    for (int i = 0; i < n && i < 4096; i++)
        if (tids[i] > 0 && setpriority(PRIO_PROCESS, (id_t)tids[i], nice) == 0)
            took++;
    return n < 0 ? n : took;
}

void cgroup_sample(struct cgroup *cg)
{
    uint64_t v = 0;
    if (cg->version == CGROUP_V2 && single_u64(cg->v2, "memory.current", &v) == 0 && v > cg->peak_sampled)
        cg->peak_sampled = v;
}

uint64_t cgroup_peak_memory(struct cgroup *cg)
{
    uint64_t v = 0;
    if (cg->version == CGROUP_V2 && single_u64(cg->v2, "memory.peak", &v) == 0)
        return v > cg->peak_sampled ? v : cg->peak_sampled;
    if (cg->version == CGROUP_V1 && single_u64(cg->mem, "memory.max_usage_in_bytes", &v) == 0)
        return v;
    return cg->peak_sampled;
}

uint64_t cgroup_oom_kills(const struct cgroup *cg)
{
    uint64_t v = 0;
    if (cg->version == CGROUP_V2)
        (void)keyed_u64(cg->v2, "memory.events", "oom_kill", &v);
    else if (cg->version == CGROUP_V1)
        (void)keyed_u64(cg->mem, "memory.oom_control", "oom_kill", &v);
    return v;
}

int cgroup_populated(const struct cgroup *cg)
{
    if (cg->version == CGROUP_V2) {
        if (!cg->v2[0])
            return 0;
        uint64_t v;
        int rc = keyed_u64(cg->v2, "cgroup.events", "populated", &v);
        return rc < 0 ? rc : v != 0;
    }
    pid_t p[1];
    int total = 0;
    const char *dirs[CG_NDIRS] = CG_DIRS(cg);
    for (int i = 0; i < CG_NDIRS; i++) {
        if (!dirs[i][0])
            continue;
        int n = list_pids(dirs[i], p, 1);
        if (n < 0 && n != -ENOENT)
            return n;
        if (n > 0)
            total += n;
    }
    return total > 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cgroup_kill(const struct cgroup *cg)
{
    long long deadline = now_ms() + CGROUP_EMPTY_MS;
    int use_kill_file =
        cg->version == CGROUP_V2 && cg->v2[0] && file_write(cg->v2, "cgroup.kill", "1") == 0;
    for (int delay = 1;; delay = delay < 16 ? delay * 2 : 16) {
        int pop = cgroup_populated(cg);
        if (pop <= 0)
            return pop;
        if (!use_kill_file) {
            /* No cgroup.kill (v1, or v2 before 5.14): SIGKILL every member
             * and go again; a fork bomb cannot outrun this because pids.max
             * bounds how many children it can have in flight. */
            const char *dirs[CG_NDIRS] = CG_DIRS(cg);
            for (int d = 0; d < CG_NDIRS; d++)
                if (dirs[d][0])
                    kill_members(dirs[d]);
        }
        if (now_ms() > deadline)
            return -ETIMEDOUT;
        sleep_ms(delay);
    }
}

/* rmdir, retrying while the kernel finishes tearing down exiting tasks. */
static int remove_dir(char *dir)
{
    if (!dir[0])
        return 0;
    for (int i = 0; i < 200; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT) {
            dir[0] = 0;
            return 0;
        }
        if (errno != EBUSY)
            return -errno;
        sleep_ms(5);
    }
    return -EBUSY;
}

int cgroup_destroy(struct cgroup *cg)
{
    int rc = 0, r;
    if (cg->version == CGROUP_NONE)
        return 0; /* zeroed: owns nothing (fd 0 is not ours) */
    for (int i = 0; i < CGROUP_FDS; i++) {
        if (cg->procs_fd[i] >= 0)
            close(cg->procs_fd[i]);
        cg->procs_fd[i] = -1;
    }
    r = cgroup_kill(cg);
    if (r < 0 && rc == 0)
        rc = r;
    char *dirs[CG_NDIRS] = CG_DIRS(cg);
    for (int d = 0; d < CG_NDIRS; d++)
        if ((r = remove_dir(dirs[d])) < 0 && rc == 0)
            rc = r;
    return rc;
}

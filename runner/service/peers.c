/*
 * peers.c - the runners of one host that serve one server share a burst
 * (see peers.h). Each runner's file, PID.load, holds
 * "STATE IN_FLIGHT PENDING GPU_KEY\n" and is replaced whole (written beside, then renamed): a reader never
 * sees half of one.
 */
#include "runner/service/peers.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    char base[PATH_MAX / 2];
    char dir[PATH_MAX - 64];
    pid_t pid; /* the runner that joined: its children never publish or leave */
    int joined;
    int state; /* last published */
    long in_flight, pending;
    char gpu[17]; /* 16 hex digits: which GPU (peers.h) */
} me = {.state = -1, .in_flight = -1, .pending = -1};

/* FNV-1a of s: names the server's directory. */
static uint64_t url_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static int mkdir_own(const char *path)
{
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(path, &st) < 0)
        return -errno;
    /* Another user's directory (or a link) in a shared /tmp is not ours. */
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return -EPERM;
    return 0;
}

/* The base and the peers directory, made when missing (systemd removes
 * its RuntimeDirectory, /run/cugrade-runner, when a runner unit stops). */
static int dirs_make(void)
{
    int rc = mkdir_own(me.base);
    return rc < 0 ? rc : mkdir_own(me.dir);
}

int peers_join(const char *server_url, const char *gpu_key)
{
    int rc;
    assert(!me.joined);
    snprintf(me.gpu, sizeof me.gpu, "%016llx",
             (unsigned long long)url_hash(gpu_key ? gpu_key : ""));
    if (geteuid() == 0) {
        snprintf(me.base, sizeof me.base, "/run/cugrade-runner");
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(me.base, sizeof me.base, "%s/cugrade-runner-%u", t && *t == '/' ? t : "/tmp",
                 (unsigned)geteuid());
    }
    snprintf(me.dir, sizeof me.dir, "%s/peers-%016llx", me.base,
             (unsigned long long)url_hash(server_url ? server_url : ""));
    if ((rc = dirs_make()) < 0)
        return rc;
    me.pid = getpid();
    me.joined = 1;
    peers_publish(PEER_STARTING, 0, 0);
    return 0;
}

void peers_publish(enum peer_state st, size_t in_flight, size_t pending)
{
    char path[sizeof me.dir + 32], part[sizeof me.dir + 32], line[64];
    if (!me.joined || getpid() != me.pid)
        return;
    snprintf(path, sizeof path, "%s/%ld.load", me.dir, (long)me.pid);
    snprintf(part, sizeof part, "%s/%ld.part", me.dir, (long)me.pid);
    if ((int)st == me.state && (long)in_flight == me.in_flight && (long)pending == me.pending &&
        access(path, F_OK) == 0)
        return; /* unchanged, and still there */
    int n = snprintf(line, sizeof line, "%c %zu %zu %s\n", (char)st, in_flight, pending, me.gpu);
    int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == ENOENT && dirs_make() == 0)
        fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    int ok = write(fd, line, (size_t)n) == n;
    close(fd);
    if (ok && rename(part, path) == 0) {
        me.state = (int)st;
        me.in_flight = (long)in_flight;
        me.pending = (long)pending;
    } else {
        unlink(part);
    }
}

/* Whether pid is a live cugrade-runner (not a dead one's reused pid). */
static int peer_alive(long pid)
{
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int got = fgets(comm, sizeof comm, f) != NULL;
    fclose(f);
    return got && strncmp(comm, "cugrade-runner", 14) == 0;
}

/* One live peer's line, as read (pending -1 and gpu "" in an older
 * runner's two-field line). */
struct peer_line {
    char st;
    long in_flight, pending;
    char gpu[17];
};

/* Read the live peers' lines (this runner excluded) into out, at most
 * room; a dead runner's file is removed. Returns how many. */
static size_t peers_read(struct peer_line *out, size_t room)
{
    size_t k = 0;
    if (!me.joined)
        return 0;
    DIR *d = opendir(me.dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < room) {
        char *end, path[sizeof me.dir + 300], line[96] = "";
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".load") != 0 || pid == (long)me.pid || pid <= 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", me.dir, e->d_name);
        if (!peer_alive(pid)) {
            unlink(path); /* a dead runner's: nobody else will */
            continue;
        }
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        struct peer_line *p = &out[k];
        memset(p, 0, sizeof *p);
        p->pending = -1;
        int got = fgets(line, sizeof line, f) != NULL;
        fclose(f);
        int nf =
            got ? sscanf(line, "%c %ld %ld %16s", &p->st, &p->in_flight, &p->pending, p->gpu) : 0;
        if (nf < 2 || p->in_flight < 0)
            continue;
        if (nf < 4) {
            p->pending = -1;
            p->gpu[0] = '\0';
        }
        k++;
    }
    closedir(d);
    return k;
}

/* A peer that claims or will soon. */
static int peer_counts(const struct peer_line *p)
{
    return p->st == PEER_STARTING || p->st == PEER_CLAIMING;
}

long peers_least(int *hungry)
{
    struct peer_line p[64];
    size_t n = peers_read(p, 64);
    long least = -1;
    if (hungry)
        *hungry = 0;
    for (size_t i = 0; i < n; i++) {
        if (peer_counts(&p[i]) && (least < 0 || p[i].in_flight < least))
            least = p[i].in_flight;
        if (hungry && p[i].st == PEER_CLAIMING && p[i].pending == 0 && p[i].gpu[0] &&
            strcmp(p[i].gpu, me.gpu) != 0)
            *hungry = 1;
    }
    return least;
}

void peers_leave(void)
{
    char path[sizeof me.dir + 32];
    if (!me.joined || getpid() != me.pid)
        return;
    snprintf(path, sizeof path, "%s/%ld.load", me.dir, (long)me.pid);
    unlink(path);
    me.joined = 0;
}

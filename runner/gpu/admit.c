/*
 * admit.c - GPU memory admission (admit.h). The ledger is a text file, one
 * "pid token mb" line per reservation, rewritten under flock(LOCK_EX).
 */
#include "runner/gpu/admit.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ADMIT_MAX_ENTRIES 256
#define ADMIT_POLL_NS 100000000L /* 100 ms */

int admit_fits(const struct admit_entry *e, size_t n, unsigned long long capacity_mb,
               unsigned long long need_mb)
{
    unsigned long long used = 0;
    if (n == 0 || capacity_mb == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        used += e[i].mb;
    return used + need_mb <= capacity_mb;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/* Open and lock the ledger. Returns the fd or -errno. */
static int ledger_open(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            int r = -errno;
            close(fd);
            return r;
        }
    return fd;
}

/* Read the live entries (dead processes' dropped) into e[]; returns n. */
static size_t ledger_read(int fd, struct admit_entry *e)
{
    char buf[ADMIT_MAX_ENTRIES * 64 + 1];
    ssize_t len = pread(fd, buf, sizeof buf - 1, 0);
    size_t n = 0;
    if (len <= 0)
        return 0;
    buf[len] = '\0';
    /* strtok_r: the runner's threads read ledgers at once (strtok's one
     * position for the whole process mixed their lines up). */
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && n < ADMIT_MAX_ENTRIES;
         line = strtok_r(NULL, "\n", &save)) {
        struct admit_entry x;
        if (sscanf(line, "%ld %lld %llu", &x.pid, &x.token, &x.mb) == 3 && alive(x.pid))
            e[n++] = x;
    }
    return n;
}

static int ledger_write(int fd, const struct admit_entry *e, size_t n)
{
    char buf[ADMIT_MAX_ENTRIES * 64 + 1];
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%ld %lld %llu\n", e[i].pid,
                                e[i].token, e[i].mb);
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, len, 0) != (ssize_t)len)
        return -EIO;
    return 0;
}

int admit_reserve(const char *path, unsigned long long capacity_mb, unsigned long long need_mb,
                  double max_wait, long long *token, double *waited)
{
    return admit_reserve_turn(path, NULL, capacity_mb, need_mb, max_wait, token, waited, NULL,
                              NULL);
}

/* The waiters ahead of this process's line qtok in the queue ledger (file
 * order is arrival order), copied to e[] (at most room); returns how many.
 * An unreadable queue keeps no turn: only less fair, never stuck. */
static size_t queue_ahead(const char *queue, long long qtok, struct admit_entry *e, size_t room)
{
    struct admit_entry q[ADMIT_MAX_ENTRIES];
    int fd = ledger_open(queue);
    if (fd < 0)
        return 0;
    size_t n = ledger_read(fd, q), k = 0;
    close(fd);
    for (size_t i = 0; i < n && k < room; i++) {
        if (q[i].pid == (long)getpid() && q[i].token == qtok)
            break;
        e[k++] = q[i];
    }
    return k;
}

static long long next_token(void)
{
    static long long counter;
    return __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
}

/* Append this process's line (token t, mb) to the ledger at path, at once.
 * Returns 0 or -errno. */
static int ledger_append(const char *path, long long t, unsigned long long mb)
{
    struct admit_entry e[ADMIT_MAX_ENTRIES + 1];
    int fd = ledger_open(path);
    if (fd < 0)
        return fd;
    size_t n = ledger_read(fd, e);
    e[n] = (struct admit_entry){(long)getpid(), t, mb};
    int r = n < ADMIT_MAX_ENTRIES ? ledger_write(fd, e, n + 1) : -EAGAIN;
    close(fd);
    return r;
}

/* One look: admit need_mb when it fits beside the ledger's live entries
 * and the waiters ahead (ahead[0..k)). Returns 1 (admitted, *token set),
 * 0 (not yet) or -errno. */
static int reserve_once(const char *path, const struct admit_entry *ahead, size_t k,
                        unsigned long long capacity_mb, unsigned long long need_mb,
                        long long *token)
{
    struct admit_entry e[2 * ADMIT_MAX_ENTRIES + 1];
    int fd = ledger_open(path);
    if (fd < 0)
        return fd;
    size_t n = ledger_read(fd, e);
    memcpy(e + n, ahead, k * sizeof *ahead);
    int ok = n < ADMIT_MAX_ENTRIES && admit_fits(e, n + k, capacity_mb, need_mb);
    int r = 0;
    if (ok) {
        long long t = next_token();
        e[n] = (struct admit_entry){(long)getpid(), t, need_mb};
        r = ledger_write(fd, e, n + 1);
        if (r == 0)
            *token = t;
    }
    close(fd); /* never wait holding the ledger */
    return r < 0 ? r : ok;
}

int admit_reserve_turn(const char *path, const char *queue, unsigned long long capacity_mb,
                       unsigned long long need_mb, double max_wait, long long *token,
                       double *waited, int (*give_up)(void *arg), void *give_up_arg)
{
    struct admit_entry ahead[ADMIT_MAX_ENTRIES];
    double t0 = mono();
    long long qtok = 0;
    int r;
    assert(path && token);
    *token = 0;
    if (waited)
        *waited = 0;
    if (capacity_mb == 0)
        return 0;
    if (queue) {
        qtok = next_token();
        if (ledger_append(queue, qtok, need_mb) < 0)
            qtok = 0; /* not in the queue: admitted by fit alone */
    }
    for (;;) {
        size_t k = qtok ? queue_ahead(queue, qtok, ahead, ADMIT_MAX_ENTRIES) : 0;
        r = reserve_once(path, ahead, k, capacity_mb, need_mb, token);
        if (r != 0)
            break;
        if (mono() - t0 >= max_wait) {
            r = -EBUSY;
            break;
        }
        if (give_up && give_up(give_up_arg)) {
            r = -EXDEV;
            break;
        }
        struct timespec ts = {0, ADMIT_POLL_NS};
        nanosleep(&ts, NULL);
    }
    /* Out of the queue only once in the ledger: a waiter behind that reads
     * the queue and then the ledger counts this job at least once. */
    if (qtok)
        admit_release(queue, qtok);
    if (waited)
        *waited = mono() - t0;
    return r < 0 ? r : 0;
}

long long admit_enter(const char *path)
{
    long long t = next_token();
    return ledger_append(path, t, 0) == 0 ? t : 0;
}

/* Drop (remove) or shrink to mb this process's entry token, rewriting the
 * ledger. Returns 0, -ENOENT when a shrink finds no entry, or -errno. */
static int ledger_edit(const char *path, long long token, int remove, unsigned long long mb)
{
    struct admit_entry e[ADMIT_MAX_ENTRIES];
    if (token == 0)
        return 0;
    int fd = ledger_open(path);
    if (fd < 0)
        return fd;
    size_t n = ledger_read(fd, e), k = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].pid == (long)getpid() && e[i].token == token) {
            found = 1;
            if (remove)
                continue;
            /* Only ever down: a reservation grows by waiting its turn
             * (admit_reserve), never in place past the others. */
            if (mb < e[i].mb)
                e[i].mb = mb;
        }
        e[k++] = e[i];
    }
    int r = remove || found ? ledger_write(fd, e, k) : -ENOENT;
    close(fd);
    return r;
}

int admit_release(const char *path, long long token)
{
    return ledger_edit(path, token, 1, 0);
}

int admit_resize(const char *path, long long token, unsigned long long mb)
{
    return ledger_edit(path, token, 0, mb);
}

int admit_count(const char *path)
{
    struct admit_entry e[ADMIT_MAX_ENTRIES];
    int fd = ledger_open(path);
    if (fd < 0)
        return fd;
    size_t n = ledger_read(fd, e);
    close(fd);
    return (int)n;
}

unsigned long long admit_device_mb(const char *device_record_path)
{
    char buf[8192];
    unsigned long long mb = 0;
    int fd = open(device_record_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return 0;
    buf[len] = '\0';
    const char *p = strstr(buf, "\"mem_bytes\":");
    if (p)
        mb = strtoull(p + strlen("\"mem_bytes\":"), NULL, 10) >> 20;
    return mb;
}

/*
 * box.c - boxes: one host uid/gid per concurrent sandbox (see box.h,
 * sandbox.h and docs/sandbox.md).
 */
#include "runner/sandbox/box.h"
#include "runner/config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* As isolate gives each box its own uid: per-user kernel limits
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

/* Under boxes.mu. */
static void boxes_setup(void)
{
    if (boxes.configured)
        return;
    const struct runner_config *c = runner_cfg();
    boxes.base = (unsigned)c->sandbox_uid_base;
    boxes.count = SANDBOX_BOXES;
    /* /run where there is one to write (a container may lack it) */
    const char *d = access("/run", W_OK) == 0 ? SANDBOX_BOX_DIR : SANDBOX_BOX_DIR_FALLBACK;
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

int box_take(unsigned *uid)
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

unsigned box_of_workdir(const char *path)
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

int box_hold(const struct stat *st, unsigned uid, int fd)
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

void box_release(dev_t dev, ino_t ino)
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

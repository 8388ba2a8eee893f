/*
 * workdir.c - files in and out of a sandbox's work directory: the tmpfs
 * made for one job (it holds the job's box), its size cap, reading back
 * what the program left there, and its removal (see sandbox.h).
 */
#include "runner/sandbox/sandbox.h"

#include "runner/sandbox/box.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    int rc = sandbox_tree_remove(path);
    if (boxed)
        box_release(bst.st_dev, bst.st_ino);
    return rc;
}

int sandbox_tree_remove(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    rc = remove_tree_at(fd, 0);
    if (rmdir(path) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* One file of sandbox_copy_files: from's entry name (opened without
 * following a link) into to/name. 1 copied, 0 skipped, or -errno. */
static int copy_file(int dfd, const char *name, const char *to, uid_t uid, gid_t gid)
{
    struct stat st;
    char path[PATH_MAX], buf[65536];
    int in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1, rc = 1;
    if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) ||
        st.st_size > (off_t)SANDBOX_COPY_FILE_BYTES ||
        snprintf(path, sizeof path, "%s/%s", to, name) >= (int)sizeof path) {
        if (in >= 0)
            close(in);
        return 0;
    }
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0)
        rc = -errno;
    for (ssize_t n; rc > 0 && (n = read(in, buf, sizeof buf)) != 0;)
        if (n < 0 || write(out, buf, (size_t)n) != n)
            rc = -(errno ? errno : EIO);
    if (rc > 0 && uid != (uid_t)-1 && fchown(out, uid, gid) < 0)
        rc = -errno;
    close(in);
    if (out >= 0)
        close(out);
    if (rc < 0)
        unlink(path);
    return rc;
}

int sandbox_copy_files(const char *from, const char *to, uid_t uid, gid_t gid)
{
    DIR *d = opendir(from);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int n = 0, rc = 0;
    if (mkdir(to, 0755) < 0 && errno != EEXIST)
        rc = -errno;
    else if (uid != (uid_t)-1 && chown(to, uid, gid) < 0)
        rc = -errno;
    for (struct dirent *e; rc == 0 && n < SANDBOX_COPY_FILES && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        int r = copy_file(dirfd(d), e->d_name, to, uid, gid);
        if (r < 0)
            rc = r;
        n += r > 0;
    }
    closedir(d);
    return rc < 0 ? rc : n;
}

/* backup.c - `cugrade-server backup FILE`: an online copy of the database.
 *
 * Why not cp: a copy of the main file taken while the server commits is torn
 * (pages from two transactions), and the committed rows that still live in
 * the -wal file are missing. The backup API reads every page inside one read
 * transaction: in WAL mode that is a snapshot of the last commit, taken
 * without blocking the server's writers, so the copy is the database as it
 * was at one instant, every 202 before that instant included. */
#include "server/backup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

const char backup_usage[] =
    "usage: cugrade-server backup FILE [--db PATH]\n"
    "\n"
    "Write a consistent copy of the live database to FILE (SQLite's online\n"
    "backup API: safe while the server runs; writers are not blocked). FILE is\n"
    "written beside itself as FILE.tmp, checked, and renamed into place.\n"
    "Restore: stop the server, copy FILE over the database path, remove the\n"
    "database's -wal and -shm files, start the server (docs/deploy.md).\n";

static int sqlite_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_CANTOPEN:
        return -ENOENT;
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return -EACCES;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return -EILSEQ;
    default:
        return -EIO;
    }
}

/* fsync a file by name (the copy before its rename, then its directory). */
static int fsync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

int backup_database(const char *db_path, const char *out_path)
{
    sqlite3 *src = NULL, *dst = NULL;
    sqlite3_backup *b = NULL;
    sqlite3_stmt *st = NULL;
    char tmp[4096], dir[4096];
    int rc;

    if (snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    unlink(tmp);
    /* Read-write without create: a missing database is an error, and the
     * WAL index (-shm) may need to be set up by this connection. */
    rc = sqlite3_open_v2(db_path, &src, SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "cugrade-server: backup: cannot open %s: %s\n", db_path,
                src ? sqlite3_errmsg(src) : sqlite3_errstr(rc));
        rc = sqlite_errno(rc);
        goto fail;
    }
    sqlite3_busy_timeout(src, 10000);
    rc = sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "cugrade-server: backup: cannot create %s: %s\n", tmp,
                dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
        rc = sqlite_errno(rc);
        goto fail;
    }
    b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) {
        fprintf(stderr, "cugrade-server: backup: %s\n", sqlite3_errmsg(dst));
        rc = -EIO;
        goto fail;
    }
    /* All pages in one step: one read transaction, one snapshot. Copying in
     * slices would restart from scratch whenever the server commits between
     * two slices (a write through another connection), and under a steady
     * load could never finish. */
    do {
        rc = sqlite3_backup_step(b, -1);
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            sqlite3_sleep(50);
    } while (rc == SQLITE_BUSY || rc == SQLITE_LOCKED || rc == SQLITE_OK);
    rc = sqlite3_backup_finish(b);
    b = NULL;
    if (rc != SQLITE_OK) {
        fprintf(stderr, "cugrade-server: backup: copy failed: %s\n", sqlite3_errmsg(dst));
        rc = sqlite_errno(rc);
        goto fail;
    }
    /* One self-contained file (no -wal beside it) that a restore can copy. */
    rc = sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(dst, "PRAGMA quick_check", -1, &st, NULL);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
        fprintf(stderr, "cugrade-server: backup: the copy fails quick_check: %s\n",
                sqlite3_column_text(st, 0));
        rc = SQLITE_CORRUPT;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_OK) {
        rc = sqlite_errno(rc);
        goto fail;
    }
    sqlite3_close(dst);
    dst = NULL;
    sqlite3_close(src);
    src = NULL;
    rc = fsync_path(tmp, 0);
    if (!rc && rename(tmp, out_path) != 0)
        rc = -errno;
    if (rc) {
        fprintf(stderr, "cugrade-server: backup: cannot write %s: %s\n", out_path, strerror(-rc));
        goto fail;
    }
    snprintf(dir, sizeof dir, "%s", out_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    fsync_path(slash ? dir : ".", 1);
    return 0;
fail:
    if (b)
        sqlite3_backup_finish(b);
    sqlite3_finalize(st);
    sqlite3_close(dst);
    sqlite3_close(src);
    unlink(tmp);
    return rc;
}

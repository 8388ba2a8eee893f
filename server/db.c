/*
 * db.c - SQLite in WAL mode, the schema of docs/database.md, a statement
 * cache. See db.h for the contracts.
 */
#include "server/db.h"
#include "server/migrate.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DB_STMT_MAX 128

struct db_cached {
    const char *sql; /* the key: a string literal's address */
    sqlite3_stmt *st;
};

struct db {
    sqlite3 *h;
    dev_t dev; /* the file opened (db_file_check) */
    ino_t ino;
    pthread_t owner; /* the one thread that may use h (db_thread_adopt) */
    struct db_cached cache[DB_STMT_MAX];
    size_t ncache;
};

static const char db_schema[] =
    "CREATE TABLE IF NOT EXISTS users("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL CHECK(role IN ('student','ta','admin','runner')),"
    " display_name TEXT,"
    " pseudonym TEXT UNIQUE,"
    " show_name INTEGER NOT NULL DEFAULT 0,"
    " created_at REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS tokens("
    " id INTEGER PRIMARY KEY,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " hash TEXT NOT NULL UNIQUE,"
    " created_at REAL NOT NULL,"
    " revoked INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS sessions("
    " id INTEGER PRIMARY KEY,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " hash TEXT NOT NULL UNIQUE,"
    " csrf TEXT NOT NULL,"
    " created_at REAL NOT NULL,"
    " expires_at REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS labs("
    " lab TEXT PRIMARY KEY,"
    " title TEXT,"
    " lab_json TEXT);"
    "CREATE TABLE IF NOT EXISTS rubrics("
    " lab TEXT NOT NULL,"
    " version INTEGER NOT NULL,"
    " doc TEXT NOT NULL,"
    " created_at REAL NOT NULL,"
    " created_by INTEGER," /* NULL: loaded from rubrics/<lab>.json */
    " PRIMARY KEY(lab, version));"
    "CREATE TABLE IF NOT EXISTS submissions("
    " id INTEGER PRIMARY KEY,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " lab TEXT NOT NULL,"
    " filename TEXT NOT NULL,"
    " source BLOB NOT NULL,"
    " sha256 TEXT NOT NULL,"
    " size INTEGER NOT NULL,"
    " late INTEGER NOT NULL DEFAULT 0,"
    " late_days REAL NOT NULL DEFAULT 0,"
    " status TEXT NOT NULL,"
    " phase TEXT NOT NULL DEFAULT '',"
    " detail TEXT NOT NULL DEFAULT '',"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " max_attempts INTEGER NOT NULL DEFAULT 3,"
    " lease_runner TEXT,"
    " lease_user INTEGER,"
    " lease_expires REAL,"
    " rubric_version INTEGER,"
    " score REAL,"
    " max_score REAL,"
    " speedup REAL,"
    " result TEXT,"
    " created_at REAL NOT NULL,"
    " updated_at REAL NOT NULL,"
    " graded_at REAL);"
    "CREATE INDEX IF NOT EXISTS submissions_status ON submissions(status, id);"
    "CREATE INDEX IF NOT EXISTS submissions_user_lab ON submissions(user_id, lab, id);"
    "CREATE INDEX IF NOT EXISTS submissions_lab ON submissions(lab, id);"
    /* Covers the scoreboard scan: no table row (source, result) is read. */
    "CREATE INDEX IF NOT EXISTS submissions_board ON submissions(lab, user_id, score, speedup,"
    " created_at, max_score, late);"
    "CREATE TABLE IF NOT EXISTS runners("
    " name TEXT PRIMARY KEY,"
    " gpu TEXT,"
    " last_seen REAL,"
    " jobs_done INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS overrides("
    " id INTEGER PRIMARY KEY,"
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " score REAL NOT NULL,"
    " reason TEXT NOT NULL,"
    " by_user INTEGER,"
    " created_at REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS overrides_submission ON overrides(submission_id, id);"
    "CREATE TABLE IF NOT EXISTS audit_log("
    " id INTEGER PRIMARY KEY,"
    " at REAL NOT NULL,"
    " actor_user_id INTEGER,"
    " action TEXT NOT NULL,"
    " target TEXT,"
    " detail TEXT);"
    "CREATE TABLE IF NOT EXISTS extensions("
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " lab TEXT NOT NULL,"
    " due REAL,"
    " hard_deadline REAL,"
    " PRIMARY KEY(user_id, lab));";

int db_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return 0;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_CONSTRAINT:
        return -EEXIST;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_CANTOPEN:
        return -ENOENT;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return -EBADMSG;
    default:
        return -EIO;
    }
}

double db_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A connection is used by one thread only (SQLITE_OPEN_NOMUTEX): the loop's
 * by the loop, the writer's by the writer (server/writer.h). */
#define DB_OWNED(db) assert(pthread_equal((db)->owner, pthread_self()))

void db_thread_adopt(struct db *db)
{
    db->owner = pthread_self();
}

/* db_errno for a failure of h: an I/O error whose system call ran out of
 * space (a WAL or -shm write on a full disk is SQLITE_IOERR, not
 * SQLITE_FULL) is -ENOSPC, which every write path answers with 503. */
static int db_errno_of(sqlite3 *h, int rc)
{
    int err = db_errno(rc);
    if (err == -EIO) {
        int sys = sqlite3_system_errno(h);
        if (sys == ENOSPC || sys == EDQUOT)
            return -ENOSPC;
    }
    return err;
}

int db_exec(struct db *db, const char *sql)
{
    DB_OWNED(db);
    char *msg = NULL;
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "cugrade-server: db: %s\n", msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return db_errno_of(db->h, rc) ? db_errno_of(db->h, rc) : -EIO;
    }
    return 0;
}

static int db_user_version(struct db *db, int *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return db_errno(rc);
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -EIO;
}

/* SQLite's error log: every damaged page it meets is counted, whichever
 * statement met it, so that /healthz can say so. */
static long db_corruptions;

static void db_log(void *arg, int code, const char *msg)
{
    (void)arg;
    if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB) {
        __atomic_add_fetch(&db_corruptions, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "cugrade-server: db: the database is damaged: %s\n", msg);
    }
}

long db_corruption_count(void)
{
    return __atomic_load_n(&db_corruptions, __ATOMIC_RELAXED);
}

/* PRAGMA quick_check (O(N), no index cross-check): "ok", or up to 100 lines
 * naming damaged pages, printed to stderr. 0, -EBADMSG or -errno. */
static int db_quick_check(struct db *db, const char *path)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA quick_check(20)", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return db_errno(rc) ? db_errno(rc) : -EIO;
    int bad = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = db_col_text(st, 0);
        if (strcmp(line, "ok") == 0)
            continue;
        if (!bad++)
            fprintf(stderr, "cugrade-server: %s failed PRAGMA quick_check:\n", path);
        fprintf(stderr, "cugrade-server:   %s\n", line);
    }
    sqlite3_finalize(st);
    if (bad)
        return -EBADMSG;
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "cugrade-server: %s: PRAGMA quick_check could not finish: %s\n", path,
                sqlite3_errstr(rc));
        return db_errno(rc) ? db_errno(rc) : -EIO;
    }
    return 0;
}

/* Which file db has open: device and inode, for db_file_check. */
static void db_note_file(struct db *db)
{
    struct stat sb;
    if (stat(sqlite3_db_filename(db->h, "main"), &sb) == 0) {
        db->dev = sb.st_dev;
        db->ino = sb.st_ino;
    }
}

int db_open(const char *path, int oflags, struct db **out)
{
    struct db *db = NULL;
    struct stat sb;
    int rc, ver = 0, created = 0, flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    int create = oflags & DB_CREATE;
    static int log_set;

    *out = NULL;
    if (!log_set) {
        /* Only before SQLite initializes, i.e. before the first open. */
        log_set = 1;
        sqlite3_config(SQLITE_CONFIG_LOG, db_log, NULL);
        /* No global allocation statistics: they take one process-wide mutex
         * on every sqlite3_malloc, which the loop then waited on while the
         * writer thread (at a lower priority) held it. */
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    }
    if (stat(path, &sb) != 0) {
        if (!create)
            return -ENOENT;
        flags |= SQLITE_OPEN_CREATE;
    }
    db = calloc(1, sizeof(*db));
    if (!db)
        return -ENOMEM;
    db->owner = pthread_self();
    rc = sqlite3_open_v2(path, &db->h, flags, NULL);
    if (rc != SQLITE_OK) {
        rc = db_errno(rc);
        goto fail;
    }
    sqlite3_busy_timeout(db->h, 5000);
    sqlite3_extended_result_codes(db->h, 0);
    db_note_file(db);
    /* SQLITE_OPEN_READWRITE quietly falls back to read-only when the file
     * cannot be written: every later write would fail, one request at a
     * time. Say it now. */
    if (sqlite3_db_readonly(db->h, "main") == 1) {
        rc = -EROFS;
        goto fail;
    }
    /* WAL + FULL: a commit is on disk before the 202 goes out (kill -9,
     * power loss). foreign_keys guards against dangling user ids. */
    rc = db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     " PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;");
    if (rc)
        goto fail;
    /* Before the upgrade steps: they must not write into damaged pages. */
    if ((oflags & DB_CHECK) && !(flags & SQLITE_OPEN_CREATE)) {
        rc = db_quick_check(db, path);
        if (rc)
            goto fail;
    }
    rc = db_user_version(db, &ver);
    if (rc)
        goto fail;
    if (ver == 0) {
        if (!create) {
            rc = -ENODATA;
            goto fail;
        }
        rc = db_exec(db, "BEGIN IMMEDIATE");
        if (rc)
            goto fail;
        rc = db_exec(db, db_schema);
        if (!rc)
            rc = db_exec(db, "PRAGMA user_version=1");
        if (rc) {
            db_exec(db, "ROLLBACK");
            goto fail;
        }
        rc = db_exec(db, "COMMIT");
        if (rc)
            goto fail;
        ver = 1;
        created = 1;
    } else if (ver > DB_SCHEMA_VERSION) {
        fprintf(stderr, "cugrade-server: %s has schema version %d, newer than this binary (%d)\n",
                path, ver, DB_SCHEMA_VERSION);
        rc = -EPROTO;
        goto fail;
    }
    /* Later versions: in place, one step at a time (migrate.c). A database
     * just created is at version 1 and takes the same steps. */
    if (ver < DB_SCHEMA_VERSION) {
        rc = migrate_upgrade(db->h, ver, created);
        if (rc)
            goto fail;
    }
    *out = db;
    return 0;
fail:
    if (db->h)
        sqlite3_close(db->h);
    free(db);
    return rc;
}

int db_integrity_check(struct db *db)
{
    DB_OWNED(db);
    int rc = db_quick_check(db, db_path(db));
    if (rc == -EBADMSG)
        __atomic_add_fetch(&db_corruptions, 1, __ATOMIC_RELAXED);
    return rc;
}

int db_file_check(struct db *db)
{
    struct stat sb;
    const char *path = sqlite3_db_filename(db->h, "main");
    if (!path || !*path || db->ino == 0)
        return 0; /* in memory, or not known at open */
    if (stat(path, &sb) != 0)
        return errno == ENOENT ? -ENOLINK : -errno;
    return sb.st_dev == db->dev && sb.st_ino == db->ino ? 0 : -ENOLINK;
}

const char *db_path(struct db *db)
{
    const char *p = sqlite3_db_filename(db->h, "main");
    return p ? p : "";
}

void db_close(struct db *db)
{
    if (!db)
        return;
    DB_OWNED(db);
    for (size_t i = 0; i < db->ncache; i++)
        sqlite3_finalize(db->cache[i].st);
    /* A clean checkpoint leaves no -wal content behind on a graceful stop. */
    sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_close(db->h);
    free(db);
}

sqlite3 *db_handle(struct db *db)
{
    DB_OWNED(db);
    return db->h;
}

sqlite3_stmt *db_stmt(struct db *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    DB_OWNED(db);
    for (size_t i = 0; i < db->ncache; i++) {
        if (db->cache[i].sql == sql) {
            st = db->cache[i].st;
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return st;
        }
    }
    int rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "cugrade-server: db: prepare: %s: %s\n", sqlite3_errmsg(db->h), sql);
        return NULL;
    }
    if (db->ncache < DB_STMT_MAX) {
        db->cache[db->ncache].sql = sql;
        db->cache[db->ncache].st = st;
        db->ncache++;
    } else {
        /* Should not happen (the set of statements is fixed); leak-free
         * fallback would need the caller to finalize, so refuse instead. */
        sqlite3_finalize(st);
        fprintf(stderr, "cugrade-server: db: statement cache full\n");
        return NULL;
    }
    return st;
}

int db_begin(struct db *db, int immediate)
{
    return db_exec(db, immediate ? "BEGIN IMMEDIATE" : "BEGIN");
}

int db_commit(struct db *db)
{
    int rc = db_exec(db, "COMMIT");
    if (rc)
        db_rollback(db);
    return rc;
}

void db_rollback(struct db *db)
{
    DB_OWNED(db);
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

int db_step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    int err = db_errno_of(sqlite3_db_handle(st), rc);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        fprintf(stderr, "cugrade-server: db: %s\n", sqlite3_errmsg(sqlite3_db_handle(st)));
    sqlite3_reset(st);
    return err;
}

long long db_last_id(struct db *db)
{
    DB_OWNED(db);
    return (long long)sqlite3_last_insert_rowid(db->h);
}

int db_changes(struct db *db)
{
    DB_OWNED(db);
    return sqlite3_changes(db->h);
}

const char *db_col_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? (const char *)t : "";
}

json_t *db_col_json_text(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? json_null()
                                                        : json_string(db_col_text(st, col));
}

int db_rows_json(sqlite3_stmt *st, json_t *(*row)(sqlite3_stmt *st), json_t **out)
{
    assert(st && row && out);
    *out = NULL;
    json_t *arr = json_array();
    int rc = SQLITE_DONE;
    while (arr && (rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(arr, row(st));
    sqlite3_reset(st);
    if (!arr)
        return -ENOMEM;
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_errno(rc);
    }
    *out = arr;
    return 0;
}

int db_audit(struct db *db, long long actor, const char *action, const char *target,
             const char *detail)
{
    sqlite3_stmt *st =
        db_stmt(db, "INSERT INTO audit_log(at, actor_user_id, action, target, detail)"
                    " VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return -EIO;
    sqlite3_bind_double(st, 1, db_now());
    if (actor > 0)
        sqlite3_bind_int64(st, 2, actor);
    sqlite3_bind_text(st, 3, action, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, target, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, detail, -1, SQLITE_STATIC);
    return db_step_done(st);
}

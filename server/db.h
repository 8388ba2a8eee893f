/*
 * db.h - the SQLite database (docs/database.md): one file in WAL mode with
 * synchronous=FULL, so that every 202 the server sends survives kill -9 and
 * power loss. Statements are prepared once and cached for the process's life.
 * Every function returns 0 or -errno; SQLite codes never leave this module
 * (db_errno() converts them for the modules that step statements themselves).
 */
#ifndef CUGRADE_DB_H
#define CUGRADE_DB_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>

#define DB_SCHEMA_VERSION 8

struct db;

/* db_open flags. */
#define DB_CREATE 1 /* create the file and the schema when missing */
#define DB_CHECK 2  /* PRAGMA quick_check before anything is written (serve) */

/* Open the database at path. Without DB_CREATE the file must exist and hold
 * an initialized schema (-ENOENT when the file is missing, -ENODATA when it
 * has no schema); with DB_CREATE the file and schema are created when
 * missing. With DB_CHECK, PRAGMA quick_check runs before any upgrade step
 * writes: a damaged file is -EBADMSG, its problems printed to stderr. A file
 * SQLite can only open for reading (its mode, or the filesystem) is -EROFS.
 * Returns 0 and a new handle in *out (free with db_close), or -errno. */
int db_open(const char *path, int flags, struct db **out);

/* How many times SQLite reported a damaged database (SQLITE_CORRUPT,
 * SQLITE_NOTADB) in this process since it started: /healthz shows it. */
long db_corruption_count(void);

/* PRAGMA quick_check on db (O(N): for a background thread): 0, or
 * -EBADMSG after printing the damage to stderr and counting it in
 * db_corruption_count (so /healthz says so), or -errno. */
int db_integrity_check(struct db *db);

/* Whether the file db has open is still the one at its path (device and
 * inode as at open): 0; -ENOLINK when it was renamed away, deleted or
 * replaced (what is written then is lost at the next start); or the
 * stat's -errno. Any thread (a stat, no SQLite call). */
int db_file_check(struct db *db);

/* The absolute path of db's file ("" in memory). */
const char *db_path(struct db *db);

/* Finalize every cached statement, checkpoint the WAL and close. NULL is fine. */
void db_close(struct db *db);

/* Make the calling thread the only one that may use db from now on (the
 * writer thread takes its connection over; server/writer.h). Every function
 * here assert()s that its caller is the owner: at open, the opening thread. */
void db_thread_adopt(struct db *db);

/* The raw handle, for modules that bind and step statements themselves. */
sqlite3 *db_handle(struct db *db);

/* A cached prepared statement for sql, reset and with bindings cleared.
 * sql must be a string literal (or otherwise live forever): the cache keys on
 * its address. Returns NULL on a prepare error (logged to stderr). The
 * statement stays owned by the db; callers must not finalize it. */
sqlite3_stmt *db_stmt(struct db *db, const char *sql);

/* Run one or more statements with no results. Returns 0 or -errno. */
int db_exec(struct db *db, const char *sql);

/* Transactions. immediate=1 takes the write lock at BEGIN (BEGIN IMMEDIATE),
 * which is how claims stay atomic across processes. Return 0 or -errno. */
int db_begin(struct db *db, int immediate);
int db_commit(struct db *db);
void db_rollback(struct db *db);

/* Convert an SQLite result code to 0 / -errno:
 * SQLITE_OK/ROW/DONE -> 0, BUSY/LOCKED -> -EBUSY, CONSTRAINT -> -EEXIST,
 * NOMEM -> -ENOMEM, FULL -> -ENOSPC, READONLY/PERM -> -EACCES,
 * CORRUPT/NOTADB -> -EBADMSG, others -> -EIO. */
int db_errno(int rc);

/* Step a statement that returns no row (or whose row is ignored), then reset
 * it. Returns 0 or -errno. */
int db_step_done(sqlite3_stmt *st);

/* Current time as Unix seconds with sub-second precision. */
double db_now(void);

/* Last rowid inserted on this connection. */
long long db_last_id(struct db *db);

/* Rows changed by the last statement. */
int db_changes(struct db *db);

/* Column text or "" when NULL (the pointer lives until the next step/reset). */
const char *db_col_text(sqlite3_stmt *st, int col);

/* Column text as a JSON string, or null when NULL (a user gone: "who"). */
json_t *db_col_json_text(sqlite3_stmt *st, int col);

/* Every row of st (bound, not stepped yet) as row(st)'s JSON value, in
 * one array; st is reset. 0 and *out, -ENOMEM, or the step's -errno. */
int db_rows_json(sqlite3_stmt *st, json_t *(*row)(sqlite3_stmt *st), json_t **out);

/* Append one row to the audit log (actor may be 0 for the system). 0 or -errno. */
int db_audit(struct db *db, long long actor, const char *action, const char *target,
             const char *detail);

#endif

/* backup.h - online, consistent copies of the live database (SQLite's
 * backup API). See docs/deploy.md, "Backups and restore". */
#ifndef CUGRADE_BACKUP_H
#define CUGRADE_BACKUP_H

extern const char backup_usage[];

/* Copy the database at db_path into a new file out_path while servers may
 * be writing to it: one read transaction (a WAL snapshot, so writers are
 * never blocked), written to out_path.tmp, checked (PRAGMA quick_check),
 * made self-contained (journal_mode=DELETE), fsynced, then renamed over
 * out_path. Returns 0 or -errno; prints its reason to stderr on failure. */
int backup_database(const char *db_path, const char *out_path);

#endif

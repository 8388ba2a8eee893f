/* migrate.h - in-place schema upgrades keyed by PRAGMA user_version.
 * See docs/deploy.md, "Upgrades". */
#ifndef CUGRADE_MIGRATE_H
#define CUGRADE_MIGRATE_H

#include <sqlite3.h>

/* Bring the database h, at schema version from (>= 1), up to
 * DB_SCHEMA_VERSION: each step in its own IMMEDIATE transaction that also
 * sets user_version, so a crash leaves the database at a whole version and
 * the next start resumes. Prints one line per step to stderr unless quiet
 * (a database just created). Returns 0 or
 * -errno (the failing step is rolled back). */
int migrate_upgrade(sqlite3 *h, int from, int quiet);

#endif

/* migrate.c - schema upgrades in place.
 *
 * Version 1 is the schema db.c creates (db_schema). Every later change is a
 * step here, never an edit of db_schema: a fresh database is created at
 * version 1 and goes through the same steps as a course's old one, so both
 * end with the same schema. A step must be correct on a database with rows
 * (ALTER TABLE ... ADD COLUMN with a default, new tables, indexes; a table
 * rebuild copies the rows). */
#include "server/migrate.h"

#include <errno.h>
#include <stdio.h>

#include "server/db.h"
#include "server/lateday.h"
#include "server/regrade.h"
#include "server/similarity.h"

struct migrate_step {
    int to;          /* user_version after the step */
    const char *what; /* one line for the log */
    const char *sql;
};

static const struct migrate_step steps[] = {
    {2, "index for the scoreboard (best score per student and lab)",
     "CREATE INDEX IF NOT EXISTS submissions_board ON submissions(lab, user_id,"
     " score, speedup, created_at, max_score, late);"},
    /* A session lives no longer than the token that started it: the
     * session check joins the token and its revoked flag. Sessions from
     * before this step name no token and end here (their users sign in
     * again once). */
    {3, "sessions name the token that started them (revoking it ends them)",
     "ALTER TABLE sessions ADD COLUMN token_id INTEGER REFERENCES tokens(id);"
     "DELETE FROM sessions WHERE token_id IS NULL;"
     "CREATE INDEX IF NOT EXISTS sessions_token ON sessions(token_id);"},
    /* One pseudonym per student and lab, drawn at random when the student
     * first appears on that lab's scoreboard: the same name in two labs
     * linked a student's rows across labs. users.pseudonym stays (staff
     * pages list it) but is no longer shown to students. */
    {4, "a pseudonym per student and lab for the scoreboards",
     "CREATE TABLE IF NOT EXISTS pseudonyms("
     " user_id INTEGER NOT NULL REFERENCES users(id),"
     " lab TEXT NOT NULL,"
     " pseudonym TEXT NOT NULL,"
     " created_at REAL NOT NULL,"
     " PRIMARY KEY(user_id, lab),"
     " UNIQUE(lab, pseudonym));"},
    /* The course tools: each module owns its tables' SQL. */
    {5, "pooled late days (late_day_policy, late_day_grants, late_day_spends)", lateday_schema},
    {6, "regrade requests", regrade_schema},
    {7, "similarity checks (similarity_runs, similarity_pairs)", similarity_schema},
    /* The verdict posts first, the profile after it (docs/api.md "Runner
     * protocol"): the key names the one profile update a verdict waits for. */
    {8, "submissions name the profile their verdict waits for (profile_key)",
     "ALTER TABLE submissions ADD COLUMN profile_key TEXT;"},
};

int migrate_upgrade(sqlite3 *h, int from, int quiet)
{
    char sql[64];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const struct migrate_step *s = &steps[i];
        if (s->to <= from)
            continue;
        int rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(h, s->sql, NULL, NULL, NULL);
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", s->to);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            fprintf(stderr, "cugrade-server: schema upgrade to version %d (%s) failed: %s\n", s->to,
                    s->what, sqlite3_errmsg(h));
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return db_errno(rc);
        }
        if (!quiet)
            fprintf(stderr, "cugrade-server: database upgraded to schema version %d: %s\n", s->to,
                    s->what);
        from = s->to;
    }
    return from == DB_SCHEMA_VERSION ? 0 : -EPROTO;
}

/*
 * roster.h - the CSV roster an admin uploads to create users:
 * "name,role,display_name" per line, header optional, RFC 4180 quoting.
 */
#ifndef CUGRADE_ROSTER_H
#define CUGRADE_ROSTER_H

#include <stddef.h>

#define ROSTER_MAX_ROWS 10000

struct roster_row {
    char name[65];
    char role[16];
    char display_name[129]; /* "" when the column is absent or empty */
    int line;               /* 1-based line in the file */
};

/* Parse csv (len bytes). Returns 0 with a malloc'd array in *rows (caller
 * frees) and its length in *nrows; or -EINVAL with a sentence naming the
 * line in err ("line 3: role 'prof' is not one of student, ta, admin,
 * runner"); or -ENOMEM. Blank lines are skipped; a first line
 * "name,role[,display_name]" is taken as the header. */
int roster_parse(const char *csv, size_t len, struct roster_row **rows, size_t *nrows, char *err,
                 size_t errlen);

#endif

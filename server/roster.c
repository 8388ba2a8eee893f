/*
 * roster.c - roster CSV parsing. See roster.h.
 */
#include "server/roster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/auth.h"

#define ROSTER_FIELD_MAX 256
#define ROSTER_FIELDS 8

struct csv_line {
    char f[ROSTER_FIELDS][ROSTER_FIELD_MAX];
    size_t nf;
};

/* Read one record starting at *pos (a record may span lines inside quotes).
 * Returns 1 with a record, 0 at the end, -1 with err set. *line advances. */
static int csv_next(const char *s, size_t len, size_t *pos, int *line, int *rec_line,
                    struct csv_line *out, char *err, size_t errlen)
{
    size_t i = *pos;
    if (i >= len)
        return 0;
    memset(out, 0, sizeof(*out));
    *rec_line = *line;
    size_t o = 0;
    int quoted = 0, was_quoted = 0;
    out->nf = 1;
    for (;;) {
        if (i >= len) {
            if (quoted) {
                snprintf(err, errlen, "line %d: a quoted field is not closed.", *rec_line);
                return -1;
            }
            break;
        }
        char ch = s[i];
        if (quoted) {
            if (ch == '"') {
                if (i + 1 < len && s[i + 1] == '"') {
                    ch = '"';
                    i++;
                } else {
                    quoted = 0;
                    i++;
                    continue;
                }
            } else if (ch == '\n') {
                (*line)++;
            }
        } else if (ch == '"') {
            if (o != 0 || was_quoted) {
                snprintf(err, errlen, "line %d: a quote in the middle of field %zu.", *rec_line,
                         out->nf);
                return -1;
            }
            quoted = was_quoted = 1;
            i++;
            continue;
        } else if (ch == ',') {
            if (out->nf == ROSTER_FIELDS) {
                snprintf(err, errlen, "line %d: too many fields.", *rec_line);
                return -1;
            }
            out->nf++;
            o = 0;
            was_quoted = 0;
            i++;
            continue;
        } else if (ch == '\r' && i + 1 < len && s[i + 1] == '\n') {
            i++;
            continue;
        } else if (ch == '\n') {
            i++;
            (*line)++;
            break;
        } else if (was_quoted) {
            snprintf(err, errlen, "line %d: text after a closing quote in field %zu.", *rec_line,
                     out->nf);
            return -1;
        }
        if (ch == '\0') {
            snprintf(err, errlen, "line %d: a NUL byte.", *rec_line);
            return -1;
        }
        if (o + 1 >= ROSTER_FIELD_MAX) {
            snprintf(err, errlen, "line %d: field %zu is longer than %d characters.", *rec_line,
                     out->nf, ROSTER_FIELD_MAX - 1);
            return -1;
        }
        out->f[out->nf - 1][o++] = ch;
        i++;
    }
    *pos = i;
    return 1;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    size_t k = 0;
    while (s[k] == ' ' || s[k] == '\t')
        k++;
    if (k)
        memmove(s, s + k, n - k + 1);
}

int roster_parse(const char *csv, size_t len, struct roster_row **rows, size_t *nrows, char *err,
                 size_t errlen)
{
    struct csv_line *cl = malloc(sizeof(*cl));
    struct roster_row *out = NULL;
    size_t n = 0, cap = 0, pos = 0;
    int line = 1, rec_line = 1, first = 1, rc;
    *rows = NULL;
    *nrows = 0;
    if (!cl)
        return -ENOMEM;
    /* A UTF-8 byte order mark from spreadsheet exports. */
    if (len >= 3 && memcmp(csv, "\xef\xbb\xbf", 3) == 0)
        pos = 3;
    while ((rc = csv_next(csv, len, &pos, &line, &rec_line, cl, err, errlen)) == 1) {
        for (size_t k = 0; k < cl->nf; k++)
            trim(cl->f[k]);
        if (cl->nf == 1 && cl->f[0][0] == '\0')
            continue; /* blank line */
        if (first) {
            first = 0;
            if (strcasecmp(cl->f[0], "name") == 0 && cl->nf >= 2 &&
                strcasecmp(cl->f[1], "role") == 0)
                continue; /* header */
        }
        if (cl->nf < 2 || cl->nf > 3) {
            snprintf(err, errlen, "line %d: expected name,role[,display_name], got %zu field%s.",
                     rec_line, cl->nf, cl->nf == 1 ? "" : "s");
            goto fail;
        }
        if (!auth_name_valid(cl->f[0])) {
            snprintf(err, errlen,
                     "line %d: name '%.64s' must be 1-64 letters, digits, '_', '.', '@' or '-'.",
                     rec_line, cl->f[0]);
            goto fail;
        }
        enum auth_role role;
        if (auth_role_parse(cl->f[1], &role)) {
            snprintf(err, errlen, "line %d: role '%.32s' is not one of student, ta, admin, runner.",
                     rec_line, cl->f[1]);
            goto fail;
        }
        if (cl->nf == 3 && !http_utf8_valid(cl->f[2], strlen(cl->f[2]))) {
            snprintf(err, errlen, "line %d: display_name is not valid UTF-8.", rec_line);
            goto fail;
        }
        if (cl->nf == 3 && strlen(cl->f[2]) > 128) {
            snprintf(err, errlen, "line %d: display_name is longer than 128 characters.", rec_line);
            goto fail;
        }
        for (size_t k = 0; k < n; k++) {
            if (strcmp(out[k].name, cl->f[0]) == 0) {
                snprintf(err, errlen, "line %d: name '%s' already appears on line %d.", rec_line,
                         cl->f[0], out[k].line);
                goto fail;
            }
        }
        if (n == ROSTER_MAX_ROWS) {
            snprintf(err, errlen, "line %d: a roster has at most %d rows.", rec_line,
                     ROSTER_MAX_ROWS);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            struct roster_row *p = realloc(out, cap * sizeof(*out));
            if (!p) {
                free(out);
                free(cl);
                return -ENOMEM;
            }
            out = p;
        }
        memset(&out[n], 0, sizeof(out[n]));
        /* lengths were checked above */
        memcpy(out[n].name, cl->f[0], strlen(cl->f[0]) + 1);
        memcpy(out[n].role, cl->f[1], strlen(cl->f[1]) + 1);
        if (cl->nf == 3)
            memcpy(out[n].display_name, cl->f[2], strlen(cl->f[2]) + 1);
        out[n].line = rec_line;
        n++;
    }
    if (rc < 0)
        goto fail;
    if (n == 0) {
        snprintf(err, errlen, "the roster has no rows.");
        goto fail;
    }
    free(cl);
    *rows = out;
    *nrows = n;
    return 0;
fail:
    free(cl);
    free(out);
    return -EINVAL;
}

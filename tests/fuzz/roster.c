/*
 * roster.c - libFuzzer target: server/roster.c, the CSV an admin uploads.
 * The input is the file (in a buffer of exactly its length). Every row
 * accepted must carry a valid user name and role; a refusal must say which
 * line is wrong.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"
#include "server/roster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *csv = malloc(size ? size : 1);
    assert(csv);
    memcpy(csv, data, size);
    struct roster_row *rows = NULL;
    size_t n = 0;
    char err[256] = "";
    int rc = roster_parse(csv, size, &rows, &n, err, sizeof(err));
    assert(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
    if (rc == 0) {
        assert(n <= ROSTER_MAX_ROWS);
        assert(n == 0 || rows);
        for (size_t i = 0; i < n; i++) {
            enum auth_role role;
            assert(auth_name_valid(rows[i].name));
            assert(auth_role_parse(rows[i].role, &role) == 0);
            assert(memchr(rows[i].display_name, '\0', sizeof(rows[i].display_name)));
            assert(rows[i].line >= 1 && (i == 0 || rows[i].line > rows[i - 1].line));
        }
        free(rows);
    } else if (rc == -EINVAL) {
        assert(strncmp(err, "line ", 5) == 0 || strcmp(err, "the roster has no rows.") == 0);
    }
    free(csv);
    return 0;
}

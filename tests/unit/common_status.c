/*
 * common_status.c - unit tests for common/status.c: the one list of
 * submission statuses the server, the runner and the database share
 * (docs/api.md), and its classes.
 */
#include "status.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

int main(void)
{
    static const char *const api[] = {"queued",        "compiling", "checking",      "running",
                                      "timing",        "graded",    "compile_error", "rejected",
                                      "runtime_error", "timeout",   "system_error",  "superseded"};
    ok(STATUS_COUNT == sizeof(api) / sizeof(api[0]), "%d statuses, as docs/api.md lists",
       (int)STATUS_COUNT);
    for (int i = 0; i < STATUS_COUNT; i++) {
        ok(strcmp(status_name(i), api[i]) == 0, "status %d is named %s", i, api[i]);
        ok(status_parse(api[i]) == i, "%s parses back to %d", api[i], i);
    }
    check(status_parse(NULL) == -1, "NULL is no status");
    check(status_parse("") == -1, "\"\" is no status");
    check(status_parse("Graded") == -1, "names are case-sensitive (the database stores them so)");
    check(status_parse("graded ") == -1, "no trailing space");

    int in_progress = 0, verdicts = 0, final = 0;
    for (int i = 0; i < STATUS_COUNT; i++) {
        in_progress += status_in_progress(status_name(i));
        verdicts += status_verdict(status_name(i));
        final += status_final(status_name(i));
        ok(!(status_in_progress(status_name(i)) && status_final(status_name(i))),
           "%s is not both in progress and final", status_name(i));
    }
    ok(in_progress == 4, "4 in-progress statuses (%d)", in_progress);
    ok(verdicts == 6, "6 verdicts a runner may post (%d)", verdicts);
    ok(final == 7, "7 final statuses: the verdicts and superseded (%d)", final);
    check(!status_verdict("superseded"), "superseded is final but no runner's verdict");
    check(!status_final("queued") && !status_in_progress("queued"), "queued waits: neither");
    check(status_verdict("system_error"), "system_error is a verdict (retried by the queue)");
    check(!status_in_progress(NULL) && !status_final(NULL) && !status_verdict(NULL),
          "NULL is in no class");
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}

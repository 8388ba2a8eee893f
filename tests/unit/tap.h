/*
 * tap.h - the unit tests' one TAP helper (Test Anything Protocol): each
 * check prints "ok N - name" or "not ok N - name"; main prints the plan
 * ("1..N", tap_plan) and exits non-zero when any check failed (tap_exit).
 * tests/run.sh counts the lines.
 */
#ifndef CUGRADE_TESTS_TAP_H
#define CUGRADE_TESTS_TAP_H

#include <stdio.h>

static int failures __attribute__((unused)), count __attribute__((unused));

/* ok(cond, printf-format, ...): one check with a formatted name. */
#define ok(cond, ...)                                                                              \
    do {                                                                                           \
        count++;                                                                                   \
        if (cond) {                                                                                \
            printf("ok %d - ", count);                                                             \
        } else {                                                                                   \
            failures++;                                                                            \
            printf("not ok %d - ", count);                                                         \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
    } while (0)

/* check(cond, name): one check with a plain name. */
static inline void check(int cond, const char *name)
{
    ok(cond, "%s", name);
}

#endif

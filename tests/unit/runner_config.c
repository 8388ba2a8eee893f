/*
 * runner_config.c - the runner's one table of environment switches
 * (runner/config.h): defaults, each kind of value, the sentence of a bad
 * one, the rules between switches, and the printed table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/timing/baseline.h"
#include "runner/grade/compile.h"
#include "runner/config.h"
#include "runner/feedback/profile.h"
#include "runner/sandbox/sandbox.h"
#include "tests/unit/tap.h"

static char err[512];
static struct runner_config c;

/* Parse with only k=v set among the switches this test touches. */
static int parse_with(const char *k, const char *v)
{
    static const char *touched[] = {"CUGRADE_COMPILE_NICE",     "CUGRADE_NO_GPU",
                                    "CUGRADE_SANDBOX_USER",     "CUGRADE_BWRAP",
                                    "CUGRADE_GPU_MEMORY_MB",    "CUGRADE_PROFILE_WAIT",
                                    "CUGRADE_PYTHON",           "CUGRADE_NCU",
                                    "CUGRADE_SANDBOX_UID_BASE", NULL};
    for (size_t i = 0; touched[i]; i++)
        unsetenv(touched[i]);
    if (k)
        setenv(k, v, 1);
    return runner_config_parse(&c, err, sizeof err);
}

extern char **environ;

/* No switch set: the defaults are the table's, whatever the caller's
 * environment holds (tests/run.sh sets CUGRADE_COMPILE_NICE for every
 * suite). */
static void unset_switches(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    for (size_t tries = 0; tries < n; tries++) { /* an entry without '=' stays */
        char **e = environ;
        while (*e && strncmp(*e, "CUGRADE_", 8) != 0)
            e++;
        if (!*e)
            return;
        char *name = strndup(*e, strcspn(*e, "="));
        int r = name ? unsetenv(name) : -1;
        free(name);
        if (r != 0)
            return;
    }
}

int main(void)
{
    unset_switches();
    ok(parse_with(NULL, NULL) == 0, "nothing set: every default parses (%s)", err);
    check(c.no_gpu == 0 && c.profile_wait == 300 && c.compile_nice == 10 &&
              c.sandbox_uid_base == 1900000000L,
          "the table's defaults");
    check(strcmp(c.bwrap, "/usr/bin/bwrap") == 0 && strcmp(c.python, "/usr/bin/python3") == 0 &&
              c.cgroup[0] == '\0',
          "text defaults: a path, or empty when the row has none");
    check(c.gpu_memory_mb == -1 && c.sandbox_user == RUNNER_USER_AUTO,
          "an integer without a default is -1 (unset); choices start at their first");
    check(c.sandbox_uid_base == SANDBOX_BOX_UID_BASE && c.front_seconds == COMPILE_FRONT_SECONDS &&
              c.compile_nice == COMPILE_NICE && strcmp(c.ncu, PROFILE_NCU_DEFAULT) == 0,
          "the table's defaults are the headers' constants (one value, not two)");
    check(parse_with("CUGRADE_COMPILE_NICE", "") == 0 && c.compile_nice == 10,
          "an empty value is unset");

    check(parse_with("CUGRADE_COMPILE_NICE", "19") == 0 && c.compile_nice == 19,
          "an integer at its most");
    ok(parse_with("CUGRADE_COMPILE_NICE", "20") == -EINVAL &&
           strstr(err, "CUGRADE_COMPILE_NICE=20") && strstr(err, "0..19 nice") &&
           strstr(err, "default 10"),
       "one past: -EINVAL naming the switch, the value, the range, the unit, the default (%s)",
       err);
    check(parse_with("CUGRADE_COMPILE_NICE", "2x") == -EINVAL, "junk after the number: an error");
    check(parse_with("CUGRADE_PROFILE_WAIT", "12.5") == 0 && c.profile_wait == 12.5,
          "a real number");
    check(parse_with("CUGRADE_PROFILE_WAIT", "nan") == -EINVAL &&
              parse_with("CUGRADE_PROFILE_WAIT", "86401") == -EINVAL &&
              parse_with("CUGRADE_PROFILE_WAIT", "0") == -EINVAL,
          "NaN, past the most and under the least: errors");
    check(parse_with("CUGRADE_GPU_MEMORY_MB", "0") == 0 && c.gpu_memory_mb == 0,
          "0 set is not unset (-1)");
    check(parse_with("CUGRADE_NO_GPU", "1") == 0 && c.no_gpu == 1, "a boolean 1");
    ok(parse_with("CUGRADE_NO_GPU", "yes") == -EINVAL && strstr(err, "0|1"),
       "a boolean is 0 or 1, nothing else (%s)", err);
    check(parse_with("CUGRADE_SANDBOX_USER", "box") == 0 && c.sandbox_user == RUNNER_USER_BOX &&
              parse_with("CUGRADE_SANDBOX_USER", "root") == 0 && c.sandbox_user == RUNNER_USER_ROOT,
          "a choice is its index");
    ok(parse_with("CUGRADE_SANDBOX_USER", "Root") == -EINVAL && strstr(err, "auto|root|nobody|box"),
       "a choice not listed: the list in the error (%s)", err);
    check(parse_with("CUGRADE_BWRAP", "bin/bwrap") == -EINVAL &&
              parse_with("CUGRADE_BWRAP", "/usr/../tmp/bwrap") == -EINVAL &&
              parse_with("CUGRADE_BWRAP", "/opt/bwrap") == 0 && strcmp(c.bwrap, "/opt/bwrap") == 0,
          "a path is absolute and has no ..");
    check(parse_with("CUGRADE_NCU", "none") == 0 && strcmp(c.ncu, "none") == 0 &&
              parse_with("CUGRADE_NCU", "None") == -EINVAL &&
              parse_with("CUGRADE_NCU", "nonex") == -EINVAL &&
              parse_with("CUGRADE_BWRAP", "none") == -EINVAL,
          "CUGRADE_NCU takes a path or the one word none (profiling off); CUGRADE_BWRAP no word");
    /* A base near 2^32 once passed the table (at most 4294967280) and its
     * boxes wrapped: base + i for i >= 16 was a small uid, root's first. */
    check(4294966295.0 + SANDBOX_BOXES - 1 == 4294967294.0 &&
              parse_with("CUGRADE_SANDBOX_UID_BASE", "4294966295") == 0 &&
              c.sandbox_uid_base == 4294966295L &&
              parse_with("CUGRADE_SANDBOX_UID_BASE", "4294966296") == -EINVAL &&
              parse_with("CUGRADE_SANDBOX_UID_BASE", "4294967280") == -EINVAL,
          "the uid base keeps its last box a uid (at most 2^32 - 2): no wrap to root's uid");
    check(parse_with("CUGRADE_SANDBOX_UID_BASE", "1000") == -EINVAL &&
              parse_with("CUGRADE_SANDBOX_UID_BASE", "65535") == -EINVAL &&
              parse_with("CUGRADE_SANDBOX_UID_BASE", "65536") == 0,
          "nor a box that is a user of the host's (below 65536)");
    ok(parse_with("CUGRADE_NCU", "ncu") == -EINVAL && strstr(err, "an absolute path|none"),
       "the error names both forms (%s)", err);
    char longv[5000];
    memset(longv, 'a', sizeof longv - 1);
    longv[0] = '/';
    longv[sizeof longv - 1] = '\0';
    check(parse_with("CUGRADE_BWRAP", longv) == -EINVAL, "a value longer than its field: an error");

    /* Outside /usr the interpreter is PREFIX/bin/NAME of a venv whose
     * PREFIX the sandbox binds: the prefix must be a directory, not /. */
    char prefix[4096];
    check(parse_with("CUGRADE_PYTHON", "/usr/local/bin/python3") == 0,
          "an interpreter under /usr: no prefix bound");
    check(parse_with("CUGRADE_PYTHON", "/tmp/bin/python3") == 0 &&
              runner_python_prefix("/tmp/bin/python3", prefix, sizeof prefix) == 0 &&
              strcmp(prefix, "/tmp") == 0 &&
              runner_python_prefix("/tmp//bin/python3", prefix, sizeof prefix) == 0 &&
              strcmp(prefix, "/tmp") == 0,
          "a venv's interpreter: its prefix is two folders up");
    ok(parse_with("CUGRADE_PYTHON", "/nonexistent-cugrade/bin/python3") == -EINVAL &&
           strstr(err, "CUGRADE_PYTHON=/nonexistent-cugrade/bin/python3") &&
           strstr(err, "PREFIX/bin/NAME"),
       "a prefix that is no directory: an error naming the form (%s)", err);
    check(parse_with("CUGRADE_PYTHON", "/bin/python3") == -EINVAL &&
              parse_with("CUGRADE_PYTHON", "/opt/python3") == -EINVAL &&
              parse_with("CUGRADE_PYTHON", "/tmp/python/python3") == -EINVAL,
          "nor / as the prefix, nor an interpreter outside a bin/");

    check(parse_with("CUGRADE_COMPILE_NICE", "4") == 0 &&
              runner_config_reload(err, sizeof err) == 0 && runner_cfg()->compile_nice == 4,
          "reload: the configuration in use");
    setenv("CUGRADE_COMPILE_NICE", "99", 1);
    check(runner_config_reload(err, sizeof err) == -EINVAL && runner_cfg()->compile_nice == 4,
          "a failed reload leaves the configuration in use as it was");
    unsetenv("CUGRADE_COMPILE_NICE");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    runner_config_print(f, 1);
    fclose(f);
    check(buf && strstr(buf, "| `CUGRADE_SANDBOX_USER` | auto | auto\\|root\\|nobody\\|box |") &&
              strstr(buf, "**Test hooks"),
          "markdown: one row per switch, a bare | escaped, the test hooks in their own section");
    free(buf);
    check(runner_config_count(-1) == runner_config_count(RUNNER_CONFIG_OPERATOR) +
                                         runner_config_count(RUNNER_CONFIG_TUNING) +
                                         runner_config_count(RUNNER_CONFIG_TEST),
          "every row is of one kind");
    ok(runner_config_count(-1) <= 17, "at most 17 switches in all (%zu; issue 30's ~15)",
       runner_config_count(-1));
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}

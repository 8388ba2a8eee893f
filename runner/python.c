/*
 * python.c - see python.h and docs/python.md.
 */
#include "python.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int python_submission(const char *filename)
{
    size_t n = filename ? strlen(filename) : 0;
    return n > 3 && strcmp(filename + n - 3, ".py") == 0;
}

const char *python_interpreter(void)
{
    const char *p = getenv("CUGRADE_PYTHON");
    /* Only an absolute path under /usr is visible in the sandbox. */
    if (p && strncmp(p, "/usr/", 5) == 0 && !strstr(p, ".."))
        return p;
    return "/usr/bin/python3";
}

void python_seed_env(const char *seed, char *out, size_t len)
{
    snprintf(out, len, "CUGRADE_SEED=%s", seed);
}

int python_simulated(void)
{
    const char *s = getenv("CUGRADE_PY_SIM");
    return s && strcmp(s, "1") == 0;
}

size_t python_owner_argv(const char **argv, size_t cap, const char *lab, const char *mode,
                         const char *seed, const char *cases, const char *max_ms,
                         const char *src, char *path)
{
    size_t n = 0;
    int check = strcmp(mode, "check") == 0;
    assert(cap >= 16);
    snprintf(path, PATH_MAX, "/work/%s", src);
    argv[n++] = python_interpreter();
    argv[n++] = "-I"; /* no PYTHON* variables, no user site, no script dir */
    argv[n++] = "-B"; /* no .pyc written where the tenant could swap it */
    argv[n++] = "/lab/labs/common/py/owner.py";
    argv[n++] = lab;
    argv[n++] = mode;
    (void)seed; /* in the environment: python_seed_env */
    argv[n++] = check ? "--cases" : "--case";
    argv[n++] = cases;
    if (!check && max_ms) {
        argv[n++] = "--max-ms";
        argv[n++] = max_ms;
    }
    argv[n++] = "--file";
    argv[n++] = path;
    argv[n] = NULL;
    return n;
}

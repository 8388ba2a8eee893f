/*
 * status.c - submission status names. See status.h.
 */
#include "status.h"

#include <assert.h>
#include <string.h>

static const char *const names[STATUS_COUNT] = {
    [STATUS_QUEUED] = "queued",
    [STATUS_COMPILING] = "compiling",
    [STATUS_CHECKING] = "checking",
    [STATUS_RUNNING] = "running",
    [STATUS_TIMING] = "timing",
    [STATUS_GRADED] = "graded",
    [STATUS_COMPILE_ERROR] = "compile_error",
    [STATUS_REJECTED] = "rejected",
    [STATUS_RUNTIME_ERROR] = "runtime_error",
    [STATUS_TIMEOUT] = "timeout",
    [STATUS_SYSTEM_ERROR] = "system_error",
    [STATUS_SUPERSEDED] = "superseded",
};

const char *status_name(enum status s)
{
    assert(s >= 0 && s < STATUS_COUNT);
    return names[s];
}

int status_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < STATUS_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int status_in_progress(const char *name)
{
    int s = status_parse(name);
    return s >= STATUS_COMPILING && s <= STATUS_TIMING;
}

int status_verdict(const char *name)
{
    int s = status_parse(name);
    return s >= STATUS_GRADED && s <= STATUS_SYSTEM_ERROR;
}

int status_final(const char *name)
{
    return status_verdict(name) || status_parse(name) == STATUS_SUPERSEDED;
}

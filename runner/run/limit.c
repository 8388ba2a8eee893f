/*
 * limit.c - wall limits derived from the lab's naive reference (limit.h).
 */
#include "runner/run/limit.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void limit_compute(const struct lab *lab, double naive_seconds, double time_max_ms,
                   struct run_limits *out)
{
    assert(lab && out);
    double ceiling = lab->run_seconds > 0 ? lab->run_seconds : 120;
    memset(out, 0, sizeof *out);
    out->ceiling = ceiling;
    out->check = ceiling;
    if (lab->derive_factor > 0 && naive_seconds > 0 && isfinite(naive_seconds)) {
        double d = fmax(lab->derive_floor_seconds, lab->derive_factor * naive_seconds) +
                   lab->derive_startup_seconds;
        out->naive_seconds = naive_seconds;
        if (d < ceiling) {
            out->check = d;
            out->derived = 1;
            out->factor = lab->derive_factor;
            out->floor = lab->derive_floor_seconds;
            out->startup = lab->derive_startup_seconds;
        }
    }
    /* The timing run is one case, warmed up, then samples for at most
     * time_max_ms, then a re-check on fresh inputs: the check's bound
     * covers the case twice over, plus the sample budget. */
    out->timing = fmin(ceiling * 2, out->check + 2 * time_max_ms / 1000.0);
    /* compute-sanitizer on the small sanitize case: racecheck costs tens
     * of times the plain run, but on a small case; three check limits is
     * generous and still bounded (they hold the shared GPU lock). */
    out->sanitize = fmin(ceiling * 3, fmax(30, 3 * out->check));
    assert(out->check > 0 && out->timing >= out->check && out->sanitize > 0);
}

char *limit_timeout_message(const struct run_limits *l, double limit_seconds, const char *case_name,
                            char *buf, size_t len)
{
    char where[160] = "";
    if (case_name && *case_name)
        snprintf(where, sizeof where, " while case %.100s was running", case_name);
    if (l->derived)
        snprintf(
            buf, len,
            "Your program ran past its time limit of %.1f s%s. The limit comes from the "
            "naive reference's time for the same run on this GPU (%.2f s): %g times that, "
            "at least %g s, plus %g s of start-up. Look for a loop that never ends (a while loop whose condition "
            "never changes, a grid-stride loop whose stride is 0) or a kernel launched "
            "far more often than needed.",
            limit_seconds, where, l->naive_seconds, l->factor, l->floor, l->startup);
    else
        snprintf(buf, len,
                 "Your program ran past its time limit of %.1f s%s: look for a loop that never "
                 "ends or a kernel launched far more often than needed.",
                 limit_seconds, where);
    return buf;
}

char *limit_timing_message(double limit_seconds, const char *case_name, char *buf, size_t len)
{
    snprintf(buf, len,
             "Your program's timing run ran past its time limit of %.1f s on case %.100s (its "
             "start-up and its calls; the wait for the GPU is not counted). The timing run "
             "calls your function many times in a row, at least ten after its warm-up calls: "
             "a function that takes seconds per call, or one that gets slower with every call "
             "(state kept between calls, memory allocated on each call), runs out of time here "
             "though its check run did not.",
             limit_seconds, case_name && *case_name ? case_name : "?");
    return buf;
}

double limit_cache_read(const char *path)
{
    json_t *doc = json_load_file(path, 0, NULL);
    double s = json_number_value(json_object_get(doc, "naive_seconds"));
    json_decref(doc);
    return s > 0 && isfinite(s) ? s : 0;
}

int limit_cache_write(const char *path, double naive_seconds)
{
    char tmp[4200];
    int r = 0;
    if (!(naive_seconds > 0) || strlen(path) > 4000)
        return -EINVAL;
    json_t *doc = json_pack("{s:f}", "naive_seconds", naive_seconds);
    char *txt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!txt)
        return -ENOMEM;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        r = -errno;
    } else {
        size_t n = strlen(txt);
        if (write(fd, txt, n) != (ssize_t)n)
            r = -EIO;
        if (close(fd) < 0 && r == 0)
            r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
            r = -errno;
        if (r < 0)
            unlink(tmp);
    }
    free(txt);
    return r;
}

/*
 * runner_limit.c - unit tests for runner/run/limit.c: wall limits derived from
 * the naive reference (floor, factor, start-up, the run_seconds ceiling, no
 * measurement), the timeout sentence, and the cache file. Prints TAP lines.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/run/limit.h"

#include "tests/unit/tap.h"

static void lab_with(struct lab *lab, double run, double factor, double floor_s, double startup)
{
    memset(lab, 0, sizeof *lab);
    lab->name = "reduction";
    lab->run_seconds = run;
    lab->derive_factor = factor;
    lab->derive_floor_seconds = floor_s;
    lab->derive_startup_seconds = startup;
}

int main(void)
{
    struct lab lab;
    struct run_limits l;
    char msg[1024], path[] = "/tmp/cugrade-limit-XXXXXX";

    lab_with(&lab, 300, 5, 10, 2);
    limit_compute(&lab, 1.0, 3000, &l);
    check(l.derived && l.check == 12, "a fast naive run: the floor (10 s) plus start-up (2 s)");
    limit_compute(&lab, 4.0, 3000, &l);
    check(l.derived && l.check == 22, "a slow naive run: 5 x 4 s plus 2 s");
    check(l.timing == 28, "the timing run: the check's limit plus twice the sample budget");
    check(l.sanitize == 66, "the sanitizers: three check limits");
    limit_compute(&lab, 100.0, 3000, &l);
    check(!l.derived && l.check == 300, "past run_seconds the ceiling holds, not derived");
    limit_compute(&lab, 0, 3000, &l);
    check(!l.derived && l.check == 300 && l.sanitize == 900 && l.timing == 306,
          "no measurement: run_seconds as before");
    limit_compute(&lab, NAN, 3000, &l);
    check(!l.derived && l.check == 300, "a NAN measurement is no measurement");
    lab_with(&lab, 300, 0, 0, 0);
    limit_compute(&lab, 1.0, 3000, &l);
    check(!l.derived && l.check == 300, "a lab without limits.derive keeps run_seconds");
    lab_with(&lab, 4, 5, 1, 1);
    limit_compute(&lab, 0.3, 3000, &l);
    check(l.derived && fabs(l.check - 2.5) < 1e-9 && l.sanitize == 12,
          "small numbers: 5 x 0.3 s + 1 s; the sanitizers: at least 30 s but never past 3 x run_seconds");

    lab_with(&lab, 300, 5, 10, 2);
    limit_compute(&lab, 1.5, 3000, &l);
    limit_timeout_message(&l, l.check, "2.5e9", msg, sizeof msg);
    check(strstr(msg, "12.0 s") && strstr(msg, "case 2.5e9") && strstr(msg, "naive reference") &&
              strstr(msg, "1.50 s"),
          "the timeout sentence names the limit, the case and the naive time");
    limit_timeout_message(&l, l.check, NULL, msg, sizeof msg);
    check(!strstr(msg, "case"), "no case in progress: none named");
    lab_with(&lab, 300, 0, 0, 0);
    limit_compute(&lab, 0, 3000, &l);
    limit_timeout_message(&l, l.check, "1000", msg, sizeof msg);
    check(strstr(msg, "300.0 s") && !strstr(msg, "naive"), "a flat limit is not called derived");

    int fd = mkstemp(path);
    check(fd >= 0, "a temporary file");
    if (fd >= 0)
        close(fd);
    check(limit_cache_write(path, 2.25) == 0 && limit_cache_read(path) == 2.25,
          "the cache round-trips");
    check(limit_cache_write(path, 0) < 0 && limit_cache_write(path, -1) < 0,
          "no measurement is never cached");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"naive_seconds\": \"fast\"}", f);
        fclose(f);
    }
    check(limit_cache_read(path) == 0, "a corrupt cache reads as no measurement");
    unlink(path);
    check(limit_cache_read(path) == 0, "a missing cache reads as no measurement");

    return failures ? 1 : 0;
}

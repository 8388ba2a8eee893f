/*
 * formula.c - libFuzzer target: common/formula.c, as a lab.json "work"
 * formula reaches it (lab_load evaluates each one over every case's
 * params). The input is the formula; the params are a fixed case with a
 * zero among them (a division by it must be refused, not returned). An
 * accepted formula has a finite value; a refused one says why.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/formula.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *params;
    char *expr = malloc(size + 1), err[160];
    double v = NAN;
    if (!expr)
        return 0;
    if (!params)
        params = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f}", "M", 3, "N", 5, "K", 7, "n", 0,
                           "vocab", 1000000, "dim", 4096, "num_indices", 2.5);
    memcpy(expr, data, size);
    expr[size] = '\0'; /* a NUL inside ends the formula early, as a C string would */
    err[0] = '\0';
    int rc = formula_eval(expr, params, &v, err, sizeof err);
    assert(rc == 0 || rc == -EINVAL);
    if (rc == 0)
        assert(isfinite(v));
    else
        assert(err[0] != '\0');
    free(expr);
    return 0;
}

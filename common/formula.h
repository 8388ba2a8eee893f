/*
 * formula.h - a small arithmetic formula over a case's parameters, as a lab
 * writes its work in lab.json ("work": {"flops": "2*M*N*K"}): numbers, the
 * case's parameter names, + - * /, parentheses, unary minus, and max(...)
 * and min(...) of one or more arguments. Used by common/lab.c so that what
 * a case costs (bytes moved, flops, elements a buffer holds) is data of the
 * lab, not a branch on the lab's name in the runner.
 */
#ifndef CUGRADE_FORMULA_H
#define CUGRADE_FORMULA_H

#include <stddef.h>
#include <jansson.h>

/* Evaluate expr with each name bound to the number of that key in vars (a
 * JSON object; may be NULL: then no name is bound). Returns 0 with the
 * value in *out, or -EINVAL with a sentence in err ("unknown name \"Q\"",
 * "expected a number, a name or '(' at \"*K\"") for a formula that does not
 * parse or names a parameter vars lacks. */
int formula_eval(const char *expr, const json_t *vars, double *out, char *err, size_t errlen);

#endif

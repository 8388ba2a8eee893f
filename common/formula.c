/*
 * formula.c - see formula.h. A recursive-descent evaluator:
 *
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := number | name | name '(' expr (',' expr)* ')' | '(' expr ')' | '-' factor
 *
 * Nesting is bounded so that a malformed lab.json cannot exhaust the stack.
 */
#include "formula.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMULA__DEPTH 32

struct formula__p {
    const char *s;       /* the next character */
    const json_t *vars;
    char *err;
    size_t errlen;
    int depth;
};

static int formula__fail(struct formula__p *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int formula__fail(struct formula__p *p, const char *fmt, ...)
{
    va_list ap;
    if (p->err && p->errlen) {
        va_start(ap, fmt);
        vsnprintf(p->err, p->errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static void formula__space(struct formula__p *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static int formula__expr(struct formula__p *p, double *out);

/* name(args): max or min of one or more expressions. */
static int formula__call(struct formula__p *p, const char *name, size_t len, double *out)
{
    int is_max = len == 3 && strncmp(name, "max", 3) == 0;
    if (!is_max && !(len == 3 && strncmp(name, "min", 3) == 0))
        return formula__fail(p, "unknown function \"%.*s\" (max and min are known)", (int)len,
                             name);
    p->s++; /* '(' */
    for (int first = 1;; first = 0) {
        double v;
        int rc = formula__expr(p, &v);
        if (rc < 0)
            return rc;
        *out = first ? v : is_max ? fmax(*out, v) : fmin(*out, v);
        formula__space(p);
        if (*p->s == ')') {
            p->s++;
            return 0;
        }
        if (*p->s != ',')
            return formula__fail(p, "expected ',' or ')' at \"%.20s\"", p->s);
        p->s++;
    }
}

/* A parameter of the case, or a call. */
static int formula__name(struct formula__p *p, double *out)
{
    const char *name = p->s;
    while (isalnum((unsigned char)*p->s) || *p->s == '_')
        p->s++;
    size_t len = (size_t)(p->s - name);
    formula__space(p);
    if (*p->s == '(')
        return formula__call(p, name, len, out);
    char key[64];
    if (len >= sizeof key)
        return formula__fail(p, "name too long at \"%.20s\"", name);
    memcpy(key, name, len);
    key[len] = '\0';
    const json_t *v = p->vars ? json_object_get(p->vars, key) : NULL;
    if (!json_is_number(v))
        return formula__fail(p, "unknown name \"%s\" (not a number among the case's params)",
                             key);
    *out = json_number_value(v);
    return 0;
}

static int formula__factor(struct formula__p *p, double *out)
{
    int rc;
    formula__space(p);
    if (++p->depth > FORMULA__DEPTH)
        return formula__fail(p, "nested too deeply");
    if (*p->s == '-') {
        p->s++;
        rc = formula__factor(p, out);
        *out = -*out;
    } else if (*p->s == '(') {
        p->s++;
        rc = formula__expr(p, out);
        formula__space(p);
        if (rc == 0 && *p->s != ')')
            rc = formula__fail(p, "expected ')'");
        else if (rc == 0)
            p->s++; /* never past the terminating NUL */
    } else if (isdigit((unsigned char)*p->s) || *p->s == '.') {
        char *end;
        *out = strtod(p->s, &end);
        p->s = end;
        rc = 0;
    } else if (isalpha((unsigned char)*p->s) || *p->s == '_') {
        rc = formula__name(p, out);
    } else {
        rc = formula__fail(p, "expected a number, a name or '(' at \"%.20s\"", p->s);
    }
    p->depth--;
    return rc;
}

static int formula__term(struct formula__p *p, double *out)
{
    int rc = formula__factor(p, out);
    for (formula__space(p); rc == 0 && (*p->s == '*' || *p->s == '/'); formula__space(p)) {
        char op = *p->s++;
        double v;
        rc = formula__factor(p, &v);
        *out = op == '*' ? *out * v : *out / v;
    }
    return rc;
}

static int formula__expr(struct formula__p *p, double *out)
{
    int rc = formula__term(p, out);
    for (formula__space(p); rc == 0 && (*p->s == '+' || *p->s == '-'); formula__space(p)) {
        char op = *p->s++;
        double v;
        rc = formula__term(p, &v);
        *out = op == '+' ? *out + v : *out - v;
    }
    return rc;
}

/* Evaluate expr over vars; see formula.h. */
int formula_eval(const char *expr, const json_t *vars, double *out, char *err, size_t errlen)
{
    struct formula__p p = {expr ? expr : "", vars, err, errlen, 0};
    double v = NAN;
    int rc = formula__expr(&p, &v);
    if (rc == 0) {
        formula__space(&p);
        if (*p.s)
            rc = formula__fail(&p, "unexpected \"%.20s\"", p.s);
    }
    if (rc == 0 && !isfinite(v))
        rc = formula__fail(&p, "the value is not finite (a division by zero?)");
    if (rc == 0)
        *out = v;
    return rc;
}

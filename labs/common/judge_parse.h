/*
 * judge_parse.h - the judge's parser of one channel record (hostile input:
 * the channel is written by a process that runs student code): a flat JSON
 * object whose values are strings, numbers, booleans, null or arrays of
 * numbers. Included by judge_common.cu; plain C and C++, so that the fuzz
 * target tests/fuzz/channel.c runs it too. A string field longer than
 * CHANNEL_FIELD_MAX (channel_limits.h) is cut with CHANNEL_CUT_MARK, never
 * refused: a refused record would end the judge's reading of the channel.
 */
#ifndef CUGRADE_JUDGE_PARSE_H
#define CUGRADE_JUDGE_PARSE_H

#include "channel_limits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JD_MAX_KEYS 32
#define JD_MAX_STR (CHANNEL_FIELD_MAX + 1)
#define JD_MAX_ARRAY 100000

enum jd_type { JD_STR, JD_NUM, JD_BOOL, JD_NULL, JD_ARR };

struct jd_val {
    char key[64];
    enum jd_type type;
    char str[JD_MAX_STR];
    double num;
    int b;
    double *arr;
    size_t narr;
};

struct jd_obj {
    struct jd_val v[JD_MAX_KEYS];
    int n;
};

static void jd_obj_clear(struct jd_obj *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i].arr);
    o->n = 0;
}

static const struct jd_val *jd_get(const struct jd_obj *o, const char *key, enum jd_type t)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->v[i].key, key) == 0)
            return o->v[i].type == t ? &o->v[i] : NULL;
    return NULL;
}

struct jd_cur {
    const char *p, *end;
};

static void jd_ws(struct jd_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

/* A JSON string into out (at most cap-1 bytes). Longer: with cut, the
 * string is kept to cap-1 bytes ending in CHANNEL_CUT_MARK (a record field);
 * without, an error (a key). \uXXXX outside ASCII becomes '?': names and
 * messages are ASCII. */
static int jd_parse_str(struct jd_cur *c, char *out, size_t cap, int cut)
{
    size_t n = 0, mark = sizeof(CHANNEL_CUT_MARK) - 1;
    int over = 0;
    if (c->p >= c->end || *c->p != '"')
        return -1;
    c->p++;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if ((unsigned char)ch < 0x20)
            return -1;
        if (ch == '\\') {
            if (c->p >= c->end)
                return -1;
            ch = *c->p++;
            switch (ch) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case '"': case '\\': case '/': break;
            case 'u': {
                unsigned v = 0;
                if (c->end - c->p < 4)
                    return -1;
                for (int i = 0; i < 4; i++) {
                    int h = (unsigned char)*c->p++, d;
                    if (h >= '0' && h <= '9')
                        d = h - '0';
                    else if ((h | 32) >= 'a' && (h | 32) <= 'f')
                        d = (h | 32) - 'a' + 10;
                    else
                        return -1;
                    v = v * 16 + (unsigned)d;
                }
                if (v == 0)   /* a NUL would cut "1\u0000x" to the case name "1" */
                    return -1;
                ch = v < 0x80 ? (char)v : '?';
                break;
            }
            default:
                return -1;
            }
        }
        if (n + 1 >= cap) {
            if (!cut)
                return -1;
            over = 1; /* read on to the closing quote, keep nothing more */
            continue;
        }
        out[n++] = ch;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    if (over) {
        n = cap - 1 > mark ? cap - 1 - mark : 0;
        memcpy(out + n, CHANNEL_CUT_MARK, cap - 1 - n);
        n = cap - 1;
    }
    out[n] = '\0';
    return 0;
}

static int jd_parse_num(struct jd_cur *c, double *out)
{
    char buf[64];
    size_t n = 0;
    char *end;
    while (c->p < c->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", *c->p))
        buf[n++] = *c->p++;
    buf[n] = '\0';
    if (n == 0 || n == sizeof(buf) - 1)
        return -1;
    errno = 0;
    *out = strtod(buf, &end);
    if (*end != '\0' || !isfinite(*out))
        return -1;
    return 0;
}

/* Parse one record: a flat object whose values are strings, numbers,
 * booleans, null, or arrays of numbers. Anything else is malformed. */
static int jd_parse_obj(const char *line, size_t len, struct jd_obj *o)
{
    struct jd_cur c = {line, line + len};
    o->n = 0;
    jd_ws(&c);
    if (c.p >= c.end || *c.p++ != '{')
        return -1;
    jd_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
        goto tail;
    }
    for (;;) {
        struct jd_val *v;
        if (o->n == JD_MAX_KEYS)
            return -1;
        v = &o->v[o->n];
        memset(v, 0, sizeof(*v));
        jd_ws(&c);
        if (jd_parse_str(&c, v->key, sizeof(v->key), 0) != 0)
            return -1;
        for (int i = 0; i < o->n; i++)   /* a duplicate key could smuggle a second value */
            if (strcmp(o->v[i].key, v->key) == 0)
                return -1;
        jd_ws(&c);
        if (c.p >= c.end || *c.p++ != ':')
            return -1;
        jd_ws(&c);
        if (c.p >= c.end)
            return -1;
        o->n++;
        if (*c.p == '"') {
            v->type = JD_STR;
            if (jd_parse_str(&c, v->str, sizeof(v->str), 1) != 0)
                return -1;
        } else if (c.end - c.p >= 4 && memcmp(c.p, "true", 4) == 0) {
            v->type = JD_BOOL, v->b = 1, c.p += 4;
        } else if (c.end - c.p >= 5 && memcmp(c.p, "false", 5) == 0) {
            v->type = JD_BOOL, v->b = 0, c.p += 5;
        } else if (c.end - c.p >= 4 && memcmp(c.p, "null", 4) == 0) {
            v->type = JD_NULL, c.p += 4;
        } else if (*c.p == '[') {
            size_t cap = 0;
            v->type = JD_ARR;
            c.p++;
            jd_ws(&c);
            if (c.p < c.end && *c.p == ']') {
                c.p++;
            } else {
                for (;;) {
                    double x;
                    jd_ws(&c);
                    if (jd_parse_num(&c, &x) != 0 || v->narr == JD_MAX_ARRAY)
                        return -1;
                    if (v->narr == cap) {
                        double *t;
                        cap = cap ? cap * 2 : 64;
                        t = (double *)realloc(v->arr, cap * sizeof(double));
                        if (t == NULL)
                            return -1;
                        v->arr = t;
                    }
                    v->arr[v->narr++] = x;
                    jd_ws(&c);
                    if (c.p < c.end && *c.p == ',') {
                        c.p++;
                        continue;
                    }
                    if (c.p < c.end && *c.p == ']') {
                        c.p++;
                        break;
                    }
                    return -1;
                }
            }
        } else {
            v->type = JD_NUM;
            if (jd_parse_num(&c, &v->num) != 0)
                return -1;
        }
        jd_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        return -1;
    }
tail:
    jd_ws(&c);
    return c.p == c.end ? 0 : -1;
}

#endif

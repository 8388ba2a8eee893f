/*
 * common_judge_parse.c - the judge's record parser (labs/common/judge_parse.h)
 * and the channel's one field limit (labs/common/channel_limits.h): a string
 * field longer than CHANNEL_FIELD_MAX is cut to exactly that many bytes
 * ending in CHANNEL_CUT_MARK, never refused (a refused record ended the
 * judge's reading: every later case was "not run"); a key stays strict.
 */
#include "labs/common/judge_parse.h"
#include "tests/unit/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct jd_obj o;

/* A record {"type":"case","name":"1","cause":"<fill x n><tail>"}. */
static char *record(const char *fill, size_t n, const char *tail)
{
    size_t fl = strlen(fill), cap = 64 + fl * n + strlen(tail);
    char *s = malloc(cap);
    size_t k = (size_t)snprintf(s, cap, "{\"type\":\"case\",\"name\":\"1\",\"cause\":\"");
    for (size_t i = 0; i < n; i++, k += fl)
        memcpy(s + k, fill, fl);
    snprintf(s + k, cap - k, "%s\",\"status\":\"runtime_error\"}", tail);
    return s;
}

static const char *cause(const char *line)
{
    jd_obj_clear(&o);
    if (jd_parse_obj(line, strlen(line), &o) != 0)
        return NULL;
    const struct jd_val *v = jd_get(&o, "cause", JD_STR);
    const struct jd_val *s = jd_get(&o, "status", JD_STR);
    return v && s && strcmp(s->str, "runtime_error") == 0 ? v->str : NULL;
}

static int ends_cut(const char *s)
{
    size_t l = strlen(s), m = strlen(CHANNEL_CUT_MARK);
    return l >= m && strcmp(s + l - m, CHANNEL_CUT_MARK) == 0;
}

int main(void)
{
    char *r = record("x", 900, "");
    const char *c = cause(r);
    ok(c && strlen(c) == 900 && !ends_cut(c), "a 900-byte field (an assertion on one long line) "
       "is kept whole");
    free(r);

    r = record("x", CHANNEL_FIELD_MAX, "");
    c = cause(r);
    ok(c && strlen(c) == CHANNEL_FIELD_MAX && !ends_cut(c), "a field of exactly the limit (%d) "
       "is kept whole", CHANNEL_FIELD_MAX);
    free(r);

    r = record("x", CHANNEL_FIELD_MAX, "y");
    c = cause(r);
    ok(c && strlen(c) == CHANNEL_FIELD_MAX && ends_cut(c),
       "one byte past the limit: cut to the limit, ending in the mark, the rest of the record "
       "still read");
    free(r);

    r = record("\\u00e9\\n", 100000, "");
    c = cause(r);
    ok(c && strlen(c) == CHANNEL_FIELD_MAX && ends_cut(c) && c[0] == '?' && c[1] == '\n',
       "200000 escapes (a writer that did not cut): one byte each, cut with the mark");
    free(r);

    r = record("\\u00", 1, "");
    ok(cause(r) == NULL, "a broken escape is still malformed");
    free(r);

    char key[200];
    snprintf(key, sizeof key, "{\"%0100d\":1}", 0);
    jd_obj_clear(&o);
    ok(jd_parse_obj(key, strlen(key), &o) != 0, "a key longer than the parser's is refused "
       "(keys are ours, and a cut key could collide with another)");

    /* Record after record, as the judge reads a channel: a long field in
     * case 1 leaves case 2 readable. */
    char *r1 = record("z", 3 * CHANNEL_FIELD_MAX, "");
    const char *r2 = "{\"type\":\"case\",\"name\":\"2\",\"status\":\"runtime_error\",\"cause\":\"ok\"}";
    ok(cause(r1) != NULL && cause(r2) != NULL && strcmp(cause(r2), "ok") == 0,
       "a record after a long one is read as usual");
    free(r1);
    jd_obj_clear(&o);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}

/*
 * source.c - see source.h: the student's source read as text, for the
 * hints (runner/feedback/hint.c). It is read outside any sandbox, never compiled or
 * run here, and every scan is bounded by its length.
 */
#include "runner/feedback/source.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The source, read as text. The runner reads it outside any sandbox, so
 * every scan is bounded: a hostile file (a million nested ifs, one line of
 * a=a=a=...) costs at most a few hundred million character steps. */

#define SOURCE_MAX (256u << 10) /* longer sources get no source-based hint */
#define SCAN_STATEMENT 512      /* an assignment's right side, read at most */
#define SCAN_BODY (16u << 10)   /* a branch's body, searched for a barrier */
#define SCAN_HITS 4096          /* if/while/for looked at, and assignments per pass */
#define SCAN_LAUNCHES 64        /* launches whose configuration is worked out */
#define SCAN_GROUP (64u << 10)  /* a (...) or {...} followed to its end */

static int line_of(const char *s, const char *p)
{
    int line = 1;
    for (; s < p; s++)
        line += *s == '\n';
    return line;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Blank [p, end) but its newlines. */
static void blank(char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != '\n')
            *p = ' ';
}

/* The end of a quoted literal that opens at q (q[0] is the quote, tlen 1
 * or 3 quote characters): the first character after it, or the end of
 * the line (an unterminated one-line literal) or of the text. A
 * backslash escapes the next character, in raw strings too (r"\"" is
 * one string). */
static char *literal_end(char *q, size_t tlen)
{
    char c = *q;
    char *p = q + tlen;
    while (*p) {
        if (*p == '\\' && p[1]) {
            p += 2;
            continue;
        }
        if (tlen == 1 && *p == '\n')
            return p;
        if (*p == c && (tlen == 1 || (p[1] == c && p[2] == c)))
            return p + tlen;
        p++;
    }
    return p;
}

/* A Python string prefix (r, b, f, u, rb, br, fr, rf, any case) that ends
 * just before the quote at q, starting at s: its length, 0 when none. */
static size_t py_prefix(const char *s, const char *q)
{
    size_t n = 0;
    while (q - n > s && n < 2 && strchr("rRbBfFuU", q[-(long)n - 1]))
        n++;
    while (n > 0 && q - n > s && ident_char(q[-(long)n - 1]))
        n--; /* "ptr'..." is no prefix: the letters end a longer name */
    return n;
}

/* A C++ raw string R"delim( ... )delim" at p ('R'): its end, or NULL. */
static char *c_raw_end(char *p)
{
    char *o = memchr(p + 2, '(', strnlen(p + 2, 17)); /* a delimiter is at most 16 */
    if (!o)
        return NULL;
    char close[20];
    snprintf(close, sizeof close, ")%.*s\"", (int)(o - (p + 2)), p + 2);
    char *e = strstr(o, close);
    return e ? e + strlen(close) : o + strlen(o);
}

/* A copy of the source with comments and string and character literals
 * blanked (newlines kept, so lines still count). Python: '#' comments and
 * every string form (', ", ''', """, with r/b/f/u prefixes); CUDA C: //
 * and block comments, "..." and '...' (escapes), and R"(...)" raw strings.
 * Caller frees; NULL when there is no source or no memory. */
char *source_code(const char *source, size_t source_len, int python)
{
    if (!source || !source_len || source_len > SOURCE_MAX)
        return NULL;
    char *s = malloc(source_len + 1);
    if (!s)
        return NULL;
    memcpy(s, source, source_len);
    s[source_len] = '\0';
    for (size_t i = 0; i < source_len; i++) {
        if (s[i] == '\0')
            s[i] = ' ';
    }
    for (char *p = s; *p;) {
        char *e = NULL;
        /* unterminated: to the end (each scan starts past the last) */
        if ((!python && p[0] == '/' && p[1] == '/') || (python && *p == '#')) {
            e = strchr(p, '\n');
            e = e ? e : p + strlen(p);
        } else if (!python && p[0] == '/' && p[1] == '*') {
            e = strstr(p + 2, "*/");
            e = e ? e + 2 : p + strlen(p);
        } else if (!python && *p == 'R' && p[1] == '"' && (p == s || !ident_char(p[-1]))) {
            e = c_raw_end(p);
        } else if (*p == '"' || *p == '\'') {
            size_t tlen = python && p[1] == *p && p[2] == *p ? 3 : 1;
            e = literal_end(p, tlen);
            if (python)
                p -= py_prefix(s, p); /* not blanked yet: letters */
        }
        if (!e) {
            p++;
            continue;
        }
        blank(p, e);
        p = e;
    }
    return s;
}

/* The names that hold a thread-dependent value ("tid = threadIdx.x",
 * "i = cuda.grid(1)", and what is computed from them), at most 32. */
struct taint {
    size_t n;
    char name[32][48];
};

/* Does [p, p+len) mention threadIdx, cuda.grid, a lane id, or a tainted
 * name (as a whole word)? */
static int taint_mentions(const struct taint *t, const char *p, size_t len)
{
    static const char *const roots[] = {"threadIdx", "cuda.grid", "laneid", "lane_id", NULL};
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && ident_char(p[i - 1]))
            continue;
        for (size_t r = 0; roots[r]; r++)
            if (strncmp(p + i, roots[r], strlen(roots[r])) == 0 && i + strlen(roots[r]) <= len)
                return 1;
        for (size_t k = 0; k < t->n; k++) {
            size_t m = strlen(t->name[k]);
            if (i + m <= len && strncmp(p + i, t->name[k], m) == 0 &&
                (i + m == len || !ident_char(p[i + m])))
                return 1;
        }
    }
    return 0;
}

static void taint_add(struct taint *t, const char *p, size_t len)
{
    if (len == 0 || len >= sizeof t->name[0] || t->n >= 32)
        return;
    for (size_t k = 0; k < t->n; k++)
        if (strlen(t->name[k]) == len && strncmp(t->name[k], p, len) == 0)
            return;
    memcpy(t->name[t->n], p, len);
    t->name[t->n++][len] = '\0';
}

/* Every "name = <expr>" (not ==, <=, +=...) whose expression is
 * thread-dependent taints name; three passes follow chains of them. In
 * Python "a, b = ..." taints both. */
static void taint_build(const char *s, int python, struct taint *t)
{
    t->n = 0;
    for (int pass = 0; pass < 3; pass++) {
        size_t seen = 0;
        for (const char *p = s; *p && seen < SCAN_HITS; p++) {
            if (*p != '=' || p[1] == '=' || p == s || strchr("=<>!+-*/%&|^", p[-1]))
                continue;
            seen++;
            const char *end = p + 1;
            while (*end && *end != ';' && *end != '\n' && *end != '{' && end - p < SCAN_STATEMENT)
                end++;
            if (!taint_mentions(t, p + 1, (size_t)(end - p - 1)))
                continue;
            /* the plain names left of '=' (not s[i], p->x, a.b), back to
             * the statement's start; C: only the last ("int i = ...") */
            const char *b = p;
            while (b > s && !strchr(";{}\n(", b[-1]))
                b--;
            const char *q = p;
            for (;;) {
                while (q > b && (q[-1] == ' ' || q[-1] == '\t'))
                    q--;
                const char *e = q;
                while (q > b && ident_char(q[-1]))
                    q--;
                if (e == q || isdigit((unsigned char)*q) ||
                    (q > b && (q[-1] == '.' || q[-1] == '>')))
                    break;
                taint_add(t, q, (size_t)(e - q));
                while (q > b && (q[-1] == ' ' || q[-1] == '\t'))
                    q--;
                if (!python || q == b || q[-1] != ',')
                    break;
                q--;
            }
        }
    }
}

/* The end of the balanced group that opens at *p ('(' or '{'), or NULL. */
static const char *group_end(const char *p)
{
    char open = *p, close = open == '(' ? ')' : open == '{' ? '}' : ']';
    int depth = 0;
    for (const char *start = p; *p && p - start < (long)SCAN_GROUP; p++) {
        depth += *p == open;
        depth -= *p == close;
        if (depth == 0)
            return p;
    }
    return NULL;
}

static const char *word_find(const char *s, const char *w, const char *end)
{
    size_t n = strlen(w);
    for (const char *p = s; p && *p && (!end || p + n <= end); p++)
        if (strncmp(p, w, n) == 0 && (p == s || !ident_char(p[-1])) && !ident_char(p[n]))
            return p;
    return NULL;
}

/* A barrier under a thread-dependent condition: C's if/while/for with a
 * body holding __syncthreads(). Fills line and cond; 1 when found. */
static int barrier_divergent_c(const char *s, const struct taint *t, int *line, char *cond,
                               size_t clen)
{
    static const char *const kw[] = {"if", "while", "for", NULL};
    size_t hits = 0;
    for (size_t k = 0; kw[k]; k++)
        for (const char *p = word_find(s, kw[k], NULL); p && hits++ < SCAN_HITS;
             p = word_find(p + 1, kw[k], NULL)) {
            const char *o = p + strlen(kw[k]);
            while (*o == ' ' || *o == '\t' || *o == '\n')
                o++;
            const char *c = *o == '(' ? group_end(o) : NULL;
            if (!c)
                continue;
            const char *cs = o + 1, *ce = c;
            if (k == 2) { /* for (init; cond; step): the condition only */
                const char *a = memchr(cs, ';', (size_t)(ce - cs));
                const char *b = a ? memchr(a + 1, ';', (size_t)(ce - a - 1)) : NULL;
                if (!a || !b)
                    continue;
                cs = a + 1;
                ce = b;
            }
            if (!taint_mentions(t, cs, (size_t)(ce - cs)))
                continue;
            const char *body = c + 1;
            while (*body == ' ' || *body == '\t' || *body == '\n')
                body++;
            const char *bend = *body == '{' ? group_end(body) : strchr(body, ';');
            if (bend && bend - body > (long)SCAN_BODY)
                bend = body + SCAN_BODY;
            const char *sync = bend ? word_find(body, "__syncthreads", bend) : NULL;
            if (!sync)
                continue;
            *line = line_of(s, sync);
            size_t n = (size_t)(ce - cs);
            while (n && isspace((unsigned char)*cs))
                cs++, n--;
            snprintf(cond, clen, "%.*s", (int)(n > 60 ? 60 : n), cs);
            for (char *x = cond; *x; x++)
                if (*x == '\n' || *x == '`')
                    *x = ' ';
            return 1;
        }
    return 0;
}

static size_t indent_of(const char *l)
{
    size_t n = 0;
    while (l[n] == ' ' || l[n] == '\t')
        n++;
    return n;
}

/* The same for Python: an if/elif/while/for line whose condition is
 * thread-dependent, with cuda.syncthreads() in the lines indented under
 * it. */
static int barrier_divergent_py(const char *s, const struct taint *t, int *line, char *cond,
                                size_t clen)
{
    static const char *const kw[] = {"if ", "elif ", "while ", "for ", NULL};
    size_t hits = 0;
    for (const char *l = s; *l && hits < SCAN_HITS;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        size_t ind = indent_of(l);
        const char *eol = strchr(l, '\n');
        size_t llen = eol ? (size_t)(eol - l) : strlen(l);
        int is_kw = 0;
        for (size_t k = 0; kw[k]; k++)
            is_kw |= strncmp(l + ind, kw[k], strlen(kw[k])) == 0;
        if (!is_kw || !taint_mentions(t, l + ind, llen - ind))
            continue;
        hits++;
        for (const char *b = eol ? eol + 1 : NULL; b && *b && b - eol < (long)SCAN_BODY;
             b = strchr(b, '\n') ? strchr(b, '\n') + 1 : NULL) {
            const char *be = strchr(b, '\n');
            size_t blen = be ? (size_t)(be - b) : strlen(b), bi = indent_of(b);
            if (bi == blen) /* blank */
                continue;
            if (bi <= ind)
                break;
            const char *sync = strstr(b, "syncthreads(");
            if (sync && sync < b + blen) {
                *line = line_of(s, sync);
                snprintf(cond, clen, "%.*s", (int)(llen - ind > 60 ? 60 : llen - ind), l + ind);
                for (char *x = cond; *x; x++)
                    if (*x == '`')
                        *x = ' ';
                return 1;
            }
        }
    }
    return 0;
}

/* The value of a number, of a name defined as one ("#define B 2048",
 * "const int B = 2048;", Python "B = 2048"), or of a product of those;
 * -1 when not that simple. */
static long long source_value(const char *s, const char *p, size_t len, int depth)
{
    while (len && isspace((unsigned char)*p))
        p++, len--;
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    const char *star = memchr(p, '*', len);
    if (star && depth < 4) {
        long long a = source_value(s, p, (size_t)(star - p), depth + 1);
        long long b = source_value(s, star + 1, len - (size_t)(star - p) - 1, depth + 1);
        return a < 0 || b < 0 || a > (1LL << 31) || b > (1LL << 31) ? -1 : a * b;
    }
    if (len == 0 || len > 40)
        return -1;
    if (isdigit((unsigned char)*p)) {
        char *e;
        long long v = strtoll(p, &e, 0);
        while (e < p + len && strchr("uUlL", *e))
            e++;
        return e == p + len ? v : -1;
    }
    for (size_t i = 0; i < len; i++)
        if (!ident_char(p[i]))
            return -1;
    if (depth >= 4)
        return -1;
    char name[48];
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    for (const char *d = word_find(s, name, NULL); d; d = word_find(d + 1, name, NULL)) {
        const char *v = d + len;
        while (*v == ' ' || *v == '\t')
            v++;
        int is_define = d >= s + 8 && strncmp(d - 8, "#define ", 8) == 0;
        if (!is_define && !(*v == '=' && v[1] != '='))
            continue;
        if (*v == '=')
            v++;
        const char *e = v;
        while (*e && *e != ';' && *e != '\n' && *e != ',')
            e++;
        return source_value(s, v, (size_t)(e - v), depth + 1);
    }
    return -1;
}

/* The product of a dim3's components "a, b, c" (or a single value); -1
 * when one is not a known number. *ymax gets the largest of y and z. */
static long long dims_product(const char *s, const char *p, size_t len, long long *yz)
{
    long long prod = 1;
    int k = 0;
    *yz = 0;
    while (len > 0) {
        const char *c = memchr(p, ',', len);
        size_t n = c ? (size_t)(c - p) : len;
        long long v = source_value(s, p, n, 0);
        if (v < 0)
            return -1;
        prod *= v;
        if (k++ > 0 && v > *yz)
            *yz = v;
        if (!c)
            break;
        len -= n + 1;
        p = c + 1;
    }
    return prod;
}

/* The dims of a launch argument: a number, a product, a C dim3 declared
 * as "dim3 name(a, b)" / "name{a, b}", a Python tuple "(a, b)" or a name
 * bound to one. -1 when unknown. */
static long long launch_dims(const char *s, const char *p, size_t len, long long *yz)
{
    *yz = 0;
    while (len && isspace((unsigned char)*p))
        p++, len--;
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    if (len >= 2 && p[0] == '(' && p[len - 1] == ')')
        return dims_product(s, p + 1, len - 2, yz);
    long long v = source_value(s, p, len, 0);
    if (v >= 0 || len == 0 || len > 40)
        return v;
    char name[48];
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    for (const char *d = word_find(s, name, NULL); d; d = word_find(d + 1, name, NULL)) {
        const char *o = d + len;
        while (*o == ' ' || *o == '=')
            o++;
        if (strncmp(o, "dim3", 4) == 0)
            o += 4;
        while (*o == ' ')
            o++;
        if (*o != '(' && *o != '{')
            continue;
        const char *e = group_end(o);
        if (e)
            return dims_product(s, o + 1, (size_t)(e - o - 1), yz);
    }
    return -1;
}

/* A launch in the source over the limits, worded into buf ("" when none
 * is found): CUDA's "<<<grid, block, shared>>>", Numba's "kernel[grid,
 * block]" and "kernel[grid, block, stream, shared]". */
void source_launch_over_limits(const char *s, int python, char *buf, size_t len)
{
    const char *open = python ? "[" : "<<<";
    size_t hits = 0;
    buf[0] = '\0';
    for (const char *p = strstr(s, open); p && hits++ < SCAN_LAUNCHES; p = strstr(p + 1, open)) {
        const char *a = p + strlen(open), *e;
        if (python) {
            if (p == s || !ident_char(p[-1]) || !(e = group_end(p)) || e[1] != '(')
                continue;
        } else if (!(e = strstr(a, ">>>"))) {
            break;
        }
        /* the top-level arguments */
        const char *arg[4] = {a, NULL, NULL, NULL};
        size_t n = 1;
        int depth = 0;
        for (const char *q = a; q < e && n < 4; q++) {
            depth += *q == '(' || *q == '[' || *q == '{';
            depth -= *q == ')' || *q == ']' || *q == '}';
            if (*q == ',' && depth == 0)
                arg[n++] = q + 1;
        }
        long long gyz, byz, threads;
        launch_dims(s, arg[0], (size_t)((n > 1 ? arg[1] - 1 : e) - arg[0]), &gyz);
        threads =
            n > 1 ? launch_dims(s, arg[1], (size_t)((n > 2 ? arg[2] - 1 : e) - arg[1]), &byz) : -1;
        const char *sh = python ? (n > 3 ? arg[3] : NULL) : (n > 2 ? arg[2] : NULL);
        long long shared = -1, yz;
        if (sh) {
            const char *she = memchr(sh, ',', (size_t)(e - sh));
            shared = launch_dims(s, sh, (size_t)((she ? she : e) - sh), &yz);
        }
        int line = line_of(s, p);
        if (threads > 1024)
            snprintf(buf, len, " Your launch at line %d asks for %lld threads per block.", line,
                     threads);
        else if (gyz > 65535)
            snprintf(buf, len, " Your launch at line %d asks for %lld blocks in grid y or z.", line,
                     gyz);
        else if (shared > 48 * 1024)
            snprintf(buf, len,
                     " Your launch at line %d asks for %lld bytes of dynamic shared memory.", line,
                     shared);
        if (buf[0])
            return;
    }
}

int source_divergent_barrier(const char *code, int python, int *line, char *cond, size_t clen)
{
    struct taint t;
    assert(code && line && cond && clen > 0);
    taint_build(code, python, &t);
    return python ? barrier_divergent_py(code, &t, line, cond, clen)
                  : barrier_divergent_c(code, &t, line, cond, clen);
}


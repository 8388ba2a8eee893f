/*
 * hint.c - see hint.h. The catalogue is the table at the bottom; each
 * recognizer reads only hint_facts and writes at most one hint.
 *
 * Evidence comes in three strengths, strongest first, and a recognizer
 * says which it saw: a tool's finding with a source line (memcheck,
 * racecheck), a measured symptom that only this bug produces (a float32
 * total stuck at a power of two, a failure only in the cases past 2^31
 * elements), and the source's shape (a __syncthreads() under a condition
 * on threadIdx). The source is the student's own file: it is read, never
 * compiled or run here, and every scan is bounded by its length.
 */
#include "hint.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Small helpers. */

/* Case-insensitive strstr; NULL-safe. */
static const char *text_find(const char *s, const char *needle)
{
    if (!s || !needle)
        return NULL;
    size_t n = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return s;
    return NULL;
}

__attribute__((format(printf, 4, 5))) static void
hint_add(struct hint_list *out, const char *id, const char *case_name, const char *fmt, ...)
{
    va_list ap;
    if (hint_find(out, id) || out->n >= HINT_MAX)
        return;
    struct hint *h = &out->v[out->n++];
    h->id = id;
    snprintf(h->case_name, sizeof h->case_name, "%s", case_name ? case_name : "");
    va_start(ap, fmt);
    vsnprintf(h->text, sizeof h->text, fmt, ap);
    va_end(ap);
}

const struct hint *hint_find(const struct hint_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].id, id) == 0)
            return &l->v[i];
    return NULL;
}

/* The harness's launch error of case c, or NULL. */
static const char *case_error(const struct hint_facts *f, const struct score_case *c)
{
    return json_string_value(json_object_get(f->case_errors, c->name));
}

/* Does case c's feedback (the judge's message or the harness's launch
 * error) contain needle? */
static int case_says(const struct hint_facts *f, const struct score_case *c, const char *needle)
{
    return text_find(c->message, needle) || text_find(case_error(f, c), needle);
}

static int case_failed(const struct score_case *c)
{
    return !(c->ran && c->passed);
}

/* The most elements a kernel indexes in one buffer in case name: the
 * params' "elements" when a lab declares it; the three course labs'
 * buffers (reduction n; matmul the largest of A, B, C; embedding the
 * weight table and the output); else the largest parameter. 0 when
 * unknown. */
static double case_extent(const struct hint_facts *f, const char *name)
{
    const struct lab_case *lc = f->lab ? lab_case_find(f->lab, name) : NULL;
    const char *k;
    json_t *v;
    double best = 0;
    if (!lc || !json_is_object(lc->params))
        return 0;
#define P(key) json_number_value(json_object_get(lc->params, key))
    if (P("elements") > 0)
        return P("elements");
    const char *lab = f->lab->name ? f->lab->name : "";
    if (strcmp(lab, "matmul") == 0)
        return fmax(P("M") * P("K"), fmax(P("K") * P("N"), P("M") * P("N")));
    if (strcmp(lab, "embedding") == 0)
        return fmax(P("vocab") * P("dim"), P("num_indices") * P("dim"));
#undef P
    json_object_foreach(lc->params, k, v) if (json_number_value(v) > best) best =
        json_number_value(v);
    return best;
}

/* "n = 1000" or "M = 17, N = 31, K = 13": the case's sizes, for a hint. */
static void case_sizes(const struct hint_facts *f, const char *name, char *buf, size_t len)
{
    const struct lab_case *lc = f->lab ? lab_case_find(f->lab, name) : NULL;
    const char *k;
    json_t *v;
    size_t o = 0;
    buf[0] = '\0';
    if (!lc || !json_is_object(lc->params))
        return;
    json_object_foreach(lc->params, k, v)
    {
        if (!json_is_number(v) || o >= len)
            continue;
        int w = snprintf(buf + o, len - o, "%s%s = %.0f", o ? ", " : "", k, json_number_value(v));
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* "kernel.cu line 12" of a finding, or "" when it has no line. */
static void finding_where(const struct score_finding *fd, char *buf, size_t len)
{
    if (fd->line > 0)
        snprintf(buf, len, " at %s line %d", fd->file ? fd->file : "your file", fd->line);
    else
        buf[0] = '\0';
}

/* ---------------------------------------------------------------------- */
/* The source, read as text. The runner reads it outside any sandbox, so
 * every scan is bounded: a hostile file (a million nested ifs, one line of
 * a=a=a=...) costs at most a few hundred million character steps. */

#define SOURCE_MAX (256u << 10) /* longer sources get no source-based hint */
#define SCAN_STATEMENT 512      /* an assignment's right side, read at most */
#define SCAN_BODY (16u << 10)   /* a branch's body, searched for a barrier */
#define SCAN_HITS 4096          /* if/while/for looked at, and assignments per pass */
#define SCAN_LAUNCHES 64        /* launches whose configuration is worked out */
#define SCAN_GROUP (64u << 10)  /* a (...) or {...} followed to its end */

/* A copy of the source with comments and string and character literals
 * blanked (newlines kept, so lines still count). Caller frees; NULL when
 * there is no source or no memory. */
static char *source_code(const struct hint_facts *f)
{
    if (!f->source || !f->source_len || f->source_len > SOURCE_MAX)
        return NULL;
    char *s = malloc(f->source_len + 1);
    if (!s)
        return NULL;
    memcpy(s, f->source, f->source_len);
    s[f->source_len] = '\0';
    for (size_t i = 0; i < f->source_len; i++) {
        if (s[i] == '\0')
            s[i] = ' ';
    }
    for (char *p = s; *p; p++) {
        if (!f->python && p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                *p++ = ' ';
        } else if (!f->python && p[0] == '/' && p[1] == '*') {
            *p++ = ' ';
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p != '\n')
                    *p = ' ';
                p++;
            }
            if (*p)
                *p++ = ' ', *p = ' ';
        } else if (f->python && *p == '#') {
            while (*p && *p != '\n')
                *p++ = ' ';
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            p++;
            while (*p && *p != q && *p != '\n') {
                if (*p == '\\' && p[1] && p[1] != '\n')
                    *p++ = ' ';
                *p++ = ' ';
            }
        }
        if (!*p)
            break;
    }
    return s;
}

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
static void launch_over_limits(const struct hint_facts *f, const char *s, char *buf, size_t len)
{
    const char *open = f->python ? "[" : "<<<";
    size_t hits = 0;
    buf[0] = '\0';
    for (const char *p = strstr(s, open); p && hits++ < SCAN_LAUNCHES; p = strstr(p + 1, open)) {
        const char *a = p + strlen(open), *e;
        if (f->python) {
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
        const char *sh = f->python ? (n > 3 ? arg[3] : NULL) : (n > 2 ? arg[2] : NULL);
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

/* ---------------------------------------------------------------------- */
/* The recognizers, in the catalogue's order. */

/* device-assert: "kernel.cu:12: void k(...): block: [3,0,0], thread:
 * [64,0,0] Assertion `i < n` failed." on stderr (CUDA's device-side
 * assert), or the harness's cudaErrorAssert. */
static void rec_device_assert(const struct hint_facts *f, struct hint_list *out)
{
    const char *err = f->program_err, *a = text_find(err, "Assertion `");
    const char *cname = NULL;
    for (size_t i = 0; i < f->ncases && !cname; i++)
        if (case_says(f, &f->cases[i], "device-side assert") ||
            case_says(f, &f->cases[i], "CUDA_ERROR_ASSERT"))
            cname = f->cases[i].name;
    if (!a) {
        if (cname)
            hint_add(out, "device-assert", cname,
                     "A device-side `assert()` failed in case %s, and the kernel stopped there. "
                     "Its condition, file:line, block and thread are printed on stderr (see "
                     "the program output); fix the case it caught, or the assertion if it is "
                     "wrong.",
                     cname);
        return;
    }
    size_t count = 0;
    for (const char *q = a; q; q = text_find(q + 1, "Assertion `"))
        count++;
    const char *ls = a;
    while (ls > err && ls[-1] != '\n')
        ls--;
    const char *ce = strstr(a + 11, "` failed");
    char cond[200] = "?", file[128] = "", block[40] = "?", thread[40] = "?";
    int line = 0;
    if (ce)
        snprintf(cond, sizeof cond, "%.*s", (int)(ce - a - 11 > 190 ? 190 : ce - a - 11), a + 11);
    char path[256];
    if (sscanf(ls, "%255[^:\n]:%d:", path, &line) == 2) {
        const char *base = strrchr(path, '/');
        snprintf(file, sizeof file, "%.120s", base ? base + 1 : path);
    }
    const char *b = strstr(ls, "block: ["), *t = strstr(ls, "thread: [");
    if (b && b < a)
        sscanf(b + 7, "%39[^]]]", block);
    if (t && t < a)
        sscanf(t + 8, "%39[^]]]", thread);
    for (char *x = cond; *x; x++)
        if (*x == '`')
            *x = '\'';
    hint_add(out, "device-assert", cname,
             "A device-side `assert(%s)` failed%s%s%s%.0d in block %s], thread %s]%s%s: that "
             "thread saw the condition false, and the kernel stopped (%zu thread%s failed it). "
             "Print or check the values the condition uses for that block and thread.",
             cond, file[0] ? " at " : "", file, line ? " line " : "", line, block, thread,
             cname ? " in case " : "", cname ? cname : "", count, count == 1 ? "" : "s");
}

/* launch-limits: the launch itself was refused. */
static void rec_launch_limits(const struct hint_facts *f, const char *code, struct hint_list *out)
{
    static const char *const sure[] = {"invalid configuration",
                                       "too many resources requested",
                                       "CUDA_ERROR_INVALID_CONFIGURATION",
                                       "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                       "OUT_OF_RESOURCES",
                                       NULL};
    const struct score_case *hit = NULL;
    const char *what = NULL;
    for (size_t i = 0; i < f->ncases && !hit; i++) {
        const struct score_case *c = &f->cases[i];
        for (size_t k = 0; sure[k] && !hit; k++)
            if (case_says(f, c, sure[k]))
                hit = c, what = sure[k];
        /* CUDA 13 and Numba report a block of more than 1024 threads as
         * an invalid value of the launch call. */
        if (!hit && (case_says(f, c, "CUDA_ERROR_INVALID_VALUE") ||
                     (case_says(f, c, "invalid argument") && case_says(f, c, "kernel launch"))))
            hit = c, what = f->python ? "CUDA_ERROR_INVALID_VALUE" : "invalid argument";
    }
    const char *fw = NULL;
    for (size_t i = 0; i < f->nsanitizers && !hit && !fw; i++)
        for (size_t k = 0; k < f->sanitizers[i].nfindings && !fw; k++) {
            const char *m = f->sanitizers[i].findings[k].message;
            if (text_find(m, "invalid configuration") || text_find(m, "cudaLaunchKernel") ||
                text_find(m, "too many resources"))
                fw = m;
        }
    if (!hit && !fw)
        return;
    char detail[200] = "", why[240];
    if (code)
        launch_over_limits(f, code, detail, sizeof detail);
    char sizes[160] = "";
    if (hit)
        case_sizes(f, hit->name, sizes, sizeof sizes);
    if (hit)
        snprintf(why, sizeof why, "case %s%s%s%s: %s", hit->name, sizes[0] ? " (" : "", sizes,
                 sizes[0] ? ")" : "", what);
    else
        snprintf(why, sizeof why, "compute-sanitizer: %.200s", fw);
    hint_add(out, "launch-limits", hit ? hit->name : NULL,
             "A launch over the GPU's limits: the kernel never ran (%s).%s A block may have "
             "at most 1024 threads (`blockDim.x*y*z`, z at most 64), a grid at most 65535 "
             "blocks in y and z (2^31-1 in x) and at least 1 block, and a block at most 48 KiB "
             "of shared memory unless you opt in with `cudaFuncSetAttribute`; \"too many "
             "resources requested\" means registers per thread times threads per block exceed "
             "the SM's register file: use fewer threads per block or `__launch_bounds__`.%s",
             why, detail,
             f->python ? " Numba reports these launches as CUDA_ERROR_INVALID_VALUE."
                       : " Check every launch with `cudaGetLastError()` while you debug.");
}

/* index-overflow-32: only the cases past 2^31-1 elements fail. */
static void rec_index_overflow(const struct hint_facts *f, struct hint_list *out)
{
    const double lim = 2147483647.0;
    const struct score_case *big = NULL;
    const struct hint *launch = hint_find(out, "launch-limits");
    size_t small_ok = 0;
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        if (launch && strcmp(launch->case_name, c->name) == 0)
            return; /* the launch was refused: not an index that wrapped */
        if (case_says(f, c, "does not fit in 32 bits")) {
            big = c;
            small_ok = 1;
            break;
        }
        double ext = case_extent(f, c->name);
        if (!(ext > 0))
            continue;
        if (ext <= lim) {
            if (case_failed(c))
                return; /* a small case fails too: another bug */
            small_ok++;
        } else if (!big && c->ran && !c->passed) {
            big = c;
        } else if (!big && !c->ran && case_says(f, c, "illegal memory access")) {
            big = c;
        }
    }
    if (!big || !small_ok)
        return;
    char sizes[160], got[160] = "";
    case_sizes(f, big->name, sizes, sizeof sizes);
    if (big->have_value && isfinite(big->expected))
        snprintf(got, sizeof got, " (your answer %.9g, expected %.9g)", big->got, big->expected);
    hint_add(out, "index-overflow-32", big->name,
             "32-bit index overflow: case %s (%s) indexes past 2^31-1 = 2147483647 elements and "
             "fails%s, while every smaller case passes. An `int` index or count wraps there "
             "(2500000000 becomes -1794967296). Hold n, every index and the grid-stride step in "
             "64 bits: `size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x` (the product "
             "of two 32-bit values is computed in 32 bits before it is widened), `size_t` "
             "parameters, and `(size_t)row * dim` for offsets.",
             big->name, sizes, got);
}

/* A failed one-value answer that is a float32 total stalled short of the
 * reference: at least 2^22 in magnitude, within 1/1024 above a power of
 * two, the reference's sign. A sum missing a share of its elements lands
 * that close to a power of two by chance only. */
static int case_saturated(const struct score_case *c)
{
    if (!c->ran || c->passed || !c->have_value || !isfinite(c->got) || !isfinite(c->expected))
        return 0;
    double g = fabs(c->got), e = fabs(c->expected);
    if (g < 4194304.0 || !(g < 0.999 * e) || (c->got < 0) != (c->expected < 0))
        return 0;
    return g <= ldexp(1.0, ilogb(g)) * (1 + 1.0 / 1024);
}

/* float32-saturation: a float total stuck at a power of two. */
static void rec_float32_saturation(const struct hint_facts *f, struct hint_list *out)
{
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        if (!case_saturated(c))
            continue;
        double g = fabs(c->got), e = fabs(c->expected);
        int k = ilogb(g);
        hint_add(out, "float32-saturation", c->name,
                 "Float32 accumulation saturated in case %s: your total stopped at %.9g (2^%d) "
                 "while the sum is %.9g, %.1f%% short. Once a float32 total reaches 2^%d its "
                 "spacing is %.0f, so adding an element smaller than %.0f rounds away to nothing "
                 "(x + 0.75 == x): adding every element into one float%s cannot reach the "
                 "answer. Sum partial totals instead -- per thread over a grid-stride loop, "
                 "then per block in shared memory or with warp shuffles, then one atomic add "
                 "per block (or a second pass) -- so each addition combines numbers of "
                 "similar size. Your grid is not the problem.",
                 c->name, c->got, k, c->expected, 100 * (1 - g / e), k, ldexp(1.0, k - 23),
                 ldexp(1.0, k - 24),
                 f->python ? " (`cuda.atomic.add` per element, or one long running sum)"
                           : " (one `atomicAdd` per element, or one long running sum)");
        return;
    }
}

/* bounds-check: an access past the end of a buffer. */
static void rec_bounds_check(const struct hint_facts *f, struct hint_list *out)
{
    const char *fix = f->python ? "guard every access with `if i < x.shape[0]:` (and return "
                                  "early only before any `cuda.syncthreads()`)"
                                : "guard every access with `if (i < n)`, loads into shared "
                                  "memory included";
    for (size_t i = 0; i < f->nsanitizers; i++)
        for (size_t k = 0; k < f->sanitizers[i].nfindings; k++) {
            const struct score_finding *fd = &f->sanitizers[i].findings[k];
            if (!text_find(fd->message, "Invalid __") && !text_find(fd->message, "Out-of-range"))
                continue;
            char where[160];
            finding_where(fd, where, sizeof where);
            hint_add(out, "bounds-check", NULL,
                     "Missing bounds check: %s found an access past the end of a buffer%s "
                     "(\"%.120s\"). The grid is a whole number of blocks, so the threads of the "
                     "last block run past n: %s.",
                     f->sanitizers[i].tool, where, fd->message, fix);
            return;
        }
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        const char *ev = NULL;
        if (c->ran && !c->passed && case_says(f, c, "past the end of the output"))
            ev = "it wrote past the end of the output";
        else if (c->ran && !c->passed && c->have_value && isnan(c->got) && isfinite(c->expected))
            ev = "the answer is NaN: it read past the end of the input, where the harness "
                 "keeps NaNs";
        else if ((case_says(f, c, "illegal memory access") ||
                  case_says(f, c, "CUDA_ERROR_ILLEGAL_ADDRESS")) &&
                 !hint_find(out, "index-overflow-32"))
            ev = "an illegal memory access: an index past the end of a buffer";
        if (!ev)
            continue;
        char sizes[160];
        case_sizes(f, c->name, sizes, sizeof sizes);
        hint_add(out, "bounds-check", c->name,
                 "Missing bounds check in case %s (%s): %s. The grid is a whole number of "
                 "blocks, so the threads of the last block run past the end: %s.",
                 c->name, sizes, ev, fix);
        return;
    }
}

static int source_has(const char *code, const char *w)
{
    return code && strstr(code, w) != NULL;
}

/* missing-syncthreads: a shared-memory race. */
static void rec_missing_sync(const struct hint_facts *f, const char *code, struct hint_list *out)
{
    int racecheck_ran = 0;
    for (size_t i = 0; i < f->nsanitizers; i++) {
        const struct score_sanitizer *s = &f->sanitizers[i];
        racecheck_ran |= s->ran && s->tool && strcmp(s->tool, "racecheck") == 0;
        for (size_t k = 0; k < s->nfindings; k++) {
            const struct score_finding *fd = &s->findings[k];
            if (!text_find(fd->message, "Race reported") && !text_find(fd->message, "hazard") &&
                !text_find(fd->message, " race"))
                continue;
            char where[160];
            finding_where(fd, where, sizeof where);
            hint_add(out, "missing-syncthreads", NULL,
                     "Missing `__syncthreads()`: racecheck found a shared-memory race%s "
                     "(\"%.120s\"). A thread reads a value another thread writes to shared "
                     "memory with no barrier between them: put `__syncthreads()` after the "
                     "writes and before the reads, and in a loop also before the buffer is "
                     "overwritten in the next iteration.",
                     where, fd->message);
            return;
        }
    }
    if (racecheck_ran || !code)
        return;
    const char *shared = f->python ? "cuda.shared.array" : "__shared__";
    const char *sync = f->python ? "syncthreads" : "__syncthreads";
    if (!source_has(code, shared) || source_has(code, sync) ||
        (!f->python && (source_has(code, "__syncwarp") || source_has(code, "cooperative_groups"))))
        return;
    for (size_t i = 0; i < f->ncases; i++)
        if (f->cases[i].ran && !f->cases[i].passed) {
            hint_add(out, "missing-syncthreads", f->cases[i].name,
                     "Missing %s: your kernel shares values through shared memory "
                     "(`%s`) but never waits for the other threads of its block, and case %s "
                     "is wrong. Put a barrier after the writes to shared memory and before the "
                     "reads of other threads' values.",
                     f->python ? "`cuda.syncthreads()`" : "`__syncthreads()`", shared,
                     f->cases[i].name);
            return;
        }
}

/* divergent-barrier: a barrier some threads of the block never reach. */
static void rec_divergent_barrier(const struct hint_facts *f, const char *code,
                                  struct hint_list *out)
{
    const char *fix = "Move the barrier out of the branch so that every thread of the block "
                      "reaches it, and put only the work under the condition.";
    for (size_t i = 0; i < f->nsanitizers; i++)
        for (size_t k = 0; k < f->sanitizers[i].nfindings; k++) {
            const struct score_finding *fd = &f->sanitizers[i].findings[k];
            if (!text_find(fd->message, "Barrier") && !text_find(fd->message, "divergent"))
                continue;
            char where[160];
            finding_where(fd, where, sizeof where);
            hint_add(out, "divergent-barrier", NULL,
                     "A barrier in divergent code%s: not every thread of the block reaches "
                     "this `__syncthreads()` (\"%.120s\"). %s",
                     where, fd->message, fix);
            return;
        }
    struct taint t;
    int line = 0;
    char cond[80];
    if (code) {
        taint_build(code, f->python, &t);
        int found = f->python ? barrier_divergent_py(code, &t, &line, cond, sizeof cond)
                              : barrier_divergent_c(code, &t, &line, cond, sizeof cond);
        if (found) {
            hint_add(out, "divergent-barrier", NULL,
                     "A barrier in divergent code: the %s at line %d is under `%s`, a "
                     "condition that depends on the thread, so some threads of the block never "
                     "reach it. That is undefined behaviour: it can hang, give wrong results, "
                     "or work by accident on one GPU. %s",
                     f->python ? "`cuda.syncthreads()`" : "`__syncthreads()`", line, cond, fix);
            return;
        }
    }
    for (size_t i = 0; i < f->ncases; i++)
        if (case_says(f, &f->cases[i], "illegal instruction")) {
            hint_add(out, "divergent-barrier", f->cases[i].name,
                     "Case %s stopped on an illegal instruction, which a `__syncthreads()` "
                     "that not all threads of a block reach often causes. %s",
                     f->cases[i].name, fix);
            return;
        }
}

/* grid-coverage: outputs never written, or a sum missing a share. */
static void rec_grid_coverage(const struct hint_facts *f, struct hint_list *out)
{
    const struct hint *ovf = hint_find(out, "index-overflow-32"),
                      *lim = hint_find(out, "launch-limits"),
                      *sat = hint_find(out, "float32-saturation");
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        /* explained already: a stalled float total, the cases past 2^31
         * of an overflow, a launch that never ran */
        /* a float total that stalls at 2^26 drifts at 2^20 too: the same
         * accumulation, not a grid */
        if (!c->ran || c->passed || case_saturated(c) || (sat && c->have_value) ||
            (ovf && case_extent(f, c->name) > 2147483647.0) ||
            (lim && strcmp(lim->case_name, c->name) == 0))
            continue;
        char sizes[160];
        case_sizes(f, c->name, sizes, sizeof sizes);
        if (c->unwritten > 0 && !(c->have_value && isfinite(c->got))) {
            hint_add(out, "grid-coverage", c->name,
                     "A grid that does not cover the input: in case %s (%s) %lld output%s were "
                     "never written. Round the block count up, `(n + block - 1) / block`, or "
                     "loop over the elements with a grid-stride loop so any grid size covers "
                     "them all.",
                     c->name, sizes, c->unwritten, c->unwritten == 1 ? "" : "s");
            return;
        }
        /* a short sum with a race or a barrier bug found is that bug's
         * (partial sums lost), not a grid's (seen on the H100: no_sync.cu
         * 7.26% short at 2^20+7) */
        if (hint_find(out, "missing-syncthreads") || hint_find(out, "divergent-barrier") ||
            hint_find(out, "bounds-check"))
            continue;
        if (c->have_value && isfinite(c->got) && isfinite(c->expected) && c->expected != 0 &&
            c->got / c->expected >= 0 && c->got / c->expected < 1) {
            hint_add(out, "grid-coverage", c->name,
                     "A grid that does not cover the input: in case %s (%s) your sum %.9g is "
                     "%.3g%% short of %.9g, as if some elements were never added. Round the "
                     "block count up, `(n + block - 1) / block`, or use a grid-stride loop, "
                     "and check the tail when n is not a multiple of the block size.",
                     c->name, sizes, c->got, 100 * (1 - c->got / c->expected), c->expected);
            return;
        }
    }
}

/* The three entries of the profiler's numbers (runner/profile.c). */
static void rec_profile(const struct hint_facts *f, struct hint_list *out)
{
    const struct hint_profile *p = f->profile;
    char where[200] = "";
    if (!p)
        return;
    if (p->kernel && p->line > 0)
        snprintf(where, sizeof where, " in %s at line %d", p->kernel, p->line);
    else if (p->kernel)
        snprintf(where, sizeof where, " in %s", p->kernel);
    else if (p->line > 0)
        snprintf(where, sizeof where, " at line %d", p->line);
    double ideal = p->ideal_sectors_per_request > 0 ? p->ideal_sectors_per_request : 4;
    if (isfinite(p->sectors_per_request) && p->sectors_per_request > 2 * ideal)
        hint_add(out, "uncoalesced", NULL,
                 "Uncoalesced global memory access%s: %.1f sectors of 32 bytes per request "
                 "where a coalesced access takes %.0f. Neighbouring threads of a warp should "
                 "touch neighbouring addresses: index with `threadIdx.x` along the contiguous "
                 "dimension, or stage the data through shared memory.",
                 where, p->sectors_per_request, ideal);
    if (isfinite(p->bank_conflict_ways) && p->bank_conflict_ways >= 2)
        hint_add(out, "bank-conflicts", NULL,
                 "Shared-memory bank conflicts%s: %.1f-way (a request takes %.1f passes where "
                 "1 is ideal). Threads of a warp hit the same bank with different addresses: "
                 "pad the array (`[32][33]` instead of `[32][32]`) or change which thread "
                 "reads which element.",
                 where, p->bank_conflict_ways, p->bank_conflict_ways);
    if (isfinite(p->branch_efficiency) && p->branch_efficiency < 0.9)
        hint_add(out, "divergence", NULL,
                 "Warp divergence%s: only %.0f%% of branches were taken the same way by the "
                 "whole warp. Conditions on `threadIdx.x %% k` split every warp; give whole "
                 "warps the same path (e.g. `if (threadIdx.x < k)` with a halving stride).",
                 where, 100 * p->branch_efficiency);
}

/* sanitizer-finding: any other finding keeps its own hint in the list. */
static void rec_sanitizer_other(const struct hint_facts *f, struct hint_list *out)
{
    for (size_t i = 0; i < f->nsanitizers; i++)
        for (size_t k = 0; k < f->sanitizers[i].nfindings; k++) {
            const struct score_finding *fd = &f->sanitizers[i].findings[k];
            const char *m = fd->message;
            if (!fd->hint || text_find(m, "Invalid __") || text_find(m, "Out-of-range") ||
                text_find(m, "Race reported") || text_find(m, "hazard") || text_find(m, " race") ||
                text_find(m, "Barrier") || text_find(m, "divergent") ||
                text_find(m, "invalid configuration") || text_find(m, "cudaLaunchKernel") ||
                text_find(m, "too many resources"))
                continue;
            char where[160];
            finding_where(fd, where, sizeof where);
            hint_add(out, "sanitizer-finding", NULL, "%s%s%s", fd->hint, where[0] ? " (" : "",
                     where[0] ? where + 4 : "");
            if (where[0])
                strncat(out->v[out->n - 1].text, ")",
                        sizeof out->v[0].text - strlen(out->v[out->n - 1].text) - 1);
            return;
        }
}

/* ---------------------------------------------------------------------- */

static const char *const catalogue[] = {"device-assert",
                                        "launch-limits",
                                        "index-overflow-32",
                                        "float32-saturation",
                                        "bounds-check",
                                        "missing-syncthreads",
                                        "divergent-barrier",
                                        "grid-coverage",
                                        "uncoalesced",
                                        "bank-conflicts",
                                        "divergence",
                                        "sanitizer-finding",
                                        NULL};

const char *const *hint_ids(void)
{
    return catalogue;
}

void hint_recognize(const struct hint_facts *f, struct hint_list *out)
{
    assert(f && out);
    out->n = 0;
    char *code = source_code(f);
    rec_device_assert(f, out);
    rec_launch_limits(f, code, out);
    rec_index_overflow(f, out);
    rec_float32_saturation(f, out);
    rec_bounds_check(f, out);
    rec_missing_sync(f, code, out);
    rec_divergent_barrier(f, code, out);
    rec_grid_coverage(f, out);
    rec_profile(f, out);
    rec_sanitizer_other(f, out);
    free(code);
    for (size_t i = 0; i < out->n; i++)
        assert(out->v[i].id && out->v[i].text[0]);
}

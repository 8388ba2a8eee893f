/*
 * profile_source.c - the source lines of the profiling hints (profile.h,
 * "Source lines"): ncu's source page read per line of the student's file,
 * and the worst line put into the hints that a line explains.
 *
 * The page (ncu 2025.3.1, `--csv --page source --print-source cuda,sass`):
 *
 *   "File Path","/work/kernel.cu"
 *   "Function Name","k(const float *, float *, unsigned long)"
 *   "Line No","Source","Address","Source","inst_executed",...
 *   "17","if (lane < 16) {","-","-","32768",...        <- a source line
 *   "","","0x7fb15b7ad5a0","      ISETP.GT ...","8192",... <- its SASS
 *
 * The report is a file in the sandbox's /work, which the student's process
 * can write too: it is outside bytes. Everything here is bounded by the
 * text's length and PROFILE_SOURCE_MAX_LINES, and a forged report can only
 * forge the student's own hints.
 */
#include "runner/feedback/profile.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_MAX_FIELDS 256 /* the page has 4 columns plus one per metric asked for */

void profile_source_init(struct profile_source *s)
{
    memset(s, 0, sizeof *s);
}

void profile_source_free(struct profile_source *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->lines[i].kernel);
        free(s->lines[i].file);
        free(s->lines[i].text);
    }
    free(s->lines);
    memset(s, 0, sizeof *s);
}

/* Text safe inside Markdown backticks and JSON: printable ASCII (other
 * bytes become '?'), no backtick, whitespace runs as one space, trimmed, at
 * most max bytes ("..." when cut). */
static char *text_clean(const char *in, size_t max)
{
    char *out = malloc(max + 4), *w = out;
    if (!out)
        return NULL;
    int space = 0;
    while (*in && isspace((unsigned char)*in))
        in++;
    for (; *in && (size_t)(w - out) < max; in++) {
        unsigned char c = (unsigned char)*in;
        if (isspace(c)) {
            space = 1;
            continue;
        }
        if (space && w > out)
            *w++ = ' ';
        space = 0;
        if ((size_t)(w - out) >= max)
            break;
        *w++ = c == '`' ? '\'' : (c < 0x20 || c > 0x7e) ? '?' : (char)c;
    }
    if (*in && (size_t)(w - out) >= max)
        memcpy(w, "...", 3), w += 3;
    *w = '\0';
    return out;
}

/* A kernel's name as the hints know it: "void k<32>(int)" -> "k<32>",
 * Numba's "__main__::half_warps[abi:v1,...](Array<...>)" -> "half_warps".
 * Written into buf (len bytes). */
static void fn_base(const char *sig, char *buf, size_t len)
{
    size_t n = strcspn(sig, "(");
    /* the last space outside <> ends a return type */
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (sig[i] == '<')
            depth++;
        else if (sig[i] == '>')
            depth--;
        else if (sig[i] == ' ' && depth == 0)
            start = i + 1;
    }
    const char *b = sig + start;
    size_t bl = n - start;
    const char *br = memchr(b, '[', bl); /* Numba's ABI tag */
    if (br)
        bl = (size_t)(br - b);
    for (size_t i = bl; i >= 2; i--) /* after the last "::" */
        if (b[i - 1] == ':' && b[i - 2] == ':') {
            b += i;
            bl -= i;
            break;
        }
    snprintf(buf, len, "%.*s", (int)(bl < len ? bl : len - 1), b);
}

/* Is path a file directly in dir ("/work/kernel.cu" in "/work")? */
static int in_dir(const char *path, const char *dir)
{
    size_t d = strlen(dir);
    return d > 0 && strncmp(path, dir, d) == 0 && path[d] == '/' && path[d + 1] &&
           !strchr(path + d + 1, '/');
}

/* The columns of the metrics, from a "Line No" header (-1: absent). */
enum { M_INST, M_THREADS, M_DIV, M_SEC, M_SEC_IDEAL, M_WF, M_WF_IDEAL, M_N };
static const char *const metric_names[M_N] = {
    "inst_executed",
    "thread_inst_executed",
    "smsp__branch_targets_threads_divergent",
    "memory_l2_theoretical_sectors_global",
    "memory_l2_theoretical_sectors_global_ideal",
    "memory_l1_wavefronts_shared",
    "memory_l1_wavefronts_shared_ideal",
};

static double *line_field(struct profile_line *l, int m)
{
    switch (m) {
    case M_INST:
        return &l->inst;
    case M_THREADS:
        return &l->threads;
    case M_DIV:
        return &l->divergent;
    case M_SEC:
        return &l->sectors;
    case M_SEC_IDEAL:
        return &l->sectors_ideal;
    case M_WF:
        return &l->wavefronts;
    default:
        return &l->wavefronts_ideal;
    }
}

/* The lines' index: open addressing over (kernel, file, line), twice the
 * most lines kept, so a hostile page of many rows stays linear. */
#define SRC_SLOTS (2 * PROFILE_SOURCE_MAX_LINES)

static size_t line_hash(const char *kernel, const char *file, int line)
{
    size_t h = (size_t)line * 2654435761u;
    for (const char *p = kernel; *p; p++)
        h = h * 31 + (unsigned char)*p;
    for (const char *p = file; *p; p++)
        h = h * 37 + (unsigned char)*p;
    return h % SRC_SLOTS;
}

/* The entry of (kernel, file, line), added when new (file and text as
 * ncu wrote them; kept cleaned); NULL when full or out of memory. */
static struct profile_line *line_get(struct profile_source *s, size_t *slots, const char *kernel,
                                     const char *file, int line, const char *text)
{
    char *cf = text_clean(file, 120);
    if (!cf)
        return NULL;
    size_t h = line_hash(kernel, cf, line);
    for (size_t k = 0; k < SRC_SLOTS; k++, h = (h + 1) % SRC_SLOTS) {
        if (slots[h] == 0)
            break;
        struct profile_line *l = &s->lines[slots[h] - 1];
        if (l->line == line && strcmp(l->kernel, kernel) == 0 && strcmp(l->file, cf) == 0) {
            free(cf);
            return l;
        }
    }
    if (s->n >= PROFILE_SOURCE_MAX_LINES || slots[h] != 0) {
        free(cf);
        return NULL;
    }
    if (!s->lines && !(s->lines = calloc(PROFILE_SOURCE_MAX_LINES, sizeof *s->lines))) {
        free(cf);
        return NULL;
    }
    struct profile_line *l = &s->lines[s->n];
    memset(l, 0, sizeof *l);
    l->line = line;
    l->file = cf;
    l->kernel = strdup(kernel);
    l->text = text_clean(text, PROFILE_SOURCE_TEXT);
    if (!l->kernel || !l->text) {
        free(l->kernel);
        free(l->file);
        free(l->text);
        return NULL;
    }
    slots[h] = ++s->n;
    return l;
}

/* Where the parser stands: the block's file and kernel, the header's
 * metric columns. */
struct src_state {
    char file[512]; /* base name of the block's file, "" when not the student's */
    char kernel[256];
    int col[M_N];
    int have_header;
};

/* One CSV row (f, nf fields). Returns 0 or -ENOMEM. */
static int source_row(struct profile_source *s, size_t *slots, struct src_state *st,
                      const char *dir, char **f, int nf)
{
    if (nf >= 2 && strcmp(f[0], "File Path") == 0) {
        const char *base = strrchr(f[1], '/');
        snprintf(st->file, sizeof st->file, "%s", in_dir(f[1], dir) ? base + 1 : "");
        st->have_header = 0;
        return 0;
    }
    if (nf >= 2 && strcmp(f[0], "Function Name") == 0) {
        fn_base(f[1], st->kernel, sizeof st->kernel);
        return 0;
    }
    if (nf >= 1 && strcmp(f[0], "Line No") == 0) {
        for (int m = 0; m < M_N; m++) {
            st->col[m] = -1;
            for (int c = 2; c < nf && st->col[m] < 0; c++)
                if (strcmp(f[c], metric_names[m]) == 0)
                    st->col[m] = c;
        }
        st->have_header = 1;
        return 0;
    }
    /* A source line of the student's file: "17","text",... (SASS rows have
     * no line number). */
    if (!st->have_header || !st->file[0] || !st->kernel[0] || nf < 2 || !f[0][0])
        return 0;
    char *end;
    long ln = strtol(f[0], &end, 10);
    if (*end || ln <= 0 || ln > 10000000)
        return 0;
    struct profile_line *l = line_get(s, slots, st->kernel, st->file, (int)ln, f[1]);
    if (!l)
        return s->n >= PROFILE_SOURCE_MAX_LINES ? 0 : -ENOMEM;
    for (int m = 0; m < M_N; m++) {
        double v = st->col[m] >= 0 && st->col[m] < nf ? profile_csv_number(f[st->col[m]]) : NAN;
        if (v > 0)
            *line_field(l, m) += v;
    }
    return 0;
}

int profile_source_parse(const char *text, const char *dir, struct profile_source *s)
{
    char **f = calloc(SRC_MAX_FIELDS, sizeof *f);
    struct src_state *st = calloc(1, sizeof *st);
    size_t *slots = calloc(SRC_SLOTS, sizeof *slots); /* index + 1 into s->lines; 0: free */
    int rc = 0;
    assert(s->n == 0); /* one page per profile_source */
    if (!f || !st || !slots) {
        free(f);
        free(st);
        free(slots);
        return -ENOMEM;
    }
    for (const char *p = text; p && *p && rc == 0;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *line = p;
        p = nl ? nl + 1 : NULL;
        if (len && line[len - 1] == '\r')
            len--;
        if (!len || line[0] != '"')
            continue; /* ==PROF== lines, the program's own output */
        int nf = profile_csv_fields(line, len, f, SRC_MAX_FIELDS);
        if (nf < 0) {
            rc = -ENOMEM;
            break;
        }
        rc = source_row(s, slots, st, dir, f, nf);
        profile_csv_fields_free(f, nf);
    }
    free(f);
    free(st);
    free(slots);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The hints. */

/* What makes a line the worst for hint id: its score (0: not a candidate). */
static double line_score(const char *id, const struct profile_line *l, int by_idle)
{
    if (strcmp(id, "uncoalesced_global") == 0)
        return l->sectors - l->sectors_ideal;
    if (strcmp(id, "bank_conflicts") == 0)
        return l->wavefronts - l->wavefronts_ideal;
    if (strcmp(id, "divergence") == 0)
        return by_idle ? 32.0 * l->inst - l->threads : l->divergent;
    return 0;
}

/* Does line l belong to kernel (or is kernel NULL: any)? */
static int line_of(const struct profile_line *l, const char *kernel)
{
    char base[256];
    if (!kernel)
        return 1;
    fn_base(kernel, base, sizeof base);
    return strcmp(l->kernel, base) == 0;
}

/* The worst line for hint id of kernel, or NULL. */
static const struct profile_line *line_worst(const struct profile_source *s, const char *id,
                                             const char *kernel, int by_idle)
{
    const struct profile_line *best = NULL;
    double bv = 0;
    for (size_t i = 0; i < s->n; i++) {
        double v = line_score(id, &s->lines[i], by_idle);
        if (line_of(&s->lines[i], kernel) && v > bv && isfinite(v)) {
            bv = v;
            best = &s->lines[i];
        }
    }
    return best;
}

/* Does s hold lines of one kernel only? */
static int one_kernel(const struct profile_source *s)
{
    for (size_t i = 1; i < s->n; i++)
        if (strcmp(s->lines[i].kernel, s->lines[0].kernel) != 0)
            return 0;
    return s->n > 0;
}

/* The sentence for hint id at line l. */
static void line_sentence(const char *id, const struct profile_line *l, int by_idle, char *buf,
                          size_t len)
{
    char where[400];
    snprintf(where, sizeof where, "`%s:%d`%s%s%s", l->file, l->line, l->text[0] ? " (`" : "",
             l->text, l->text[0] ? "`)" : "");
    if (strcmp(id, "uncoalesced_global") == 0)
        snprintf(buf, len,
                 " The worst line is %s: %.0f sectors where coalesced access would take %.0f "
                 "(%.1fx).",
                 where, l->sectors, l->sectors_ideal,
                 l->sectors_ideal > 0 ? l->sectors / l->sectors_ideal : 0.0);
    else if (strcmp(id, "bank_conflicts") == 0)
        snprintf(buf, len,
                 " The worst line is %s: %.0f shared-memory wavefronts where %.0f would do "
                 "(%.1f-way).",
                 where, l->wavefronts, l->wavefronts_ideal,
                 l->wavefronts_ideal > 0 ? l->wavefronts / l->wavefronts_ideal : 0.0);
    else if (!by_idle)
        snprintf(buf, len, " The branch that splits warps is at %s: %.0f divergent branch targets.",
                 where, l->divergent);
    else
        snprintf(buf, len, " The line with the most idle lanes is %s: %.1f of 32 threads active.",
                 where, l->inst > 0 ? l->threads / l->inst : 0.0);
}

/* The hints a line explains. */
static int line_hint(const char *id)
{
    return id && (strcmp(id, "uncoalesced_global") == 0 || strcmp(id, "bank_conflicts") == 0 ||
                  strcmp(id, "divergence") == 0);
}

int profile_hints_want_lines(const json_t *hints)
{
    size_t i;
    json_t *h;
    json_array_foreach(hints, i,
                       h) if (line_hint(json_string_value(json_object_get(h, "id")))) return 1;
    return 0;
}

int profile_hints_locate(json_t *hints, const struct profile_source *s)
{
    size_t i;
    json_t *h;
    int located = 0;
    if (!json_is_array(hints) || !s || s->n == 0)
        return 0;
    /* The fallback for names ncu spells otherwise (Numba's): one kernel in
     * the page, and the line hints all about one kernel. */
    int single = one_kernel(s);
    const char *first = NULL;
    json_array_foreach(hints, i, h)
    {
        const char *id = json_string_value(json_object_get(h, "id"));
        const char *k = json_string_value(json_object_get(h, "kernel"));
        if (!line_hint(id))
            continue;
        if (first && (!k || strcmp(first, k) != 0))
            single = 0;
        first = k ? k : "";
    }
    json_array_foreach(hints, i, h)
    {
        const char *id = json_string_value(json_object_get(h, "id"));
        const char *kernel = json_string_value(json_object_get(h, "kernel"));
        const char *text = json_string_value(json_object_get(h, "text"));
        if (!line_hint(id) || !text)
            continue;
        int by_idle = 0;
        const struct profile_line *l = line_worst(s, id, kernel, 0);
        if (!l && single)
            l = line_worst(s, id, NULL, 0);
        if (!l && strcmp(id, "divergence") == 0) {
            by_idle = 1;
            l = line_worst(s, id, kernel, 1);
            if (!l && single)
                l = line_worst(s, id, NULL, 1);
        }
        if (!l)
            continue;
        char sentence[700], *joined = NULL;
        line_sentence(id, l, by_idle, sentence, sizeof sentence);
        if (asprintf(&joined, "%s%s", text, sentence) < 0)
            continue;
        json_object_set_new(h, "text", json_string(joined));
        json_object_set_new(h, "file", json_string(l->file));
        json_object_set_new(h, "line", json_integer(l->line));
        json_object_set_new(h, "source", json_string(l->text));
        free(joined);
        located++;
    }
    return located;
}

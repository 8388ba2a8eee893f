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
#include "runner/feedback/hint.h"
#include "runner/feedback/source.h"

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

/* A field of the student's output (a device assert's file, a sanitizer's
 * finding), at most max bytes, made inert for a Markdown code span: no
 * control characters, no backtick, no newline, valid UTF-8 (score.h). The
 * caller puts it between backticks. */
static const char *md_code(char *buf, size_t len, const char *src, size_t max)
{
    size_t n = src ? strnlen(src, max) : 0;
    score_text_clean(buf, len, src, n, 1);
    return buf;
}

/* 1 when s is only made of the characters in set (and not empty). */
static int only_of(const char *s, const char *set)
{
    return s[0] && strspn(s, set) == strlen(s);
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
 * params' "elements" when a case declares it; the lab's "work.elements"
 * formula (lab.json: matmul the largest of A, B, C; embedding the weight
 * table and the output); else the largest parameter (reduction: n). 0 when
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
#undef P
    if (lab_case_work(f->lab, lc, "elements", &best) == 0)
        return best;
    best = 0;
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

/* A file name the program's output gave: letters, digits and ._+- only
 * (Markdown-inert outside a code span), else "your file". */
static const char *file_name(const char *file)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-+";
    return file && strlen(file) < 100 && only_of(file, ok) && file[0] != '.' ? file : "your file";
}

/* "kernel.cu line 12" of a finding, or "" when it has no line. */
static void finding_where(const struct score_finding *fd, char *buf, size_t len)
{
    if (fd->line > 0)
        snprintf(buf, len, " at %s line %d", file_name(fd->file), fd->line);
    else
        buf[0] = '\0';
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
    int failed = 0;
    for (size_t i = 0; i < f->ncases; i++)
        failed |= case_failed(&f->cases[i]);
    if (!failed)
        return; /* an assert line on stderr with every case right: the student's print */
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
    /* Every field is the program's stderr, which the student writes too:
     * the condition goes into a code span, the file, block and thread
     * only when they are what CUDA prints (Markdown-inert as they are). */
    const char *ce = strstr(a + 11, "` failed"), *eol = strchr(a, '\n');
    char cond[200] = "?", file[128] = "", block[40] = "?", thread[40] = "?";
    int line = 0;
    if (ce && (!eol || ce < eol))
        md_code(cond, sizeof cond, a + 11, (size_t)(ce - a - 11 > 190 ? 190 : ce - a - 11));
    char path[256];
    if (sscanf(ls, "%255[^:\n]:%d:", path, &line) == 2) {
        const char *base = strrchr(path, '/');
        snprintf(file, sizeof file, "%s", file_name(base ? base + 1 : path));
    }
    const char *b = strstr(ls, "block: ["), *t = strstr(ls, "thread: [");
    if (b && b < a)
        sscanf(b + 7, "%39[^]\n]]", block);
    if (t && t < a)
        sscanf(t + 8, "%39[^]\n]]", thread);
    if (block[0] == '[' && only_of(block + 1, "0123456789, "))
        strcat(block, "]");
    else
        snprintf(block, sizeof block, "?");
    if (thread[0] == '[' && only_of(thread + 1, "0123456789, "))
        strcat(thread, "]");
    else
        snprintf(thread, sizeof thread, "?");
    hint_add(out, "device-assert", cname,
             "A device-side `assert(%s)` failed%s%s%s%.0d in block %s, thread %s%s%s: that "
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
    char detail[200] = "", why[240], msg[204];
    if (code)
        source_launch_over_limits(code, f->python, detail, sizeof detail);
    char sizes[160] = "";
    if (hit)
        case_sizes(f, hit->name, sizes, sizeof sizes);
    if (hit)
        snprintf(why, sizeof why, "case %s%s%s%s: %s", hit->name, sizes[0] ? " (" : "", sizes,
                 sizes[0] ? ")" : "", what);
    else
        snprintf(why, sizeof why, "compute-sanitizer: `%s`", md_code(msg, sizeof msg, fw, 200));
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

/* unset-output: a NaN answer while memcheck, which runs without the
 * harness's NaN guard past the inputs, found no access past any end. The
 * harness fills the output with NaN before every call; a kernel that only
 * adds to it (one atomicAdd per block, never a first write of 0) answers
 * NaN + x = NaN. A missing bounds check reads past n instead, which
 * memcheck reports. */
static void rec_unset_output(const struct hint_facts *f, struct hint_list *out)
{
    int memcheck_clean = 0;
    for (size_t i = 0; i < f->nsanitizers; i++) {
        const struct score_sanitizer *s = &f->sanitizers[i];
        if (s->tool && strcmp(s->tool, "memcheck") == 0)
            memcheck_clean = s->ran && s->clean && s->nfindings == 0;
    }
    if (!memcheck_clean)
        return;
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        if (!c->ran || c->passed || !c->have_value || !isnan(c->got) || !isfinite(c->expected))
            continue;
        char sizes[160];
        case_sizes(f, c->name, sizes, sizeof sizes);
        hint_add(out, "unset-output", c->name,
                 "Output never set in case %s (%s): your answer is NaN, and memcheck found no "
                 "access past the end of any buffer. Before every call the harness fills the "
                 "output with NaN (device memory holds whatever was there until you write it), "
                 "and your code only added to it: NaN + x is NaN. Set the output first, then "
                 "add the partial sums: %s.",
                 c->name, sizes,
                 f->python ? "a one-thread kernel that writes 0 (`zero[1, 1](d_out)`, or "
                             "`d_out.fill(0)` in CuPy) before the kernel that calls "
                             "`cuda.atomic.add`"
                           : "`cudaMemset(d_out, 0, sizeof(float))` before the kernel that "
                             "calls `atomicAdd` (or have one thread write, not add, the first "
                             "value)");
        return;
    }
}

/* std-ddof: the judge found the columns standardized with the sample
 * standard deviation (it says "ddof=1": reference/pipeline/judge.py). */
static void rec_std_ddof(const struct hint_facts *f, struct hint_list *out)
{
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        if (!c->ran || c->passed || !case_says(f, c, "ddof=1"))
            continue;
        hint_add(out, "std-ddof", c->name,
                 "The sample standard deviation where the population one is asked for: in case "
                 "%s your columns match a std that divides by n - 1 (`ddof=1`), off by a factor "
                 "sqrt(n / (n - 1)). The pipeline's std divides by n: `x.std(axis=0)` with no "
                 "`ddof` (NumPy's and CuPy's default is `ddof=0`), or `sqrt(sum((x - mean)^2) "
                 "/ n)` if you write it yourself.",
                 c->name);
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
            if (text_find(fd->message, "misaligned"))
                continue; /* an alignment error (sanitizer-finding), not past the end */
            char where[160], msg[128];
            finding_where(fd, where, sizeof where);
            hint_add(out, "bounds-check", NULL,
                     "Missing bounds check: %s found an access past the end of a buffer%s "
                     "(`%s`). The grid is a whole number of blocks, so the threads of the "
                     "last block run past n: %s.",
                     f->sanitizers[i].tool, where, md_code(msg, sizeof msg, fd->message, 120),
                     fix);
            return;
        }
    for (size_t i = 0; i < f->ncases; i++) {
        const struct score_case *c = &f->cases[i];
        const char *ev = NULL;
        if (c->ran && !c->passed && case_says(f, c, "past the end of the output"))
            ev = "it wrote past the end of the output";
        else if (c->ran && !c->passed && c->have_value && isnan(c->got) && isfinite(c->expected) &&
                 !hint_find(out, "unset-output"))
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
            char where[160], msg[128];
            finding_where(fd, where, sizeof where);
            hint_add(out, "missing-syncthreads", NULL,
                     "Missing `__syncthreads()`: racecheck found a shared-memory race%s "
                     "(`%s`). A thread reads a value another thread writes to shared "
                     "memory with no barrier between them: put `__syncthreads()` after the "
                     "writes and before the reads, and in a loop also before the buffer is "
                     "overwritten in the next iteration.",
                     where, md_code(msg, sizeof msg, fd->message, 120));
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
            char where[160], msg[128];
            finding_where(fd, where, sizeof where);
            hint_add(out, "divergent-barrier", NULL,
                     "A barrier in divergent code%s: not every thread of the block reaches "
                     "this `__syncthreads()` (`%s`). %s",
                     where, md_code(msg, sizeof msg, fd->message, 120), fix);
            return;
        }
    int line = 0;
    char cond[80];
    if (code) {
        if (source_divergent_barrier(code, f->python, &line, cond, sizeof cond)) {
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

/* The first sign that a device allocation failed, or NULL: the harness's
 * refusal past the student's budget, CUDA's or Numba's out-of-memory, on
 * stderr or in a case's feedback. */
static const char *oom_evidence(const struct hint_facts *f, const struct score_case **cp)
{
    static const char *const words[] = {"refused your cudaMalloc",
                                        "out of memory",
                                        "CUDA_ERROR_OUT_OF_MEMORY",
                                        "cudaErrorMemoryAllocation",
                                        "OutOfMemoryError",
                                        "could not allocate its buffers",
                                        NULL};
    *cp = NULL;
    for (size_t i = 0; i < f->ncases; i++)
        for (size_t k = 0; words[k]; k++)
            if (case_failed(&f->cases[i]) && case_says(f, &f->cases[i], words[k])) {
                *cp = &f->cases[i];
                return words[k];
            }
    for (size_t k = 0; words[k]; k++)
        if (text_find(f->program_err, words[k]))
            return words[k];
    return NULL;
}

/* A failed case with no answer: outputs never written, or none at all
 * (every judge says a case the program never reached is "no result: ...",
 * docs/formats.md). */
static int case_unanswered(const struct score_case *c)
{
    static const char none[] = "no result:";
    return case_failed(c) &&
           (!c->ran || c->unwritten > 0 ||
            (c->message && strncmp(c->message, none, sizeof none - 1) == 0));
}

/* device-memory: an allocation failed, and a case failed (its output
 * never written, or an error): the memory, not the grid. Evidence on
 * stderr alone names the first case left without an answer, never one
 * that answered wrong (a Numba race's wrong sums before an allocation of
 * ours failed: the hint blamed the memory for them). */
static void rec_device_memory(const struct hint_facts *f, struct hint_list *out)
{
    const struct score_case *c = NULL;
    const char *what = oom_evidence(f, &c);
    for (size_t i = 0; what && !c && i < f->ncases; i++)
        if (case_unanswered(&f->cases[i]))
            c = &f->cases[i];
    if (!what || !c)
        return;
    hint_add(out, "device-memory", c->name,
             "A device allocation failed (%s) and case %s has no answer: the kernel that "
             "should have written the output did not run on the memory it needed, so this is "
             "not your grid. Your code may hold at most the lab's device memory at once: "
             "allocate only the scratch a call needs (a few bytes per block, not a copy of the "
             "input or the GPU's free memory), free it before the call returns%s, and check "
             "every allocation's result.",
             what, c->name,
             f->python ? " (or let CuPy's pool reuse it)" : " (`cudaFree`), or allocate once");
}

/* grid-coverage: outputs never written, or a sum missing a share. */
static void rec_grid_coverage(const struct hint_facts *f, struct hint_list *out)
{
    const struct hint *ovf = hint_find(out, "index-overflow-32"),
                      *lim = hint_find(out, "launch-limits"),
                      *sat = hint_find(out, "float32-saturation");
    if (hint_find(out, "device-memory") || hint_find(out, "unset-output"))
        return; /* outputs unwritten for want of memory; a NaN sum never set */
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

/* " in KERNEL at line N" (either part when known) into where. */
static const char *profile_where(const struct hint_profile *p, int line, char *where, size_t len)
{
    where[0] = '\0';
    char k[128];
    if (p->kernel)
        md_code(k, sizeof k, p->kernel, 120); /* a C++ name may hold '*' and '_' */
    if (p->kernel && line > 0)
        snprintf(where, len, " in `%s` at line %d", k, line);
    else if (p->kernel)
        snprintf(where, len, " in `%s`", k);
    else if (line > 0)
        snprintf(where, len, " at line %d", line);
    return where;
}

/* The three entries of the profiler's numbers (runner/feedback/profile.c). */
static void rec_profile(const struct hint_facts *f, struct hint_list *out)
{
    const struct hint_profile *p = f->profile;
    char where[200];
    if (!p)
        return;
    double ideal = p->ideal_sectors_per_request > 0 ? p->ideal_sectors_per_request : 4;
    if (isfinite(p->sectors_per_request) && p->sectors_per_request > 2 * ideal)
        hint_add(out, "uncoalesced", NULL,
                 "Uncoalesced global memory access%s: %.1f sectors of 32 bytes per request "
                 "where a coalesced access takes %.0f. Neighbouring threads of a warp should "
                 "touch neighbouring addresses: index with `threadIdx.x` along the contiguous "
                 "dimension, or stage the data through shared memory.",
                 profile_where(p, p->line_uncoalesced, where, sizeof where),
                 p->sectors_per_request, ideal);
    if (isfinite(p->bank_conflict_ways) && p->bank_conflict_ways >= 2)
        hint_add(out, "bank-conflicts", NULL,
                 "Shared-memory bank conflicts%s: %.1f-way (a request takes %.1f passes where "
                 "1 is ideal). Threads of a warp hit the same bank with different addresses: "
                 "pad the array (`[32][33]` instead of `[32][32]`) or change which thread "
                 "reads which element.",
                 profile_where(p, p->line_bank_conflicts, where, sizeof where),
                 p->bank_conflict_ways, p->bank_conflict_ways);
    if (isfinite(p->branch_efficiency) && p->branch_efficiency < 0.9)
        hint_add(out, "divergence", NULL,
                 "Warp divergence%s: only %.0f%% of branches were taken the same way by the "
                 "whole warp. Conditions on `threadIdx.x %% k` split every warp; give whole "
                 "warps the same path (e.g. `if (threadIdx.x < k)` with a halving stride).",
                 profile_where(p, p->line_divergence, where, sizeof where),
                 100 * p->branch_efficiency);
}

/* sanitizer-finding: any other finding keeps its own hint in the list. */
static void rec_sanitizer_other(const struct hint_facts *f, struct hint_list *out)
{
    for (size_t i = 0; i < f->nsanitizers; i++)
        for (size_t k = 0; k < f->sanitizers[i].nfindings; k++) {
            const struct score_finding *fd = &f->sanitizers[i].findings[k];
            const char *m = fd->message;
            /* memcheck's "Invalid __global__ read ... (misaligned address)" is
             * no bounds check's: it keeps its own hint */
            int misaligned = text_find(m, "misaligned") != NULL;
            if (!fd->hint || (text_find(m, "Invalid __") && !misaligned) ||
                text_find(m, "Out-of-range") || text_find(m, "Race reported") ||
                text_find(m, "hazard") || text_find(m, " race") || text_find(m, "Barrier") ||
                text_find(m, "divergent") || text_find(m, "invalid configuration") ||
                text_find(m, "cudaLaunchKernel") || text_find(m, "too many resources"))
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

/* A hint in the words of a Python (Numba) submission: CUDA C's names of
 * the barrier, the atomic add and shared memory become Numba's, in the
 * catalogue's texts and in the sanitizers' (sanitizer.c) alike (the last
 * two only as code, not inside a quoted finding such as "Invalid
 * __shared__ read"). */
static void hint_python_words(struct hint *h)
{
    static const char *const from[] = {"__syncthreads()", "__syncthreads", "`atomicAdd`",
                                       "`__shared__`", NULL};
    static const char *const to[] = {"cuda.syncthreads()", "cuda.syncthreads()",
                                     "`cuda.atomic.add`", "`cuda.shared.array`", NULL};
    char big[2 * HINT_TEXT_MAX];
    size_t o = 0;
    for (const char *p = h->text; *p && o + 32 < sizeof big;) {
        size_t k = 0;
        while (from[k] && strncmp(p, from[k], strlen(from[k])) != 0)
            k++;
        if (from[k]) {
            memcpy(big + o, to[k], strlen(to[k]));
            o += strlen(to[k]);
            p += strlen(from[k]);
        } else {
            big[o++] = *p++;
        }
    }
    big[o] = '\0';
    score_text_clean(h->text, sizeof h->text, big, o, 0); /* cut between characters */
}

static const char *const catalogue[] = {"device-assert",
                                        "launch-limits",
                                        "device-memory",
                                        "index-overflow-32",
                                        "float32-saturation",
                                        "std-ddof",
                                        "unset-output",
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
    char *code = source_code(f->source, f->source_len, f->python);
    rec_device_assert(f, out);
    rec_launch_limits(f, code, out);
    rec_device_memory(f, out);
    rec_index_overflow(f, out);
    rec_float32_saturation(f, out);
    rec_std_ddof(f, out);
    rec_unset_output(f, out);
    rec_bounds_check(f, out);
    rec_missing_sync(f, code, out);
    rec_divergent_barrier(f, code, out);
    rec_grid_coverage(f, out);
    rec_profile(f, out);
    rec_sanitizer_other(f, out);
    free(code);
    for (size_t i = 0; i < out->n; i++) {
        if (f->python)
            hint_python_words(&out->v[i]);
        assert(out->v[i].id && out->v[i].text[0]);
    }
}

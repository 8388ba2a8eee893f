/*
 * judge_common.cu - the trusted judge's shared half: channel parsing (hostile
 * input), timing metrics, the JSON verdict, main(). Included at the end of
 * reference/<lab>/judge.cu. See judge_common.cuh and docs/formats.md.
 *
 * Exit status: 0 the verdict JSON was printed (whatever it says); 2 bad
 * command line, unreadable channel or a judge failure (a system error: the
 * runner must not charge the student).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JD_MAX_LINE (1u << 20)        /* a timing record of 100000 samples fits */
#define JD_MAX_ERRORS 16
/* A result this far past the copy-bandwidth floor or the FP32 peak is not
 * physics: it is flagged and earns nothing. */
#define JD_MAX_BANDWIDTH_SHARE 1.5
#define JD_MAX_FLOPS_SHARE 1.05

static void jd_die(const char *fmt, ...)
{
    va_list ap;
    fputs("judge: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

#include "judge_parse.h"

/* ------------------------------------------------------------ the channel */

struct jd_chan {
    FILE *f;
    char *line;
};

/* Open the channel as a regular file, never following a link (the runner
 * wrote it, but it lay where a sandboxed process could have swapped it). */
static void jd_chan_open(struct jd_chan *ch, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        jd_die("%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        jd_die("%s: not a regular file", path);
    ch->f = fdopen(fd, "rb");
    ch->line = (char *)malloc(JD_MAX_LINE + 1);
    if (ch->f == NULL || ch->line == NULL)
        jd_die("%s: cannot read", path);
}

/* The next line (without '\n') into ch->line. Returns its length, -1 at a
 * clean end of file, -2 when the line is too long or the file ends mid-line. */
static long jd_chan_line(struct jd_chan *ch)
{
    size_t n = 0;
    int c;
    while ((c = getc(ch->f)) != EOF) {
        if (c == '\n') {
            ch->line[n] = '\0';
            return (long)n;
        }
        if (n == JD_MAX_LINE)
            return -2;
        ch->line[n++] = (char)c;
    }
    return n == 0 ? -1 : -2;
}

/* ---------------------------------------------------------- JSON output */

static void jd_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20 || c > 0x7e)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* A finite number, or null (JSON has no NaN/inf). */
static void jd_json_num(double x)
{
    if (isfinite(x))
        printf("%.9g", x);
    else
        printf("null");
}

/* Keep only printable ASCII of a hostile string, at most max bytes; a
 * longer one ends in CHANNEL_CUT_MARK (channel_limits.h), so a reader
 * knows that more was said. */
static void jd_sanitize(char *s, size_t max)
{
    size_t n = 0, mark = sizeof(CHANNEL_CUT_MARK) - 1;
    char *p = s;
    for (; *p && n < max; p++)
        if ((unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e)
            s[n++] = *p;
    int more = 0;
    for (; *p && !more; p++)
        more = (unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e;
    if (more && max > mark)
        memcpy(s + max - mark, CHANNEL_CUT_MARK, mark);
    s[n] = '\0';
}

/* ------------------------------------------------------------ the verdict */

struct jd_case {
    const struct lab_case_def *def;
    int requested, seen;
    struct jd_result r;
};

static struct jd_case jd_cases[LAB_NCASES];
static struct jd_case jd_recheck;      /* the timed case's re-check */
static char jd_errors[JD_MAX_ERRORS][200];
static int jd_nerrors;

static void jd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void jd_error(const char *fmt, ...)
{
    va_list ap;
    if (jd_nerrors == JD_MAX_ERRORS)
        return;
    va_start(ap, fmt);
    vsnprintf(jd_errors[jd_nerrors++], sizeof(jd_errors[0]), fmt, ap);
    va_end(ap);
}

static void jd_fail(struct jd_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jd_fail(struct jd_result *r, const char *fmt, ...)
{
    va_list ap;
    r->passed = 0;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    va_end(ap);
}

static const struct lab_case_def *jd_case_def(const char *name)
{
    for (size_t i = 0; i < LAB_NCASES; i++)
        if (strcmp(LAB_CASES[i].name, name) == 0)
            return &LAB_CASES[i];
    return NULL;
}

struct jd_device {
    int seen;
    char name[128], cc[16];
    double sms, copy_gbs, peak_gflops;
};

struct jd_timing {
    int seen;
    const struct lab_case_def *def;
    double *samples;
    size_t n;
    double event_median_ms, reported_median_ms;
    int converged;
    char seed2[32];
};

static void jd_read_device(const struct jd_obj *o, struct jd_device *d)
{
    const struct jd_val *v;
    memset(d, 0, sizeof(*d));
    d->seen = 1;
    if ((v = jd_get(o, "name", JD_STR)))
        snprintf(d->name, sizeof(d->name), "%.127s", v->str);
    if ((v = jd_get(o, "cc", JD_STR)))
        snprintf(d->cc, sizeof(d->cc), "%.15s", v->str);
    jd_sanitize(d->name, sizeof(d->name) - 1);
    jd_sanitize(d->cc, sizeof(d->cc) - 1);
    if ((v = jd_get(o, "sms", JD_NUM)) && v->num > 0 && v->num < 1e5)
        d->sms = v->num;
    if ((v = jd_get(o, "copy_gbs", JD_NUM)) && v->num > 0 && v->num < 1e6)
        d->copy_gbs = v->num;
    if ((v = jd_get(o, "peak_fp32_gflops", JD_NUM)) && v->num > 0 && v->num < 1e8)
        d->peak_gflops = v->num;
}

/* A case record whose status (v; NULL when absent) is not "ok": fail r
 * with the sentence its error, cause and error_name make. */
static void jd_status_fail(const struct jd_obj *o, const struct jd_val *v, struct jd_result *r)
{
    const struct jd_val *err = jd_get(o, "error", JD_STR), *cause = jd_get(o, "cause", JD_STR);
    char e1[JD_MAX_STR], e2[JD_MAX_STR];
    snprintf(e1, sizeof(e1), "%s", err ? err->str : "unknown error");
    snprintf(e2, sizeof(e2), "%s", cause ? cause->str : "");
    jd_sanitize(e1, 150);
    jd_sanitize(e2, 400);
    const struct jd_val *en = jd_get(o, "error_name", JD_STR);
    if (v && strcmp(v->str, "runtime_error") == 0 && en && strcmp(en->str, "harness") == 0)
        jd_fail(r, "%s (%s)", e2, e1);
    /* A Python submission's owner (labs/common/py/owner.py): an
     * exception of the student's code, its process gone, or timed calls
     * that returned before their output was right. */
    else if (v && strcmp(v->str, "runtime_error") == 0 && en &&
             strcmp(en->str, "python_exception") == 0)
        jd_fail(r, "your code raised %s (at %s)", e1, e2);
    else if (v && strcmp(v->str, "runtime_error") == 0 && en &&
             strcmp(en->str, "python_process") == 0)
        jd_fail(r, "%s: %s", e1, e2);
    else if (v && strcmp(v->str, "runtime_error") == 0 && en &&
             (strcmp(en->str, "python_timing") == 0 || strcmp(en->str, "python_host") == 0))
        jd_fail(r, "%s: %s", e1, e2);
    else if (v && strcmp(v->str, "runtime_error") == 0)
        jd_fail(r, "your kernel crashed: %s. %s", e1, e2);
    else if (v && strcmp(v->str, "launch_error") == 0)
        jd_fail(r, "CUDA error: %s. %s", e1, e2);
    else
        jd_fail(r, "the harness reported an unknown status");
}

/* Judge one "case" record; reads its payload. Returns 0, or -1 when the
 * stream cannot be trusted any further (bad framing). */
static int jd_case_record(struct jd_chan *ch, const struct jd_obj *o, uint64_t seed,
                          const char *timed_name)
{
    const struct jd_val *name = jd_get(o, "name", JD_STR), *v;
    const struct jd_val *bytes = jd_get(o, "bytes", JD_NUM);
    char base[80];
    const char *at;
    const struct lab_case_def *def;
    struct jd_case *jc;
    int recheck = 0;
    uint64_t cs;
    size_t count;
    float *out;

    if (name == NULL) {
        jd_error("a case record without a name");
        return bytes ? -1 : 0;
    }
    snprintf(base, sizeof(base), "%.79s", name->str);
    at = strchr(name->str, '@');
    if (at != NULL) {
        if (strcmp(at, "@recheck") != 0 || (size_t)(at - name->str) >= sizeof(base)) {
            jd_error("a case record with an unknown suffix");
            return bytes ? -1 : 0;
        }
        base[at - name->str] = '\0';
        recheck = 1;
    }
    def = jd_case_def(base);
    if (def == NULL) {
        jd_error("a record for a case this lab does not have");
        return bytes ? -1 : 0;
    }
    if (recheck) {
        if (timed_name == NULL || strcmp(timed_name, base) != 0) {
            jd_error("a re-check record without its timing record");
            return bytes ? -1 : 0;
        }
        jc = &jd_recheck;
        jc->def = def;
    } else {
        jc = &jd_cases[def - LAB_CASES];
    }
    if (jc->seen) {
        jd_error("case %s appears twice in the channel", name->str);
        jc->r.passed = 0;
        return bytes ? -1 : 0;
    }
    jc->seen = 1;
    jc->r.first_bad_index = -1;

    v = jd_get(o, "status", JD_STR);
    if (v == NULL || strcmp(v->str, "ok") != 0) {
        jd_status_fail(o, v, &jc->r);
        return bytes ? -1 : 0;
    }
    count = JD_LAB.out_count(def);
    v = jd_get(o, "count", JD_NUM);
    if (bytes == NULL || v == NULL || v->num != (double)count || bytes->num != (double)count * 4 ||
        (jd_get(o, "dtype", JD_STR) && strcmp(jd_get(o, "dtype", JD_STR)->str, "f32") != 0)) {
        jd_fail(&jc->r, "the channel record of this case has the wrong size");
        return -1;
    }
    out = (float *)malloc(count * sizeof(float) + 1);
    if (out == NULL)
        jd_die("out of memory for %zu outputs", count);
    if (fread(out, sizeof(float), count, ch->f) != count) {
        free(out);
        jd_fail(&jc->r, "the program stopped while its outputs were being written");
        return -1;
    }
    cs = recheck ? gen_case_seed(gen_recheck_seed(seed), def->name) : gen_case_seed(seed, def->name);
    JD_LAB.judge(def, cs, out, count, &jc->r);
    free(out);
    if ((v = jd_get(o, "inputs_modified", JD_BOOL)) && v->b) {
        const struct jd_val *m = jd_get(o, "modified_count", JD_NUM);
        jd_fail(&jc->r, "your code modified its inputs (%.0f elements changed, counting the "
                        "area just past their ends): inputs are read-only",
                m ? m->num : 1.0);
    } else if ((v = jd_get(o, "oob_writes", JD_NUM)) && v->num > 0) {
        jd_fail(&jc->r, "your code wrote %.0f values past the end of the output buffer: check "
                        "your bounds",
                v->num);
    }
    return 0;
}

static double jd_median(double *x, size_t n)
{
    qsort(x, n, sizeof(double), [](const void *a, const void *b) {
        double p = *(const double *)a, q = *(const double *)b;
        return p < q ? -1 : p > q;
    });
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static void jd_print_result(const char *name, const struct jd_result *r)
{
    printf("{\"name\":");
    jd_json_str(name);
    printf(",\"passed\":%s,\"max_abs_err\":", r->passed ? "true" : "false");
    jd_json_num(r->max_abs_err);
    printf(",\"max_rel_err\":");
    jd_json_num(r->max_rel_err);
    printf(",\"first_bad_index\":%lld,\"unwritten\":%llu,\"message\":", r->first_bad_index,
           r->unwritten);
    jd_json_str(r->message);
    if (r->have_value) {
        printf(",\"got\":");
        jd_json_num(r->got);
        printf(",\"expected\":");
        jd_json_num(r->expected);
    }
    printf("}");
}

static void jd_usage(void) __attribute__((noreturn));
static void jd_usage(void)
{
    fprintf(stderr, "usage: judge --seed HEX --channel FILE [--cases a,b,c] [--device FILE]\n"
                    "       judge --serve   (commands on stdin, one per line, arguments\n"
                    "                        separated by tabs; one verdict line each)\n");
    exit(2);
}

/* One record of a channel or device file (big: static, not on the stack). */
static struct jd_obj jd_rec;

/* The one-shot judge's arguments into seed, path and devpath (NULL when
 * absent); the cases --cases names are marked requested. Exits 2 on a bad
 * command line. */
static void jd_args(int argc, char **argv, uint64_t *seed, const char **path, const char **devpath)
{
    const char *seed_s = NULL, *cases = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
            seed_s = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--channel") == 0)
            *path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--cases") == 0)
            cases = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--device") == 0)
            *devpath = argv[++i];
        else
            jd_usage();
    }
    if (seed_s == NULL || *path == NULL || gen_seed_parse_wide(seed_s, seed) != 0)
        jd_usage();
    if (cases != NULL) {
        char *list = strdup(cases), *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            const struct lab_case_def *d = jd_case_def(t);
            if (d == NULL)
                jd_die("--cases: unknown case \"%s\"", t);
            jd_cases[d - LAB_CASES].requested = 1;
        }
        free(list);
    }
}

/* A trusted device record (from a baseline program's `device` run) into
 * fdev; it overrides the one measured inside the student's process. Dies
 * when the file holds none. */
static void jd_device_file(const char *devpath, struct jd_device *fdev)
{
    struct jd_chan dc;
    long len;
    jd_chan_open(&dc, devpath);
    while ((len = jd_chan_line(&dc)) >= 0) {
        const struct jd_val *t;
        if (jd_parse_obj(dc.line, (size_t)len, &jd_rec) == 0 &&
            (t = jd_get(&jd_rec, "type", JD_STR)) && strcmp(t->str, "device") == 0) {
            jd_read_device(&jd_rec, fdev);
            jd_obj_clear(&jd_rec);
            break;
        }
        jd_obj_clear(&jd_rec);
    }
    fclose(dc.f);
    free(dc.line);
    if (!fdev->seen)
        jd_die("%s: no device record", devpath);
}

/* A "timing" record into tm: the first one only, for a case of the lab,
 * with samples that a clock could have measured. */
static void jd_timing_record(const struct jd_obj *o, struct jd_timing *tm)
{
    const struct jd_val *nm = jd_get(o, "name", JD_STR), *s = jd_get(o, "samples_ms", JD_ARR);
    const struct jd_val *v;
    int ok = 1;
    if (tm->seen || nm == NULL || jd_case_def(nm->str) == NULL || s == NULL || s->narr == 0) {
        jd_error("a timing record that is repeated, unnamed, for an unknown case, or "
                 "without samples");
        return;
    }
    for (size_t i = 0; i < s->narr; i++)
        ok &= s->arr[i] > 0 && s->arr[i] < 1e7;
    if (!ok) {
        jd_error("a timing record with impossible samples");
        return;
    }
    tm->seen = 1;
    tm->def = jd_case_def(nm->str);
    tm->samples = (double *)malloc(s->narr * sizeof(double));
    if (tm->samples == NULL)
        jd_die("out of memory");
    memcpy(tm->samples, s->arr, s->narr * sizeof(double));
    tm->n = s->narr;
    if ((v = jd_get(o, "event_median_ms", JD_NUM)))
        tm->event_median_ms = v->num;
    if ((v = jd_get(o, "median_ms", JD_NUM)))
        tm->reported_median_ms = v->num;
    tm->converged = (v = jd_get(o, "converged", JD_BOOL)) && v->b;
    if ((v = jd_get(o, "seed2", JD_STR)))
        snprintf(tm->seed2, sizeof(tm->seed2), "%.20s", v->str);
    jd_sanitize(tm->seed2, sizeof(tm->seed2) - 1);
}

/* Read the channel at path record by record: the device record into dev,
 * cases judged into jd_cases, the timing into tm; *complete once "done" is
 * read, *fatal when a case says the GPU context died. Stops at the first
 * record whose framing cannot be trusted. */
static void jd_read_channel(const char *path, uint64_t seed, struct jd_device *dev,
                            struct jd_timing *tm, int *complete, int *fatal)
{
    struct jd_chan ch;
    int stop = 0;
    jd_chan_open(&ch, path);
    while (!stop) {
        long len = jd_chan_line(&ch);
        const struct jd_val *t;
        if (len == -1)
            break;
        if (len == -2) {
            jd_error("the channel ends in the middle of a record");
            break;
        }
        if (jd_parse_obj(ch.line, (size_t)len, &jd_rec) != 0) {
            jd_error("a malformed record in the channel");
            jd_obj_clear(&jd_rec);
            break;   /* framing cannot be trusted past a bad line */
        }
        t = jd_get(&jd_rec, "type", JD_STR);
        if (*complete) {
            jd_error("records after \"done\"");
            jd_obj_clear(&jd_rec);
            break;
        }
        if (t == NULL) {
            jd_error("a record without a type");
            stop = jd_get(&jd_rec, "bytes", JD_NUM) != NULL;
        } else if (strcmp(t->str, "device") == 0) {
            if (!dev->seen)
                jd_read_device(&jd_rec, dev);
        } else if (strcmp(t->str, "case") == 0) {
            const struct jd_val *f = jd_get(&jd_rec, "fatal", JD_BOOL);
            if (jd_case_record(&ch, &jd_rec, seed, tm->seen ? tm->def->name : NULL) != 0)
                stop = 1;
            if (f && f->b)
                *fatal = 1;
        } else if (strcmp(t->str, "timing") == 0) {
            jd_timing_record(&jd_rec, tm);
        } else if (strcmp(t->str, "hold") == 0) {
            /* The owner's seconds per step of its exclusive hold: the
             * runner's diagnostics (labs/common/py/owner.py send_hold),
             * nothing to judge. */
        } else if (strcmp(t->str, "done") == 0) {
            *complete = 1;
        } else if (strcmp(t->str, "harness_error") == 0) {
            /* The harness claims a failure of its own (exit 2): the runner
             * reads it and makes the job a system_error; nothing to judge. */
            stop = jd_get(&jd_rec, "bytes", JD_NUM) != NULL;
        } else {
            jd_error("a record of unknown type");
            stop = jd_get(&jd_rec, "bytes", JD_NUM) != NULL;
        }
        jd_obj_clear(&jd_rec);
    }
    fclose(ch.f);
    free(ch.line);
}

/* Why a timing cannot count (into reason, empty when it can): faster than
 * the memory system or the FP32 peak of this GPU, or a failed re-check.
 * Returns 1 when flagged. */
static int jd_timing_flag(double gbs, double bw_share, double gflops, double fl_share,
                          int recheck_ok, char *reason, size_t len)
{
    if (bw_share > JD_MAX_BANDWIDTH_SHARE) {
        snprintf(reason, len,
                 "faster than the memory system allows: %.0f GB/s is %.2fx the copy "
                 "bandwidth measured on this GPU",
                 gbs, bw_share);
        return 1;
    }
    if (fl_share > JD_MAX_FLOPS_SHARE) {
        snprintf(reason, len, "faster than the GPU's FP32 peak: %.0f GFLOP/s is %.2fx the peak",
                 gflops, fl_share);
        return 1;
    }
    if (!recheck_ok) {
        snprintf(reason, len,
                 "the re-check on fresh inputs after timing failed: a cached or "
                 "incomplete answer");
        return 1;
    }
    return 0;
}

/* The verdict's "timing" object for tm (seen) on device d: the median and
 * its confidence half-width, the rates and shares of the GPU's peaks, the
 * re-check, and whether the timing is flagged. */
static void jd_print_timing(const struct jd_timing *tm, const struct jd_device *d, uint64_t seed)
{
    const struct lab_case_def *c = tm->def;
    double *sorted = (double *)malloc(tm->n * sizeof(double)), median, rel, half;
    double bytes = JD_LAB.bytes(c), flops = JD_LAB.flops(c), gbs, gflops, bw_share = NAN,
           fl_share = NAN;
    long lo, hi;
    int flagged, recheck_ok, seed2_ok;
    char reason[300] = "", s2[32];
    if (sorted == NULL)
        jd_die("out of memory");
    memcpy(sorted, tm->samples, tm->n * sizeof(double));
    median = jd_median(sorted, tm->n);
    lo = (long)floor(tm->n / 2.0 - 0.98 * sqrt((double)tm->n));
    hi = (long)ceil(tm->n / 2.0 + 0.98 * sqrt((double)tm->n));
    lo = lo < 0 ? 0 : lo;
    hi = hi > (long)tm->n - 1 ? (long)tm->n - 1 : hi;
    half = (sorted[hi] - sorted[lo]) / 2;
    rel = half / median;
    gbs = bytes / (median * 1e-3) / 1e9;
    gflops = flops / (median * 1e-3) / 1e9;
    if (d->copy_gbs > 0)
        bw_share = gbs / d->copy_gbs;
    if (d->peak_gflops > 0)
        fl_share = gflops / d->peak_gflops;
    snprintf(s2, sizeof(s2), "%016llx", (unsigned long long)gen_recheck_seed(seed));
    seed2_ok = strcmp(s2, tm->seed2) == 0;
    recheck_ok = jd_recheck.seen && jd_recheck.r.passed && seed2_ok;
    if (!jd_recheck.seen)
        jd_fail(&jd_recheck.r, "no re-check result: the program stopped after timing");
    else if (!seed2_ok)
        jd_fail(&jd_recheck.r, "the re-check used the wrong inputs");
    flagged = jd_timing_flag(gbs, bw_share, gflops, fl_share, recheck_ok, reason, sizeof reason);
    printf("{\"case\":");
    jd_json_str(c->name);
    printf(",\"median_ms\":");
    jd_json_num(median);
    printf(",\"rel_err\":");
    jd_json_num(rel);
    printf(",\"n\":%zu,\"converged\":%s,\"event_median_ms\":", tm->n,
           tm->converged ? "true" : "false");
    jd_json_num(tm->event_median_ms);
    printf(",\"bytes\":%.0f,\"flops\":%.0f,\"gbs\":", bytes, flops);
    jd_json_num(gbs);
    printf(",\"gflops\":");
    jd_json_num(gflops);
    printf(",\"bandwidth_share\":");
    jd_json_num(bw_share);
    printf(",\"flops_share\":");
    jd_json_num(fl_share);
    printf(",\"floor_ms\":");
    jd_json_num(d->copy_gbs > 0 ? bytes / (d->copy_gbs * 1e9) * 1e3 : NAN);
    printf(",\"recheck\":");
    jd_print_result(jd_recheck.def ? jd_recheck.def->name : c->name, &jd_recheck.r);
    printf(",\"recheck_passed\":%s,\"flagged\":%s,\"flag_reason\":", recheck_ok ? "true" : "false",
           flagged ? "true" : "false");
    jd_json_str(reason);
    printf(",\"valid\":%s,\"samples_ms\":[", !flagged ? "true" : "false");
    for (size_t i = 0; i < tm->n; i++)
        printf("%s%.6f", i ? "," : "", tm->samples[i]);
    printf("]}");
    free(sorted);
}

/* The verdict line: the device (d, from the file when fdev_seen), every
 * case seen or requested (one never seen fails: the program stopped before
 * it), the timing, the channel's errors. */
static void jd_print_verdict(const struct jd_device *d, int fdev_seen, const struct jd_timing *tm,
                             uint64_t seed, int complete, int fatal)
{
    int first = 1;
    printf("{\"lab\":");
    jd_json_str(LAB_NAME);
    printf(",\"complete\":%s,\"fatal\":%s,\"device\":", complete ? "true" : "false",
           fatal ? "true" : "false");
    if (d->seen) {
        printf("{\"name\":");
        jd_json_str(d->name);
        printf(",\"cc\":");
        jd_json_str(d->cc);
        printf(",\"sms\":%.0f,\"copy_gbs\":%.1f,\"peak_fp32_gflops\":%.0f,\"source\":\"%s\"}",
               d->sms, d->copy_gbs, d->peak_gflops, fdev_seen ? "file" : "channel");
    } else {
        printf("null");
    }
    printf(",\"cases\":[");
    for (size_t i = 0; i < LAB_NCASES; i++) {
        struct jd_case *jc = &jd_cases[i];
        if (!jc->seen && !jc->requested)
            continue;
        if (!jc->seen)
            jd_fail(&jc->r,
                    "no result: the program stopped before this case (it crashed%s, "
                    "was killed, or ran out of time)",
                    fatal ? " the GPU context in an earlier case" : "");
        printf(first ? "" : ",");
        first = 0;
        jd_print_result(jc->def->name, &jc->r);
    }
    printf("],\"timing\":");
    if (!tm->seen)
        printf("null");
    else
        jd_print_timing(tm, d, seed);
    printf(",\"errors\":[");
    for (int i = 0; i < jd_nerrors; i++) {
        printf(i ? "," : "");
        jd_json_str(jd_errors[i]);
    }
    printf("]}\n");
}

/* Judge one channel: print the verdict line. Every call starts from a clean
 * slate (the --serve loop judges several channels in one process). */
static int jd_judge(int argc, char **argv)
{
    const char *path = NULL, *devpath = NULL;
    uint64_t seed = 0;
    struct jd_device dev, fdev;
    struct jd_timing tm;
    int complete = 0, fatal = 0;

    memset(&dev, 0, sizeof(dev));
    memset(&fdev, 0, sizeof(fdev));
    memset(&tm, 0, sizeof(tm));
    memset(jd_cases, 0, sizeof(jd_cases));
    memset(&jd_recheck, 0, sizeof(jd_recheck));
    jd_nerrors = 0;
    for (size_t i = 0; i < LAB_NCASES; i++) {
        jd_cases[i].def = &LAB_CASES[i];
        jd_cases[i].r.first_bad_index = -1;
    }
    jd_recheck.r.first_bad_index = -1;
    jd_args(argc, argv, &seed, &path, &devpath);
    /* CUDA starts lazily, at the first reference computed: a channel that
     * holds no judgeable output (or a hostile one) is judged without a GPU. */
    if (devpath != NULL)
        jd_device_file(devpath, &fdev);
    jd_read_channel(path, seed, &dev, &tm, &complete, &fatal);
    jd_print_verdict(fdev.seen ? &fdev : &dev, fdev.seen, &tm, seed, complete, fatal);
    fflush(stdout);
    free(tm.samples);
    return 0;
}

/* judge --serve: the runner starts the judge while nvcc still compiles the
 * student's file, so that CUDA is up (the context costs ~0.1 s) by the time
 * a channel is ready. "ready" once CUDA is up; then per stdin line (the
 * arguments of a one-shot judge, tab-separated) one verdict line; EOF ends
 * it. A failure of ours exits 2 as in the one-shot form. */
static int jd_serve(void)
{
    char *line = NULL, *av[16];
    size_t cap = 0;
    ssize_t n;
    /* Never timed: its waits for the GPU asleep (harness_common.cu, a
     * check run's). */
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
        (void)cudaGetLastError();
    JD_CUDA(cudaFree(0));
    printf("ready\n");
    fflush(stdout);
    while ((n = getline(&line, &cap, stdin)) > 0) {
        int ac = 0;
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        av[ac++] = (char *)"judge";
        for (char *save = NULL, *t = strtok_r(line, "\t", &save); t && ac < 15;
             t = strtok_r(NULL, "\t", &save))
            av[ac++] = t;
        av[ac] = NULL;
        jd_judge(ac, av);
    }
    free(line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--serve") == 0)
        return jd_serve();
    return jd_judge(argc, argv);
}

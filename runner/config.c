/*
 * config.c - see config.h. The table below is the only place a CUGRADE_*
 * switch of the runner is named with its default; the one getenv of them
 * is in runner_config_parse.
 */
#include "runner/config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum type {
    T_TEXT,   /* any text */
    T_PATH,   /* an absolute path without ".."; or the row's choices, one word */
    T_INT,    /* a whole number in [lo, hi] */
    T_REAL,   /* a number in [lo, hi] */
    T_BOOL,   /* 0 or 1 */
    T_CHOICE, /* one of choices ("a|b|c"), stored as its index */
};

struct row {
    const char *name;
    enum type type;
    int kind;
    size_t off, size;
    const char *dflt; /* NULL: "" for text, -1 for an integer */
    double lo, hi;
    const char *choices;
    const char *unit;
    const char *doc;
};

#define F(field) offsetof(struct runner_config, field), sizeof(((struct runner_config *)0)->field)
#define OP RUNNER_CONFIG_OPERATOR
#define TU RUNNER_CONFIG_TUNING
#define TE RUNNER_CONFIG_TEST

static const struct row rows[] = {
    /* operator */
    {"CUGRADE_ROOT", T_TEXT, OP, F(root), NULL, 0, 0, NULL, "",
     "source tree with labs/ (--root wins); unset: found from the cwd or the binary"},
    {"CUGRADE_BWRAP", T_PATH, OP, F(bwrap), "/usr/bin/bwrap", 0, 0, NULL, "",
     "the bubblewrap binary the sandbox runs"},
    {"CUGRADE_NCU", T_PATH, OP, F(ncu), "/opt/nvidia/nsight-compute/2025.3.1/ncu", 0, 0, "none", "",
     "Nsight Compute for the profiling hints; none: profiling off runner-wide (a path with "
     "no ncu there: each profile says it is unavailable)"},
    {"CUGRADE_PYTHON", T_PATH, OP, F(python), "/usr/bin/python3", 0, 0, NULL, "",
     "the interpreter of Python runs: under /usr, or PREFIX/bin/NAME (a venv) whose PREFIX is "
     "then bound read-only into every Python run"},
    {"CUGRADE_CGROUP", T_TEXT, OP, F(cgroup), NULL, 0, 0, NULL, "",
     "the cgroup under which sandboxes get theirs; unset: the runner's own"},
    /* above the host's own users (regular, systemd's dynamic ones, nobody);
     * the last box (base + SANDBOX_BOXES - 1) still a uid, at most 2^32 - 2 */
    {"CUGRADE_SANDBOX_UID_BASE", T_INT, OP, F(sandbox_uid_base), "1900000000", 65536, 4294966295.0,
     NULL, "uid", "first uid of the sandbox's 1000 boxes (one uid per run)"},
    {"CUGRADE_RUNNERS_PER_HOST", T_INT, OP, F(runners_per_host), "1", 1, 1024, NULL, "",
     "runners sharing this host's cores (--jobs default: cores / this)"},
    {"CUGRADE_GPU_MEMORY_MB", T_INT, OP, F(gpu_memory_mb), NULL, 0, 16777216, NULL, "MiB",
     "GPU memory admission hands out; unset: 88% of the device's; 0: no admission"},
    {"CUGRADE_PROFILE_WAIT", T_REAL, OP, F(profile_wait), "300", 0.001, 86400, NULL, "s",
     "how long a served job's profile waits for its turn after the verdict"},
    /* tuning */
    {"CUGRADE_BASELINE_REFRESH", T_REAL, TU, F(baseline_refresh), "30", 0, 86400, NULL, "s",
     "how often a serving runner refreshes the baseline record; 0: never"},
    {"CUGRADE_FRONT_JOBS", T_INT, TU, F(front_jobs), "0", 0, 256, NULL, "jobs",
     "front passes at once; 0: twice --jobs (at most 256)"},
    {"CUGRADE_FRONT_SECONDS", T_REAL, TU, F(front_seconds), "10", 0, 3600, NULL, "s",
     "the front pass's wall limit; 0: no front pass (tests of the full compile's own messages)"},
    {"CUGRADE_COMPILE_NICE", T_INT, TU, F(compile_nice), "10", 0, 19, NULL, "nice",
     "the full compile's and the link's CPU priority"},
    {"CUGRADE_GPU_DOWN_WAIT", T_REAL, TU, F(gpu_down_wait), "600", 0.001, 86400, NULL, "s",
     "how long a job in flight waits for a GPU that stopped answering"},
    {"CUGRADE_GPU_PROBE_SECONDS", T_REAL, TU, F(gpu_probe_seconds), "30", 0.001, 3600, NULL, "s",
     "how often a GPU that stopped answering is probed, and how long one probe may take (a "
     "hung driver); the first pause of a runner whose jobs keep ending in system_error"},
    /* test hooks */
    {"CUGRADE_NO_GPU", T_BOOL, TE, F(no_gpu), "0", 0, 1, NULL, "",
     "1: no real GPU here (CI): Python runs use Numba's CUDA simulator, and no process keeps "
     "the (fake) GPU initialised"},
    {"CUGRADE_SANDBOX_USER", T_CHOICE, TE, F(sandbox_user), "auto", 0, 0, "auto|root|nobody|box",
     "", "forces the sandbox's uid mode (auto: box uids, root-mapped if those fail)"},
};

#define NROWS (sizeof rows / sizeof rows[0])

static struct runner_config cfg_now;
static int cfg_loaded;

static int choice_index(const char *choices, const char *v)
{
    size_t n = strlen(v);
    int i = 0;
    for (const char *p = choices; p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* What a row accepts, in words, into buf. */
static const char *allowed(const struct row *r, char *buf, size_t len)
{
    switch (r->type) {
    case T_TEXT:
        return "any text";
    case T_PATH:
        if (!r->choices)
            return "an absolute path";
        snprintf(buf, len, "an absolute path|%s", r->choices);
        return buf;
    case T_BOOL:
        return "0|1";
    case T_CHOICE:
        return r->choices;
    case T_INT:
        snprintf(buf, len, "%.0f..%.0f", r->lo, r->hi);
        return buf;
    case T_REAL:
        snprintf(buf, len, "%g..%g", r->lo, r->hi);
        return buf;
    }
    return "?";
}

/* Parse v into the row's field of c. Returns 0, or -EINVAL. */
static int row_set(const struct row *r, struct runner_config *c, const char *v)
{
    char *field = (char *)c + r->off, *end = NULL;
    switch (r->type) {
    case T_PATH:
        if (*v && (v[0] != '/' || strstr(v, "..")) && !(r->choices && strcmp(v, r->choices) == 0))
            return -EINVAL;
        /* fall through */
    case T_TEXT:
        if (strlen(v) >= r->size)
            return -EINVAL;
        memcpy(field, v, strlen(v) + 1);
        return 0;
    case T_CHOICE: {
        int i = choice_index(r->choices, v);
        if (i < 0)
            return -EINVAL;
        *(long *)(void *)field = i;
        return 0;
    }
    case T_BOOL:
    case T_INT: {
        if (!*v) {
            *(long *)(void *)field = -1;
            return 0;
        }
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < r->lo || n > r->hi)
            return -EINVAL;
        *(long *)(void *)field = n;
        return 0;
    }
    case T_REAL: {
        double d = strtod(v, &end);
        if (end == v || *end || !isfinite(d) || d < r->lo || d > r->hi)
            return -EINVAL;
        *(double *)(void *)field = d;
        return 0;
    }
    }
    return -EINVAL;
}

/* The rules between switches: the interpreter must be one the sandbox
 * binds: under /usr, or in the bin/ of an installation (a venv) whose
 * prefix is a directory other than /. */
static int cross_check(const struct runner_config *c, char *err, size_t len)
{
    char prefix[PATH_MAX];
    if (strncmp(c->python, "/usr/", 5) == 0)
        return 0;
    if (runner_python_prefix(c->python, prefix, sizeof prefix) < 0) {
        snprintf(err, len,
                 "CUGRADE_PYTHON=%s: expected an interpreter under /usr, or PREFIX/bin/NAME "
                 "with PREFIX a directory other than / (a venv: bound read-only into Python "
                 "runs)",
                 c->python);
        return -EINVAL;
    }
    return 0;
}

int runner_python_prefix(const char *python, char *out, size_t len)
{
    assert(python && out && len);
    const char *slash = strrchr(python, '/');
    size_t n = slash ? (size_t)(slash - python) : 0;
    struct stat st;
    /* ".../bin/NAME": the prefix is what comes before "/bin" */
    if (python[0] != '/' || n < 4 || strncmp(slash - 4, "/bin", 4) != 0 || n - 4 >= len)
        return -EINVAL;
    size_t m = n - 4;
    memcpy(out, python, m);
    out[m] = '\0';
    while (m > 1 && out[m - 1] == '/')
        out[--m] = '\0';
    if (!out[0] || strcmp(out, "/") == 0 || stat(out, &st) < 0 || !S_ISDIR(st.st_mode))
        return -EINVAL;
    return 0;
}

int runner_config_parse(struct runner_config *c, char *err, size_t len)
{
    assert(c && err && len);
    memset(c, 0, sizeof *c);
    err[0] = '\0';
    for (size_t i = 0; i < NROWS; i++) {
        const struct row *r = &rows[i];
        const char *v = getenv(r->name);
        const char *dflt = r->dflt ? r->dflt : "";
        int rc = row_set(r, c, dflt);
        assert(rc == 0); /* a default the table cannot parse is our bug */
        if (rc == 0 && v && *v)
            rc = row_set(r, c, v);
        if (rc < 0) {
            char buf[64];
            snprintf(err, len, "%s=%.200s: expected %s%s%s (default %s): %s", r->name, v,
                     allowed(r, buf, sizeof buf), *r->unit ? " " : "", r->unit,
                     *dflt ? dflt : "unset", r->doc);
            return -EINVAL;
        }
    }
    return cross_check(c, err, len);
}

int runner_config_reload(char *err, size_t len)
{
    static struct runner_config next;
    int rc = runner_config_parse(&next, err, len);
    if (rc < 0)
        return rc;
    cfg_now = next;
    cfg_loaded = 1;
    return 0;
}

/* The first use's parse, unless main's came first (then nothing: the
 * threads that call runner_cfg only read). */
static void cfg_first_load(void)
{
    char err[512];
    if (!cfg_loaded && runner_config_reload(err, sizeof err) < 0) {
        fprintf(stderr, "cugrade-runner: %s\n", err);
        exit(2);
    }
}

const struct runner_config *runner_cfg(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cfg_first_load);
    return &cfg_now;
}

static const char *kind_title(int kind)
{
    return kind == RUNNER_CONFIG_OPERATOR ? "Operator switches"
           : kind == RUNNER_CONFIG_TUNING
               ? "Tuning (measured defaults; change with a benchmark)"
               : "Test hooks (set by tests/ and tests/bench, not in production)";
}

void runner_config_print(FILE *f, int markdown)
{
    char buf[64];
    for (int kind = RUNNER_CONFIG_OPERATOR; kind <= RUNNER_CONFIG_TEST; kind++) {
        if (markdown)
            fprintf(f, "%s**%s**\n\n| switch | default | allowed | doc |\n|---|---|---|---|\n",
                    kind ? "\n" : "", kind_title(kind));
        else
            fprintf(f, "%s%s:\n", kind ? "\n" : "", kind_title(kind));
        for (size_t i = 0; i < NROWS; i++) {
            const struct row *r = &rows[i];
            if (r->kind != kind)
                continue;
            const char *d = r->dflt && *r->dflt ? r->dflt : "unset";
            char al[96];
            snprintf(al, sizeof al, "%s%s%s", allowed(r, buf, sizeof buf), *r->unit ? " " : "",
                     r->unit);
            if (markdown) {
                fprintf(f, "| `%s` | %s | ", r->name, d);
                for (const char *p = al; *p; p++) /* a bare | would end the cell */
                    fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, f);
                fprintf(f, " | %s |\n", r->doc);
            } else
                fprintf(f, "  %-27s %-14s %-20s %s\n", r->name, d, al, r->doc);
        }
    }
}

size_t runner_config_count(int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < NROWS; i++)
        n += kind < 0 || rows[i].kind == kind;
    return n;
}

/*
 * lab.h - a lab as defined by labs/<lab>/lab.json (see docs/formats.md).
 * Used by the server (title, interface, handout, case names) and the runner
 * (allow-list, cases, flags, limits).
 */
#ifndef CUGRADE_LAB_H
#define CUGRADE_LAB_H

#include <stddef.h>
#include <jansson.h>

struct lab_case {
    char *name;
    json_t *params;     /* the case's "params" object (borrowed from lab->doc) */
    int timing;         /* 1 if this case may be timed */
};

struct lab_pattern {
    char *pattern;      /* exact name, or prefix ending in '*' */
    char *reason;       /* for forbidden patterns; NULL for allowed ones */
};

/* A run's host memory when lab.json's limits.memory_mb does not say: the
 * one default of the runner's runs (check, timing, sanitizers). */
#define LAB_MEMORY_MB 16384

struct lab {
    char *name;         /* "matmul" */
    char *dir;          /* "labs/matmul" */
    char *title;
    char *interface;    /* the extern "C" prototype, verbatim */
    char *symbol;       /* the interface's function name */
    char *handout;      /* README.md text; NULL if absent */
    char **nvcc_flags;  size_t nnvcc_flags;
    char **link_libs;   size_t nlink_libs;
    struct lab_pattern *allowed;   size_t nallowed;
    struct lab_pattern *forbidden; size_t nforbidden;
    struct lab_case *cases;        size_t ncases;
    char *sanitize_case;           /* may be NULL */
    char *timing_case;             /* may be NULL */
    char **baselines;   size_t nbaselines;
    double compile_seconds, run_seconds;
    unsigned long long memory_mb; /* limits.memory_mb, LAB_MEMORY_MB when not given */
    /* limits.derive: the check run's wall limit is
     * min(run_seconds, max(floor, factor x the naive reference's check run
     * on this GPU) + startup). factor 0 (no "derive") keeps run_seconds. */
    double derive_factor, derive_floor_seconds, derive_startup_seconds;
    /* limits.device_mb: the most device memory the harness allocates for
     * one case (the biggest), for GPU memory admission (runner/gpu/admit.h);
     * 0 when not declared. */
    unsigned long long device_mb;
    /* limits.timing_device_mb: what the timing case allocates (the timing
     * run, its baselines, the profile), <= device_mb; device_mb when not
     * declared. A job's reservation shrinks to it after the check run. */
    unsigned long long timing_device_mb;
    /* limits.sanitize_device_mb: what the sanitize case allocates (under
     * compute-sanitizer), <= device_mb; device_mb when not declared. What
     * a job whose only GPU work left is its sanitizers keeps reserved. */
    unsigned long long sanitize_device_mb;
    /* "language": "python": the lab has no CUDA harness, so a .cu file
     * cannot be graded in it (the runner and the server refuse one). 0 for
     * "cuda" or no "language" (then the lab's files decide what it takes). */
    int python_only;
    /* "python": {"owner": FILE, "pool": BOOL, "hide": [PATTERN, ...]}
     * (docs/python.md): the lab's own owner script, a plain .py file name
     * beside lab.json (NULL: labs/common/py/owner.py); whether that owner
     * has the warm pool's mode (--pool: the runner's pool starts its runs
     * before their jobs; 0 without an own owner: the common owner always
     * has it); and the files its Python runs must not see, glob patterns
     * that are absolute or start "@python/" (under the Python root). */
    char *python_owner;
    int python_pool;
    char **python_hide;
    size_t npython_hide;
    json_t *doc;        /* the parsed lab.json (owned) */
};

/* Load labs/<name>/lab.json (and README.md) from dir. Returns 0, or -errno
 * with a human sentence in err (e.g. "labs/matmul/lab.json: cases[2]: missing name"). */
int lab_load(const char *dir, struct lab *lab, char *err, size_t errlen);

/* Load every lab under root (e.g. "labs"); skips dirs without lab.json.
 * Returns the count (>= 0) and a malloc'd array in *labs, or -errno. */
int lab_load_all(const char *root, struct lab **labs, char *err, size_t errlen);

/* Find a case by name; NULL if absent. */
const struct lab_case *lab_case_find(const struct lab *lab, const char *name);

/* What case c costs by the lab's "work" formulas (lab.json; what is
 * "bytes", "flops" or "elements", the most elements one buffer holds),
 * evaluated over the case's params. Returns 0 with *out, or -ENOENT when
 * the lab declares no such formula (or c is NULL). */
int lab_case_work(const struct lab *lab, const struct lab_case *c, const char *what, double *out);

/* The lab's "allow" object (borrowed, from the lab.json in folder dir) as
 * the inspector reads it: when it names a "base", the list of that name in
 * dir/../common/allow.json, with the lab's own "undefined" patterns
 * appended and its "forbidden" ones added after the base's (the lab's
 * reason wins for a pattern in both); otherwise allow itself. Returns 0
 * with a new reference in *out (NULL when allow is NULL), or -errno with a
 * sentence in err. */
int lab_allow_resolve(const char *dir, json_t *allow, json_t **out, char *err, size_t errlen);

/* 1 if name matches pattern ("cuda*" prefix or exact). */
int lab_pattern_match(const char *pattern, const char *name);

/* Is an undefined symbol allowed? Returns 1 if allowed; 0 if not, with
 * *reason set to the forbidden pattern's reason or NULL for "not on the list". */
int lab_symbol_allowed(const struct lab *lab, const char *name, const char **reason);

void lab_free(struct lab *lab);
void lab_free_all(struct lab *labs, size_t n);

#endif

/*
 * lab.c - load and validate labs/<lab>/lab.json (format: docs/formats.md).
 *
 * The lab file is written by course staff, but a mistake in it must be caught
 * at load time with a sentence that names the field, not at grading time:
 * case names end up on the harness command line ("--cases a,b"), in the
 * channel ("<case>@recheck") and in file names, so they are restricted to a
 * small alphabet here, once, for both binaries.
 */
#include "lab.h"
#include "formula.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAB_README_MAX (1u << 20)    /* a handout larger than 1 MiB is a mistake */
#define LAB_CASE_NAME_MAX 64

static void lab__err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lab__err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Read a whole regular file (at most max bytes) into a NUL-terminated buffer.
 * Returns 0 and *out (caller frees), or -errno (-EFBIG when too large). */
static int lab__read_file(const char *path, size_t max, char **out)
{
    int fd, rc;
    struct stat st;
    char *buf = NULL;
    size_t len = 0;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto fail;
    }
    if ((unsigned long long)st.st_size > max) {
        rc = -EFBIG;
        goto fail;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto fail;
    }
    while (len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto fail;
        }
        if (n == 0)
            break;  /* file shrank under us: take what is there */
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fd);
    *out = buf;
    return 0;
fail:
    free(buf);
    close(fd);
    return rc;
}

/* A case name: 1..64 of [A-Za-z0-9_+^.-]. No ',' (list separator on the
 * harness command line), no '@' (the "@recheck" suffix), no '/', quotes or
 * spaces (file names, JSON, shell-free argv but still logs). */
static int lab__case_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > LAB_CASE_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && strchr("_+^.-", *s) == NULL)
            return 0;
    return 1;
}

/* A lab name: 1..32 of [a-z0-9_-], used in URLs and paths. */
static int lab__name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32)
        return 0;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

static int lab__ident_ok(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* An allow-list pattern: a symbol name (C, or demangled C++ such as
 * "operator new(unsigned long)"), optionally ending in one '*'. Printable
 * ASCII only, no '*' elsewhere (a "cu*blas" would look like a glob but only
 * prefixes are supported), no surrounding blanks. */
static int lab__pattern_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 256 || s[0] == ' ' || s[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e)
            return 0;
        if (c == '*' && i != n - 1)
            return 0;
    }
    return 1;
}

/* Required string member. Returns a borrowed pointer or NULL (err set). */
static const char *lab__get_str(json_t *obj, const char *key, const char *file, char *err,
                                size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        lab__err(err, errlen, "%s: missing %s", file, key);
        return NULL;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        lab__err(err, errlen, "%s: %s: must be a non-empty string", file, key);
        return NULL;
    }
    return json_string_value(v);
}

/* Optional array of strings -> malloc'd array of strdup'd strings. */
static int lab__get_str_array(json_t *obj, const char *key, char ***out, size_t *n,
                              const char *file, char *err, size_t errlen)
{
    json_t *arr = json_object_get(obj, key), *v;
    size_t i;

    *out = NULL;
    *n = 0;
    if (arr == NULL || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        lab__err(err, errlen, "%s: %s: must be an array of strings", file, key);
        return -EINVAL;
    }
    if (json_array_size(arr) == 0)
        return 0;
    *out = calloc(json_array_size(arr), sizeof(char *));
    if (*out == NULL)
        return -ENOMEM;
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            lab__err(err, errlen, "%s: %s[%zu]: must be a non-empty string", file, key, i);
            return -EINVAL;
        }
        (*out)[i] = strdup(json_string_value(v));
        if ((*out)[i] == NULL)
            return -ENOMEM;
        *n = i + 1;
    }
    return 0;
}

static int lab__get_number(json_t *obj, const char *key, double dflt, double min, double max,
                           double *out, const char *file, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max) {
        lab__err(err, errlen, "%s: limits.%s: must be a number in [%g, %g]", file, key, min, max);
        return -EINVAL;
    }
    *out = json_number_value(v);
    return 0;
}

/* The shared list name of labs/common/allow.json (beside the lab's folder)
 * as a new reference in *out, or -errno with err set. Why a file of its
 * own: the CUDA labs forbid the same ~60 symbols for the same reasons, and
 * a copy per lab drifts (tests/labs/allow.t). */
static int lab__allow_base(const char *dir, const char *name, json_t **out, const char *file,
                           char *err, size_t errlen)
{
    char path[4096];
    json_error_t je;
    json_t *doc, *list;
    *out = NULL;
    if (snprintf(path, sizeof path, "%s/../common/allow.json", dir) >= (int)sizeof path) {
        lab__err(err, errlen, "%s: allow.base: path too long", file);
        return -ENAMETOOLONG;
    }
    doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (doc == NULL) {
        lab__err(err, errlen, "%s: allow.base: %s: %s", file, path, je.text);
        return -EINVAL;
    }
    list = json_object_get(doc, name);
    if (strcmp(name, "about") == 0 || !json_is_object(list)) {
        lab__err(err, errlen, "%s: allow.base: \"%s\" is not a list of %s", file, name, path);
        json_decref(doc);
        return -EINVAL;
    }
    *out = json_incref(list);
    json_decref(doc);
    return 0;
}

/* The lab's allow-list with its "base" merged in; see lab.h. */
int lab_allow_resolve(const char *dir, json_t *allow, json_t **out, char *err, size_t errlen)
{
    json_t *base_name = json_object_get(allow, "base"), *base = NULL, *und, *forb;
    char file[4096];
    int rc;

    assert(dir != NULL && out != NULL);
    *out = NULL;
    snprintf(file, sizeof file, "%s/lab.json", dir);
    if (!json_is_object(allow) || base_name == NULL) {
        *out = json_incref(allow);
        return 0;
    }
    if (!json_is_string(base_name)) {
        lab__err(err, errlen, "%s: allow.base: must be the name of a list in common/allow.json",
                 file);
        return -EINVAL;
    }
    if ((rc = lab__allow_base(dir, json_string_value(base_name), &base, file, err, errlen)) < 0)
        return rc;
    und = json_array();
    forb = json_object();
    *out = json_pack("{s:o,s:o}", "undefined", und, "forbidden", forb);
    if (*out == NULL ||
        (json_is_array(json_object_get(base, "undefined")) &&
         json_array_extend(und, json_object_get(base, "undefined"))) ||
        (json_is_array(json_object_get(allow, "undefined")) &&
         json_array_extend(und, json_object_get(allow, "undefined"))) ||
        (json_is_object(json_object_get(base, "forbidden")) &&
         json_object_update(forb, json_object_get(base, "forbidden"))) ||
        (json_is_object(json_object_get(allow, "forbidden")) &&
         json_object_update(forb, json_object_get(allow, "forbidden")))) {
        json_decref(base);
        json_decref(*out);
        *out = NULL;
        return -ENOMEM;
    }
    json_decref(base);
    return 0;
}

static int lab__parse_allow(struct lab *lab, json_t *allow, const char *file, char *err,
                            size_t errlen)
{
    json_t *und, *forb, *v;
    const char *key;
    size_t i;

    if (allow == NULL) {
        lab__err(err, errlen, "%s: missing allow", file);
        return -EINVAL;
    }
    if (!json_is_object(allow)) {
        lab__err(err, errlen, "%s: allow: must be an object", file);
        return -EINVAL;
    }
    und = json_object_get(allow, "undefined");
    if (!json_is_array(und)) {
        lab__err(err, errlen, "%s: allow.undefined: must be an array of symbol patterns", file);
        return -EINVAL;
    }
    if (json_array_size(und) > 0) {
        lab->allowed = calloc(json_array_size(und), sizeof(*lab->allowed));
        if (lab->allowed == NULL)
            return -ENOMEM;
    }
    json_array_foreach(und, i, v) {
        if (!json_is_string(v) || !lab__pattern_ok(json_string_value(v))) {
            lab__err(err, errlen,
                     "%s: allow.undefined[%zu]: must be a symbol name, optionally ending in '*'",
                     file, i);
            return -EINVAL;
        }
        lab->allowed[i].pattern = strdup(json_string_value(v));
        if (lab->allowed[i].pattern == NULL)
            return -ENOMEM;
        lab->nallowed = i + 1;
    }
    forb = json_object_get(allow, "forbidden");
    if (forb == NULL || json_is_null(forb))
        return 0;
    if (!json_is_object(forb)) {
        lab__err(err, errlen, "%s: allow.forbidden: must be an object {pattern: reason}", file);
        return -EINVAL;
    }
    if (json_object_size(forb) == 0)
        return 0;
    lab->forbidden = calloc(json_object_size(forb), sizeof(*lab->forbidden));
    if (lab->forbidden == NULL)
        return -ENOMEM;
    json_object_foreach(forb, key, v) {
        struct lab_pattern *p = &lab->forbidden[lab->nforbidden];
        if (!lab__pattern_ok(key)) {
            lab__err(err, errlen,
                     "%s: allow.forbidden: \"%s\": must be a symbol name, optionally ending in '*'",
                     file, key);
            return -EINVAL;
        }
        if (!json_is_string(v) || json_string_length(v) == 0) {
            lab__err(err, errlen, "%s: allow.forbidden.%s: the reason must be a non-empty string",
                     file, key);
            return -EINVAL;
        }
        p->pattern = strdup(key);
        p->reason = strdup(json_string_value(v));
        lab->nforbidden++;
        if (p->pattern == NULL || p->reason == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int lab__parse_cases(struct lab *lab, json_t *cases, const char *file, char *err,
                            size_t errlen)
{
    json_t *c, *v;
    size_t i;

    if (!json_is_array(cases) || json_array_size(cases) == 0) {
        lab__err(err, errlen, "%s: cases: must be a non-empty array", file);
        return -EINVAL;
    }
    lab->cases = calloc(json_array_size(cases), sizeof(*lab->cases));
    if (lab->cases == NULL)
        return -ENOMEM;
    json_array_foreach(cases, i, c) {
        struct lab_case *lc = &lab->cases[i];
        const char *name;
        if (!json_is_object(c)) {
            lab__err(err, errlen, "%s: cases[%zu]: must be an object", file, i);
            return -EINVAL;
        }
        v = json_object_get(c, "name");
        if (v == NULL) {
            lab__err(err, errlen, "%s: cases[%zu]: missing name", file, i);
            return -EINVAL;
        }
        if (!json_is_string(v) || !lab__case_name_ok(json_string_value(v))) {
            lab__err(err, errlen,
                     "%s: cases[%zu].name: must be 1-64 characters of A-Z a-z 0-9 _ + ^ . -",
                     file, i);
            return -EINVAL;
        }
        name = json_string_value(v);
        for (size_t j = 0; j < lab->ncases; j++)
            if (strcmp(lab->cases[j].name, name) == 0) {
                lab__err(err, errlen, "%s: cases[%zu].name: \"%s\" appears twice", file, i, name);
                return -EINVAL;
            }
        v = json_object_get(c, "params");
        if (v != NULL && !json_is_object(v)) {
            lab__err(err, errlen, "%s: cases[%zu].params: must be an object", file, i);
            return -EINVAL;
        }
        lc->params = v;   /* borrowed from lab->doc */
        v = json_object_get(c, "timing");
        if (v != NULL && !json_is_boolean(v)) {
            lab__err(err, errlen, "%s: cases[%zu].timing: must be true or false", file, i);
            return -EINVAL;
        }
        lc->timing = json_is_true(v);
        lc->name = strdup(name);
        if (lc->name == NULL)
            return -ENOMEM;
        lab->ncases = i + 1;
    }
    return 0;
}

/* Optional member naming one of the lab's cases. */
static int lab__get_case_ref(struct lab *lab, const char *key, int need_timing, char **out,
                             const char *file, char *err, size_t errlen)
{
    json_t *v = json_object_get(lab->doc, key);
    const struct lab_case *c;

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        lab__err(err, errlen, "%s: %s: must be a case name", file, key);
        return -EINVAL;
    }
    c = lab_case_find(lab, json_string_value(v));
    if (c == NULL) {
        lab__err(err, errlen, "%s: %s: \"%s\" is not one of the lab's cases", file, key,
                 json_string_value(v));
        return -EINVAL;
    }
    if (need_timing && !c->timing) {
        lab__err(err, errlen, "%s: %s: case \"%s\" is not marked \"timing\": true", file, key,
                 c->name);
        return -EINVAL;
    }
    *out = strdup(c->name);
    return *out ? 0 : -ENOMEM;
}

static const char *lab__basename(const char *path, char *buf, size_t len)
{
    size_t n = strlen(path);
    const char *b;
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= len)
        n = len - 1;
    memcpy(buf, path, n);
    buf[n] = '\0';
    b = strrchr(buf, '/');
    return b ? b + 1 : buf;
}

/* Load labs/<name>/lab.json (and README.md) from dir. Returns 0, or -errno
 * with a human sentence in err. On failure *lab is left zeroed (nothing to free). */
/* lab, title, interface and symbol: the lab's name matches its folder,
 * the symbol is a C identifier named in the interface. Returns 0 or
 * -errno (err says why; -ENOMEM may leave it to the caller). */
static int lab__parse_identity(struct lab *lab, const char *dir, const char *file, char *err,
                               size_t errlen)
{
    char base[4096];
    const char *s, *dirname_;
    if ((s = lab__get_str(lab->doc, "lab", file, err, errlen)) == NULL)
        return -EINVAL;
    if (!lab__name_ok(s)) {
        lab__err(err, errlen, "%s: lab: must be 1-32 characters of a-z 0-9 _ -", file);
        return -EINVAL;
    }
    /* The directory is the lab's identity on disk; a copied folder whose
     * lab.json still says the old name would silently shadow the old lab. */
    dirname_ = lab__basename(dir, base, sizeof(base));
    if (strcmp(dirname_, s) != 0) {
        lab__err(err, errlen, "%s: lab: \"%s\" does not match its folder name \"%s\"", file, s,
                 dirname_);
        return -EINVAL;
    }
    lab->name = strdup(s);
    lab->dir = strdup(dir);
    if (lab->name == NULL || lab->dir == NULL)
        return -ENOMEM;
    if ((s = lab__get_str(lab->doc, "title", file, err, errlen)) == NULL)
        return -EINVAL;
    if ((lab->title = strdup(s)) == NULL)
        return -ENOMEM;
    if ((s = lab__get_str(lab->doc, "interface", file, err, errlen)) == NULL)
        return -EINVAL;
    if ((lab->interface = strdup(s)) == NULL)
        return -ENOMEM;
    if ((s = lab__get_str(lab->doc, "symbol", file, err, errlen)) == NULL)
        return -EINVAL;
    if (!lab__ident_ok(s)) {
        lab__err(err, errlen, "%s: symbol: must be a C identifier", file);
        return -EINVAL;
    }
    if (strstr(lab->interface, s) == NULL) {
        lab__err(err, errlen, "%s: symbol: \"%s\" does not appear in interface", file, s);
        return -EINVAL;
    }
    if ((lab->symbol = strdup(s)) == NULL)
        return -ENOMEM;
    return 0;
}

/* nvcc_flags, link_libs, baselines, allow, cases and the two case
 * references. Returns 0 or -errno. */
static int lab__parse_lists(struct lab *lab, const char *file, char *err, size_t errlen)
{
    int rc;
    if ((rc = lab__get_str_array(lab->doc, "nvcc_flags", &lab->nvcc_flags, &lab->nnvcc_flags,
                                 file, err, errlen)) < 0 ||
        (rc = lab__get_str_array(lab->doc, "link_libs", &lab->link_libs, &lab->nlink_libs, file,
                                 err, errlen)) < 0 ||
        (rc = lab__get_str_array(lab->doc, "baselines", &lab->baselines, &lab->nbaselines, file,
                                 err, errlen)) < 0)
        return rc;
    for (size_t i = 0; i < lab->nbaselines; i++)
        if (!lab__name_ok(lab->baselines[i])) {
            lab__err(err, errlen, "%s: baselines[%zu]: must be 1-32 characters of a-z 0-9 _ -",
                     file, i);
            return -EINVAL;
        }
    json_t *allow = NULL;
    if ((rc = lab_allow_resolve(lab->dir, json_object_get(lab->doc, "allow"), &allow, err,
                                errlen)) < 0)
        return rc;
    rc = lab__parse_allow(lab, allow, file, err, errlen);
    json_decref(allow);
    if (rc < 0 ||
        (rc = lab__parse_cases(lab, json_object_get(lab->doc, "cases"), file, err, errlen)) < 0)
        return rc;
    rc = lab__get_case_ref(lab, "sanitize_case", 0, &lab->sanitize_case, file, err, errlen);
    if (rc < 0)
        return rc;
    return lab__get_case_ref(lab, "timing_case", 1, &lab->timing_case, file, err, errlen);
}

/* limits.derive: wall limits from the naive reference's own time
 * (runner/run/limit.c), so an endless program is killed in seconds. Returns 0
 * or -errno. */
static int lab__parse_derive(struct lab *lab, const json_t *limits, const char *file, char *err,
                             size_t errlen)
{
    json_t *derive = json_object_get(limits, "derive");
    int rc;
    if (derive == NULL)
        return 0;
    if (!json_is_object(derive)) {
        lab__err(err, errlen, "%s: limits.derive: must be an object", file);
        return -EINVAL;
    }
    if ((rc = lab__get_number(derive, "factor", 5, 1, 1000, &lab->derive_factor, file, err,
                              errlen)) < 0 ||
        (rc = lab__get_number(derive, "floor_seconds", 10, 0.1, 36000, &lab->derive_floor_seconds,
                              file, err, errlen)) < 0 ||
        (rc = lab__get_number(derive, "startup_seconds", 2, 0, 600,
                              &lab->derive_startup_seconds, file, err, errlen)) < 0)
        return rc;
    return 0;
}

/* limits: the compile and run clocks, host and device memory (the
 * biggest case's and the timing case's), derive. Returns 0 or -errno. */
static int lab__parse_limits(struct lab *lab, const char *file, char *err, size_t errlen)
{
    json_t *limits = json_object_get(lab->doc, "limits");
    double mem = 0, dmb = 0, tmb = 0, smb = 0;
    int rc;
    if (limits != NULL && !json_is_object(limits)) {
        lab__err(err, errlen, "%s: limits: must be an object", file);
        return -EINVAL;
    }
    if ((rc = lab__get_number(limits, "compile_seconds", 60, 1, 3600, &lab->compile_seconds, file,
                              err, errlen)) < 0 ||
        (rc = lab__get_number(limits, "run_seconds", 120, 1, 36000, &lab->run_seconds, file, err,
                              errlen)) < 0 ||
        (rc = lab__get_number(limits, "memory_mb", LAB_MEMORY_MB, 16, 16777216, &mem, file, err,
                              errlen)) < 0 ||
        (rc = lab__get_number(limits, "device_mb", 0, 0, 16777216, &dmb, file, err, errlen)) < 0)
        return rc;
    lab->memory_mb = (unsigned long long)mem;
    lab->device_mb = (unsigned long long)dmb;
    /* What is left once the check run is over: the timing case's buffers
     * (the timing run, its baselines, the profile). Not past device_mb,
     * which is the biggest case's. */
    if ((rc = lab__get_number(limits, "timing_device_mb", dmb, 0, 16777216, &tmb, file, err,
                              errlen)) < 0)
        return rc;
    if (tmb > dmb && dmb > 0) {
        lab__err(err, errlen, "%s: limits.timing_device_mb (%.0f) is more than device_mb (%.0f)",
                 file, tmb, dmb);
        return -EINVAL;
    }
    lab->timing_device_mb = (unsigned long long)tmb;
    /* What the sanitizers' small case needs (their runs are what is left
     * of a job whose check failed): not past device_mb either. */
    if ((rc = lab__get_number(limits, "sanitize_device_mb", dmb, 0, 16777216, &smb, file, err,
                              errlen)) < 0)
        return rc;
    if (smb > dmb && dmb > 0) {
        lab__err(err, errlen, "%s: limits.sanitize_device_mb (%.0f) is more than device_mb (%.0f)",
                 file, smb, dmb);
        return -EINVAL;
    }
    lab->sanitize_device_mb = (unsigned long long)smb;
    return lab__parse_derive(lab, limits, file, err, errlen);
}

/* "work": {"bytes"|"flops"|"elements": formula over a case's params}: each
 * formula must evaluate for every case, so that a typo fails the load
 * rather than a hint or the physical floor later. */
static int lab__parse_work(struct lab *lab, const char *file, char *err, size_t errlen)
{
    static const char *const keys[] = {"bytes", "flops", "elements", "comment", NULL};
    const json_t *work = json_object_get(lab->doc, "work"), *v;
    const char *key;
    char why[160];
    if (work == NULL)
        return 0;
    if (!json_is_object(work)) {
        lab__err(err, errlen, "%s: work: must be an object of formulas", file);
        return -EINVAL;
    }
    json_object_foreach((json_t *)work, key, v) {
        size_t k = 0;
        while (keys[k] && strcmp(keys[k], key) != 0)
            k++;
        if (keys[k] == NULL || (strcmp(key, "comment") != 0 && !json_is_string(v))) {
            lab__err(err, errlen, "%s: work.%s: %s", file, key,
                     keys[k] ? "must be a formula (a string such as \"2*M*N*K\")"
                             : "unknown field (bytes, flops, elements)");
            return -EINVAL;
        }
        for (size_t i = 0; strcmp(key, "comment") != 0 && i < lab->ncases; i++) {
            double x;
            if (formula_eval(json_string_value(v), lab->cases[i].params, &x, why, sizeof why)) {
                lab__err(err, errlen, "%s: work.%s: case %s: %s", file, key, lab->cases[i].name,
                         why);
                return -EINVAL;
            }
        }
    }
    return 0;
}

/* "language": "cuda" or "python" when present, into lab->python_only
 * (absent: the files the lab has decide, server/submission.c). A typo would
 * otherwise pass silently and turn a Python-only lab into one that takes
 * .cu files it cannot grade. */
static int lab__parse_language(struct lab *lab, const char *file, char *err, size_t errlen)
{
    const json_t *l = json_object_get(lab->doc, "language");
    const char *v = json_string_value(l);
    lab->python_only = v && strcmp(v, "python") == 0;
    if (l == NULL || lab->python_only || (v && strcmp(v, "cuda") == 0))
        return 0;
    lab__err(err, errlen, "%s: language: must be \"cuda\" or \"python\"%s%s%s", file,
             v ? " (not \"" : "", v ? v : "", v ? "\")" : "");
    return -EINVAL;
}

/* "python": {"owner", "pool", "hide"} (lab.h): a bad owner name, pool
 * flag or hide pattern fails the load, where the runner would otherwise
 * meet it in a job. */
static int lab__parse_python(struct lab *lab, const char *file, char *err, size_t errlen)
{
    json_t *py = json_object_get(lab->doc, "python");
    if (py == NULL)
        return 0;
    if (!json_is_object(py)) {
        lab__err(err, errlen, "%s: python: must be an object", file);
        return -EINVAL;
    }
    const json_t *o = json_object_get(py, "owner");
    const char *v = json_string_value(o);
    size_t n = v ? strlen(v) : 0;
    if (o && (n < 4 || n > 64 || strchr(v, '/') || v[0] == '.' || strcmp(v + n - 3, ".py") != 0)) {
        lab__err(err, errlen, "%s: python.owner: must be a .py file name beside lab.json", file);
        return -EINVAL;
    }
    if (v && (lab->python_owner = strdup(v)) == NULL)
        return -ENOMEM;
    const json_t *pool = json_object_get(py, "pool");
    if (pool && (!json_is_boolean(pool) || !v)) {
        lab__err(err, errlen, "%s: python.pool: %s", file,
                 v ? "must be true or false"
                   : "only with python.owner (the common owner always has the pool's mode)");
        return -EINVAL;
    }
    lab->python_pool = json_is_true(pool);
    int rc =
        lab__get_str_array(py, "hide", &lab->python_hide, &lab->npython_hide, file, err, errlen);
    for (size_t i = 0; rc == 0 && i < lab->npython_hide; i++) {
        const char *p = lab->python_hide[i];
        if (p[0] != '/' && strncmp(p, "@python/", 8) != 0) {
            lab__err(err, errlen, "%s: python.hide[%zu]: must be absolute or start \"@python/\"",
                     file, i);
            rc = -EINVAL;
        }
    }
    return rc;
}

/* What case costs by the lab's "work" formulas; see lab.h. */
int lab_case_work(const struct lab *lab, const struct lab_case *c, const char *what, double *out)
{
    const json_t *f = json_object_get(json_object_get(lab->doc, "work"), what);
    if (!json_is_string(f) || c == NULL)
        return -ENOENT;
    return formula_eval(json_string_value(f), c->params, out, NULL, 0);
}

int lab_load(const char *dir, struct lab *lab, char *err, size_t errlen)
{
    char file[4096], readme[4096];
    char *text = NULL;
    json_error_t jerr;
    int rc;

    memset(lab, 0, sizeof(*lab));
    if (err && errlen)
        err[0] = '\0';
    if (snprintf(file, sizeof(file), "%s/lab.json", dir) >= (int)sizeof(file) ||
        snprintf(readme, sizeof(readme), "%s/README.md", dir) >= (int)sizeof(readme)) {
        lab__err(err, errlen, "%s: path too long", dir);
        return -ENAMETOOLONG;
    }
    rc = lab__read_file(file, LAB_README_MAX, &text);
    if (rc < 0) {
        lab__err(err, errlen, "%s: %s", file, strerror(-rc));
        return rc;
    }
    lab->doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (lab->doc == NULL) {
        lab__err(err, errlen, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
        rc = -EINVAL;
        goto fail;
    }
    if (!json_is_object(lab->doc)) {
        lab__err(err, errlen, "%s: must be a JSON object", file);
        rc = -EINVAL;
        goto fail;
    }
    if ((rc = lab__parse_identity(lab, dir, file, err, errlen)) < 0 ||
        (rc = lab__parse_lists(lab, file, err, errlen)) < 0 ||
        (rc = lab__parse_limits(lab, file, err, errlen)) < 0 ||
        (rc = lab__parse_work(lab, file, err, errlen)) < 0 ||
        (rc = lab__parse_language(lab, file, err, errlen)) < 0 ||
        (rc = lab__parse_python(lab, file, err, errlen)) < 0)
        goto fail;
    rc = lab__read_file(readme, LAB_README_MAX, &lab->handout);
    if (rc < 0 && rc != -ENOENT) {
        lab__err(err, errlen, "%s: %s", readme, strerror(-rc));
        goto fail;
    }
    assert(lab->name && lab->symbol && lab->interface);
    return 0;

fail:
    if (rc == -ENOMEM && err && errlen && err[0] == '\0')
        lab__err(err, errlen, "%s: out of memory", file);
    lab_free(lab);
    return rc;
}

static int lab__cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct lab *)a)->name, ((const struct lab *)b)->name);
}

/* Load every lab under root; skips entries without lab.json (e.g. labs/common).
 * Returns the count and a malloc'd array in *labs (free with lab_free_all), or
 * -errno with err naming the first broken lab (then *labs is NULL). Sorted by name. */
int lab_load_all(const char *root, struct lab **labs, char *err, size_t errlen)
{
    DIR *d;
    struct dirent *de;
    struct lab *arr = NULL, *tmp;
    size_t n = 0, cap = 0;
    int rc = 0;

    *labs = NULL;
    d = opendir(root);
    if (d == NULL) {
        rc = -errno;
        lab__err(err, errlen, "%s: %s", root, strerror(-rc));
        return rc;
    }
    while ((de = readdir(d)) != NULL) {
        char path[4096], json[4200];
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", root, de->d_name) >= (int)sizeof(path))
            continue;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(json, sizeof(json), "%s/lab.json", path);
        if (access(json, F_OK) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            tmp = realloc(arr, cap * sizeof(*arr));
            if (tmp == NULL) {
                rc = -ENOMEM;
                lab__err(err, errlen, "%s: out of memory", root);
                goto fail;
            }
            arr = tmp;
        }
        rc = lab_load(path, &arr[n], err, errlen);
        if (rc < 0)
            goto fail;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(arr, n, sizeof(*arr), lab__cmp_name);
    *labs = arr;
    return (int)n;
fail:
    closedir(d);
    lab_free_all(arr, n);
    return rc;
}

/* Find a case by name; NULL if absent (or lab/name NULL). */
const struct lab_case *lab_case_find(const struct lab *lab, const char *name)
{
    if (lab == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < lab->ncases; i++)
        if (strcmp(lab->cases[i].name, name) == 0)
            return &lab->cases[i];
    return NULL;
}

/* 1 if name matches pattern: exact, or a prefix when pattern ends in '*'
 * ("*" alone matches every name). */
int lab_pattern_match(const char *pattern, const char *name)
{
    size_t n;
    if (pattern == NULL || name == NULL)
        return 0;
    n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, name, n - 1) == 0;
    return strcmp(pattern, name) == 0;
}

/* Is an undefined symbol allowed? Forbidden patterns win over allowed ones
 * (a broad "cuda*" allow must not let "cudaStreamCreate" through when that is
 * forbidden). Returns 1 if allowed; 0 if not, with *reason (may be NULL) set
 * to the forbidden pattern's reason, or NULL for "not on the allow-list". */
int lab_symbol_allowed(const struct lab *lab, const char *name, const char **reason)
{
    if (reason)
        *reason = NULL;
    for (size_t i = 0; i < lab->nforbidden; i++)
        if (lab_pattern_match(lab->forbidden[i].pattern, name)) {
            if (reason)
                *reason = lab->forbidden[i].reason;
            return 0;
        }
    for (size_t i = 0; i < lab->nallowed; i++)
        if (lab_pattern_match(lab->allowed[i].pattern, name))
            return 1;
    return 0;
}

static void lab__free_strv(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Free everything lab owns and zero it; safe on a zeroed or partly loaded lab. */
void lab_free(struct lab *lab)
{
    if (lab == NULL)
        return;
    free(lab->name);
    free(lab->dir);
    free(lab->title);
    free(lab->interface);
    free(lab->symbol);
    free(lab->handout);
    lab__free_strv(lab->nvcc_flags, lab->nnvcc_flags);
    lab__free_strv(lab->link_libs, lab->nlink_libs);
    lab__free_strv(lab->baselines, lab->nbaselines);
    lab__free_strv(lab->python_hide, lab->npython_hide);
    free(lab->python_owner);
    for (size_t i = 0; i < lab->nallowed; i++)
        free(lab->allowed[i].pattern);
    free(lab->allowed);
    for (size_t i = 0; i < lab->nforbidden; i++) {
        free(lab->forbidden[i].pattern);
        free(lab->forbidden[i].reason);
    }
    free(lab->forbidden);
    for (size_t i = 0; i < lab->ncases; i++)
        free(lab->cases[i].name);
    free(lab->cases);
    free(lab->sanitize_case);
    free(lab->timing_case);
    json_decref(lab->doc);
    memset(lab, 0, sizeof(*lab));
}

/* Free n labs and the array (as returned by lab_load_all). */
void lab_free_all(struct lab *labs, size_t n)
{
    if (labs == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        lab_free(&labs[i]);
    free(labs);
}

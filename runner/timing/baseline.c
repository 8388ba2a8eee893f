/*
 * baseline.c - see baseline.h.
 */
#include "runner/timing/baseline.h"
#include "runner/run/channel.h"
#include "runner/config.h"
#include "runner/gpu/lock.h"
#include "runner/timing/stats.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BASELINE_SEED "00000000c0ffee00" /* fixed: baselines are cached across jobs */

/* The device record of this GPU (name, copy bandwidth, FP32 peak), measured
 * once per GPU model by a trusted baseline program's `device` mode in the
 * same sandbox, cached as CACHE/ARCH/LAB/device-GPU.chan and handed to the
 * judge. Leaves rc->device_path empty when none can be made. */
void baseline_device_record(struct run_ctx *rc)
{
    char dir[DIRLEN], g[128], path[PATH_MAX], prog[PATH_MAX], tmp[PATH_MAX + 16];
    struct stat st;
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    run_slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    snprintf(path, sizeof path, "%s/device-%s.chan", dir, g);
    if (stat(path, &st) == 0 && st.st_size > 0) {
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
        return;
    }
    prog[0] = '\0';
    for (size_t i = 0; i < rc->lab->nbaselines && !prog[0]; i++)
        if (strcmp(rc->lab->baselines[i], "cpu") != 0)
            snprintf(prog, sizeof prog, "%s/baseline-%s", dir, rc->lab->baselines[i]);
    if (!prog[0] || access(prog, X_OK) != 0)
        return;
    int lk = lock_gpu(rc->env, 1);
    if (stat(path, &st) == 0 && st.st_size > 0) { /* measured meanwhile by another runner */
        lock_gpu_release(lk);
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        lock_gpu_release(lk);
        return;
    }
    const char *argv[] = {"/lab/prog", "device", NULL};
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    char ldp[PATH_MAX + 64];
    snprintf(ldp, sizeof ldp, "LD_LIBRARY_PATH=%s/lib64", rc->env->cuda_home);
    int r = run_sandboxed_env(rc, argv, fd, 120, prog, ldp, &v);
    lock_gpu_release(lk);
    close(fd);
    if (r == 0 && v.exited && v.exit_code == 0 && rename(tmp, path) == 0)
        snprintf(rc->device_path, sizeof rc->device_path, "%s", path);
    else {
        fprintf(stderr, "cugrade-runner: device record of %s failed (rc %d, exit %d): %.300s\n",
                rc->lab->name, r, v.exit_code, v.err ? v.err : "");
        unlink(tmp);
    }
    sandbox_verdict_free(&v);
}

/* ---------------------------------------------------------------------- */
/* Baselines: timed by the same harness, on the same GPU, cached. */

/* Path of a baseline program built by build-lab.sh ("baseline-<name>", or
 * "cpu-baseline" for the CPU); "" when absent. */
static void baseline_prog(const struct run_ctx *rc, const char *name, char *out, size_t len)
{
    char dir[DIRLEN];
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    if (strcmp(name, "cpu") == 0)
        snprintf(out, len, "%s/cpu-baseline", dir);
    else
        snprintf(out, len, "%s/baseline-%s", dir, name);
    if (access(out, X_OK) != 0)
        out[0] = '\0';
}

/* Median of a JSON array of sample times with the runner's statistics, or NAN. */
static double samples_median(const json_t *samples)
{
    size_t n = json_array_size(samples), k;
    double *x = calloc(n ? n : 1, sizeof *x), ms = NAN;
    json_t *e;
    struct stats_summary s;
    if (!x)
        return NAN;
    json_array_foreach(samples, k, e) x[k] = json_number_value(e);
    if (stats_summarize(x, n, &s) == 0)
        ms = s.median;
    free(x);
    return ms;
}

static void baseline_cache_write(const char *cache, const char *dir, json_t *doc)
{
    char *txt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    char bdir[PATH_MAX];
    snprintf(bdir, sizeof bdir, "%s/baselines", dir);
    if (txt && run_mkdir_p(bdir) == 0)
        run_file_write_atomic(cache, txt, strlen(txt));
    free(txt);
}

/* A baseline run's wall limit: three times the lab's run_seconds, and at
 * least BASELINE_MIN_SECONDS. Our own trusted program: the limit only
 * catches a hang (a broken build, a stuck GPU), never a slow host. A lab
 * with a short run_seconds (CI's fake lab: 4 s) timed its naive baseline
 * out at 12 s on a loaded host, and the job lost that line's points
 * (now a system_error: job_time_complete). */
#define BASELINE_MIN_SECONDS 120.0
static double baseline_limit(const struct lab *lab)
{
    double lim = (lab->run_seconds > 0 ? lab->run_seconds : 120) * 3;
    return lim > BASELINE_MIN_SECONDS ? lim : BASELINE_MIN_SECONDS;
}

/* One run of the CPU baseline (reference/<lab>/cpu.c, trusted, one
 * thread), outside the sandbox: what it prints on stdout,
 * {"median_ms","samples_ms",...}, as a new reference (NULL when it failed:
 * *r says how, grade_exec_trusted's value). */
static json_t *cpu_baseline_run(const struct run_ctx *rc, const char *prog, const char *case_name,
                                int *r)
{
    char *out = NULL;
    const char *argv[] = {prog, "--case", case_name, "--seed", BASELINE_SEED, NULL};
    *r = grade_exec_trusted(argv, NULL, baseline_limit(rc->lab), 1u << 20, &out);
    json_t *doc = *r == 0 && out ? json_loads(out, 0, NULL) : NULL;
    free(out);
    return doc;
}

/* The CPU baseline's median on case_name, cached in cache (dir), or NAN. */
static double cpu_baseline_time(const struct run_ctx *rc, const char *prog, const char *case_name,
                                const char *cache, const char *dir)
{
    int r;
    json_t *doc = cpu_baseline_run(rc, prog, case_name, &r);
    double ms = samples_median(json_object_get(doc, "samples_ms"));
    if (!(ms > 0))
        ms = json_number_value(json_object_get(doc, "median_ms"));
    if (ms > 0) {
        json_t *c = json_pack("{s:s, s:s, s:f}", "baseline", "cpu", "case", case_name,
                              "median_ms", ms);
        baseline_cache_write(cache, dir, c);
        json_decref(c);
    } else {
        fprintf(stderr, "cugrade-runner: the CPU baseline of %s failed (%d)\n", rc->lab->name, r);
        ms = NAN;
    }
    json_decref(doc);
    return ms;
}

/* The cached median of a baseline (and its device record into *device when
 * that is NULL), or NAN. */
static double baseline_cached(const char *cache, json_t **device)
{
    json_t *doc = json_load_file(cache, 0, NULL);
    double ms = NAN;
    if (doc) {
        ms = json_number_value(json_object_get(doc, "median_ms"));
        if (!*device && json_is_object(json_object_get(doc, "device")))
            *device = json_incref(json_object_get(doc, "device"));
        json_decref(doc);
    }
    return ms > 0 ? ms : NAN;
}

static double baseline_run(const struct run_ctx *rc, const char *name, const char *prog,
                           const char *case_name, const char *cache, const char *dir,
                           json_t **device);

/* Time one baseline (cached). Returns its median in ms, or NAN. A device
 * record seen on the way is stored into *device when that is NULL. */
double baseline_time(const struct run_ctx *rc, const char *name, const char *case_name,
                            json_t **device)
{
    char cache[PATH_MAX], dir[DIRLEN], g[128], c[128], prog[PATH_MAX];
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    run_slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    run_slug(case_name, c, sizeof c);
    snprintf(cache, sizeof cache, "%s/baselines/%s__%s__%s.json", dir, g, c, name);
    double ms = baseline_cached(cache, device);
    if (ms > 0)
        return ms;
    baseline_prog(rc, name, prog, sizeof prog);
    if (!prog[0]) {
        fprintf(stderr, "cugrade-runner: no baseline program %s for lab %s\n", name,
                rc->lab->name);
        return NAN;
    }
    /* Exclusive GPU, and a second look at the cache under the lock: another
     * runner sharing the cache may have just measured it. */
    int lk = lock_gpu(rc->env, 1);
    ms = baseline_cached(cache, device);
    if (!(ms > 0))
        ms = strcmp(name, "cpu") == 0 ? cpu_baseline_time(rc, prog, case_name, cache, dir)
                                      : baseline_run(rc, name, prog, case_name, cache, dir, device);
    lock_gpu_release(lk);
    return ms;
}

/* One sandboxed timing run of the GPU baseline prog (harness + reference
 * kernel): its samples (a new reference) and its device record into
 * *device when that is NULL. The caller holds the GPU lock exclusively.
 * Returns the samples array, or NULL when the run failed (logged). */
static json_t *baseline_gpu_samples(const struct run_ctx *rc, const char *name, const char *prog,
                                    const char *case_name, json_t **device)
{
    int fd = channel_open(rc->jobdir, name);
    if (fd < 0)
        return NULL;
    const char *argv[] = {"/lab/prog", "time", "--seed", BASELINE_SEED, "--case", case_name,
                          "--max-ms", TIME_MAX_MS, NULL};
    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    json_t *samples = NULL;
    double lim = baseline_limit(rc->lab);
    /* The cuBLAS baseline links libcublas dynamically (build-lab.sh). */
    char ldp[PATH_MAX + 64];
    snprintf(ldp, sizeof ldp, "LD_LIBRARY_PATH=%s/lib64", rc->env->cuda_home);
    /* timed as the student's run is (run.h: timing) */
    struct run_opts o = {
        .prog_bind = prog, .extra_env = ldp, .control_fd = -1, .cancel_fd = -1, .timing = 1};
    int r = run_sandboxed_opts(rc, argv, fd, lim, &o, &v);
    struct channel_info ci;
    memset(&ci, 0, sizeof ci);
    if (r == 0 && v.exited && v.exit_code == 0 && channel_read_all(fd, &ci) == 0 && ci.timing) {
        samples = json_incref(json_object_get(ci.timing, "samples_ms"));
        if (!*device && ci.device)
            *device = json_incref(ci.device);
    } else {
        fprintf(stderr,
                "cugrade-runner: baseline %s of %s failed (rc %d, exit %d, signal %d%s%s): %s\n",
                name, rc->lab->name, r, v.exit_code, v.signal, v.timed_out ? ", timed out" : "",
                v.oom_killed ? ", out of memory" : "", v.err ? v.err : "");
    }
    channel_info_clear(&ci);
    sandbox_verdict_free(&v);
    close(fd);
    return samples;
}

/* Time the GPU baseline prog in the sandbox and cache it. Called with the
 * GPU lock held exclusively. Returns ms or NAN. */
static double baseline_run(const struct run_ctx *rc, const char *name, const char *prog,
                           const char *case_name, const char *cache, const char *dir,
                           json_t **device)
{
    json_t *samples = baseline_gpu_samples(rc, name, prog, case_name, device);
    double ms = samples_median(samples);
    if (ms > 0) {
        json_t *out = json_pack("{s:s, s:s, s:s, s:f, s:i, s:O?}", "baseline", name, "case",
                                case_name, "gpu", rc->env->gpu_name ? rc->env->gpu_name : "",
                                "median_ms", ms, "samples", (int)json_array_size(samples),
                                "device", *device);
        baseline_cache_write(cache, dir, out);
        json_decref(out);
    } else {
        ms = NAN;
    }
    json_decref(samples);
    return ms;
}

/* The samples of a JSON array into a new C array (*x, *n). */
static int samples_copy(const json_t *samples, double **x, size_t *n)
{
    size_t m = json_array_size(samples), k;
    json_t *e;
    *x = NULL;
    *n = 0;
    if (m == 0)
        return -EIO;
    if (!(*x = calloc(m, sizeof **x)))
        return -ENOMEM;
    json_array_foreach(samples, k, e) (*x)[k] = json_number_value(e);
    *n = m;
    return 0;
}

/* The first batch of a baseline on this GPU model also fills its cache
 * (the median of a job that does not interleave, `prepare`'s shortcut). */
static void baseline_batch_cache(const struct run_ctx *rc, const char *name,
                                 const char *case_name, double ms, size_t n,
                                 const json_t *device)
{
    char cache[PATH_MAX], dir[DIRLEN], g[128], c[128];
    struct stat st;
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    run_slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    run_slug(case_name, c, sizeof c);
    snprintf(cache, sizeof cache, "%s/baselines/%s__%s__%s.json", dir, g, c, name);
    if (stat(cache, &st) == 0)
        return;
    json_t *out = json_pack("{s:s, s:s, s:s, s:f, s:i, s:O?}", "baseline", name, "case", case_name,
                            "gpu", rc->env->gpu_name ? rc->env->gpu_name : "", "median_ms", ms,
                            "samples", (int)n, "device", strcmp(name, "cpu") ? device : NULL);
    baseline_cache_write(cache, dir, out);
    json_decref(out);
}

int baseline_batch(const struct run_ctx *rc, const char *name, const char *case_name,
                   double **x, size_t *n, json_t **device)
{
    char prog[PATH_MAX];
    *x = NULL;
    *n = 0;
    baseline_prog(rc, name, prog, sizeof prog);
    if (!prog[0])
        return -ENOENT;
    json_t *samples = NULL;
    if (strcmp(name, "cpu") == 0) {
        int r;
        json_t *doc = cpu_baseline_run(rc, prog, case_name, &r);
        samples = json_incref(json_object_get(doc, "samples_ms"));
        json_decref(doc);
        if (!samples)
            fprintf(stderr, "cugrade-runner: a CPU baseline batch of %s failed (%d)\n",
                    rc->lab->name, r);
    } else {
        samples = baseline_gpu_samples(rc, name, prog, case_name, device);
    }
    int r = samples_copy(samples, x, n);
    double ms = samples_median(samples);
    if (r == 0 && ms > 0)
        baseline_batch_cache(rc, name, case_name, ms, *n, *device);
    if (r == 0 && ms > 0 && strcmp(name, "cpu") != 0 &&
        baseline_batch_keep(rc, name, case_name, *x, *n) != 0)
        fprintf(stderr, "cugrade-runner: cannot keep the %s batch of %s for other jobs\n", name,
                rc->lab->name);
    json_decref(samples);
    return r;
}

/* CACHE/gpu-N.batch-LAB-CASE-NAME.json: names made of the slugs. */
static void batch_path(const struct run_ctx *rc, const char *name, const char *case_name,
                       char *out, size_t len)
{
    char l[128], c[128], b[64], what[400];
    run_slug(rc->lab->name, l, sizeof l);
    run_slug(case_name, c, sizeof c);
    run_slug(name, b, sizeof b);
    snprintf(what, sizeof what, "batch-%s-%s-%s.json", l, c, b);
    lock_gpu_path(rc->env, what, out, len);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int baseline_batch_keep(const struct run_ctx *rc, const char *name, const char *case_name,
                        const double *x, size_t n)
{
    char path[PATH_MAX];
    json_t *a = json_array(), *doc = NULL;
    char *txt = NULL;
    int r = -ENOMEM;
    assert(x || n == 0);
    if (!a || n == 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(a, json_real(x[i])) != 0)
            goto out;
    doc = json_pack("{s:s, s:s, s:s, s:f, s:O}", "baseline", name, "case", case_name, "lab",
                    rc->lab->name, "at", wall_now(), "samples_ms", a);
    if (!doc || !(txt = json_dumps(doc, JSON_COMPACT)))
        goto out;
    batch_path(rc, name, case_name, path, sizeof path);
    r = run_file_write_atomic(path, txt, strlen(txt));
out:
    free(txt);
    json_decref(doc);
    json_decref(a);
    return r;
}

/* A kept batch is a few KiB (up to a few hundred samples). */
#define BATCH_FILE_MAX (256 * 1024)

int baseline_batch_recent(const struct run_ctx *rc, const char *name, const char *case_name,
                          double fresh_s, double **x, size_t *n, double *age_s)
{
    char path[PATH_MAX];
    struct stat st;
    json_error_t jerr;
    *x = NULL;
    *n = 0;
    *age_s = NAN;
    batch_path(rc, name, case_name, path, sizeof path);
    /* No link followed, and no wait on a FIFO in its place: only a regular
     * file is read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -EIO;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > BATCH_FILE_MAX) {
        close(fd);
        return -EIO;
    }
    json_t *doc = json_loadfd(fd, 0, &jerr);
    close(fd);
    const json_t *at = json_object_get(doc, "at");
    const char *b = json_string_value(json_object_get(doc, "baseline"));
    const char *c = json_string_value(json_object_get(doc, "case"));
    int r = -EIO;
    /* The names are in the file too: a slug may map two names to one path. */
    if (!json_is_number(at) || !b || !c || strcmp(b, name) != 0 || strcmp(c, case_name) != 0)
        goto out;
    double age = wall_now() - json_number_value(at);
    r = -ESTALE;
    if (!(age >= 0) || age > fresh_s)
        goto out; /* a clock set back dates it in the future: not trusted as fresh */
    r = samples_copy(json_object_get(doc, "samples_ms"), x, n);
    for (size_t i = 0; r == 0 && i < *n; i++)
        if (!((*x)[i] > 0) || !isfinite((*x)[i]))
            r = -EIO;
    if (r != 0) {
        free(*x);
        *x = NULL;
        *n = 0;
        r = -EIO;
        goto out;
    }
    *age_s = age;
out:
    json_decref(doc);
    return r;
}

int baseline_record_add(const char *path, double ms)
{
    char line[64];
    if (!(ms > 0) || !isfinite(ms))
        return -EINVAL;
    int n = snprintf(line, sizeof line, "%.6f\n", ms);
    /* One write(2) of a short line with O_APPEND: runners sharing the
     * cache append whole lines. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, line, (size_t)n);
    int e = w == n ? 0 : -EIO;
    close(fd);
    return e;
}

size_t baseline_record_read(const char *path, double *out, size_t max)
{
    FILE *f = fopen(path, "re");
    size_t n = 0, total = 0;
    char line[128];
    if (!f || max == 0) {
        if (f)
            fclose(f);
        return 0;
    }
    /* A ring of the newest max lines. */
    while (fgets(line, sizeof line, f)) {
        char *end;
        double v = strtod(line, &end);
        if (end == line || !(v > 0) || !isfinite(v))
            continue;
        out[total % max] = v;
        total++;
    }
    fclose(f);
    n = total < max ? total : max;
    if (total > max) { /* rotate so that the oldest comes first */
        double *tmp = malloc(max * sizeof *tmp);
        if (!tmp)
            return 0;
        for (size_t i = 0; i < max; i++)
            tmp[i] = out[(total + i) % max];
        memcpy(out, tmp, max * sizeof *tmp);
        free(tmp);
    }
    return n;
}

double baseline_record_age(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return NAN;
    double age = wall_now() - ((double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9);
    return age >= 0 ? age : NAN;
}

void baseline_record_path(const struct run_ctx *rc, const char *case_name, char *out, size_t len)
{
    char dir[DIRLEN], g[128], c[128], bdir[PATH_MAX];
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    run_slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    run_slug(case_name, c, sizeof c);
    snprintf(bdir, sizeof bdir, "%s/baselines", dir);
    run_mkdir_p(bdir);
    /* "cputime": batches of CPU time (cpu-baseline's clock); a record of
     * wall-clock batches from before, under another name, is not mixed in */
    snprintf(out, len, "%s/%s__%s__cputime.batches", bdir, g, c);
}

static void limit_cache_path(const struct run_ctx *rc, char *out, size_t len)
{
    char dir[DIRLEN], g[128];
    run_lab_dir(rc->env, rc->lab->name, dir, sizeof dir);
    run_slug(rc->env->gpu_name && *rc->env->gpu_name ? rc->env->gpu_name : "gpu", g, sizeof g);
    snprintf(out, len, "%s/limits/%s__naive-check.json", dir, g);
}

/* Run the naive reference's check over every case of the lab in the
 * sandbox (exclusive GPU lock held by the caller) and return its wall
 * seconds, or 0 when it did not run cleanly. */
static double naive_check_run(const struct run_ctx *rc, const char *prog)
{
    const struct lab *lab = rc->lab;
    size_t len = 1;
    for (size_t i = 0; i < lab->ncases; i++)
        len += strlen(lab->cases[i].name) + 1;
    char *list = calloc(1, len);
    int fd = channel_open(rc->jobdir, "limits");
    double secs = 0;
    if (list && fd >= 0) {
        for (size_t i = 0; i < lab->ncases; i++) {
            if (i)
                strcat(list, ",");
            strcat(list, lab->cases[i].name);
        }
        const char *argv[] = {"/lab/prog", "check", "--seed", BASELINE_SEED, "--cases", list, NULL};
        struct sandbox_verdict v;
        memset(&v, 0, sizeof v);
        int r = run_sandboxed(rc, argv, fd, lab->run_seconds > 0 ? lab->run_seconds : 120, prog,
                              &v);
        if (r == 0 && v.exited && v.exit_code == 0 && !v.timed_out)
            secs = v.wall_seconds;
        else
            fprintf(stderr, "cugrade-runner: the naive check of %s failed (rc %d, exit %d, "
                    "signal %d): wall limits stay at run_seconds\n", lab->name, r, v.exit_code,
                    v.signal);
        sandbox_verdict_free(&v);
    }
    if (fd >= 0)
        close(fd);
    free(list);
    return secs;
}

/* The naive reference's check-run seconds on this GPU: cached, else
 * measured now (measure = 1) under the exclusive GPU lock, else 0. Never
 * call it while holding a GPU lock. */
static double baseline_naive_check_seconds(const struct run_ctx *rc, int measure)
{
    char cache[PATH_MAX], prog[PATH_MAX], dir[DIRLEN + 16];
    if (rc->lab->derive_factor <= 0)
        return 0;
    limit_cache_path(rc, cache, sizeof cache);
    double s = limit_cache_read(cache);
    if (s > 0 || !measure)
        return s;
    baseline_prog(rc, "naive", prog, sizeof prog);
    if (!prog[0])
        return 0;
    int lk = lock_gpu(rc->env, 1);
    if (!((s = limit_cache_read(cache)) > 0) && (s = naive_check_run(rc, prog)) > 0) {
        char ldir[DIRLEN];
        run_lab_dir(rc->env, rc->lab->name, ldir, sizeof ldir);
        snprintf(dir, sizeof dir, "%s/limits", ldir);
        if (run_mkdir_p(dir) == 0)
            limit_cache_write(cache, s);
        fprintf(stderr, "cugrade-runner: %s: the naive reference's check run took %.2f s on "
                "%s\n", rc->lab->name, s, rc->env->gpu_name ? rc->env->gpu_name : "this GPU");
    }
    lock_gpu_release(lk);
    return s;
}

/* rc->limits for rc->lab (measuring the naive run when measure is set). */
void baseline_limits_set(struct run_ctx *rc, int measure)
{
    limit_compute(rc->lab, baseline_naive_check_seconds(rc, measure), atof(TIME_MAX_MS),
                  &rc->limits);
}

/* The CPU record of case_name brought up to BASELINE_CPU_SHARE_MIN batch
 * medians, or one newer when it is older than stale_s (a CPU batch needs
 * no GPU lock). Returns the batches timed. */
static int baseline_refresh_cpu(const struct run_ctx *rc, const char *case_name, double stale_s)
{
    char path[PATH_MAX], lockp[PATH_MAX + 8];
    double rec[BASELINE_CPU_RECORD];
    int timed = 0;
    baseline_record_path(rc, case_name, path, sizeof path);
    /* One refresher of a record at a time (the runners of one GPU model
     * share it): the next one reads it after, fresh, and times nothing. */
    snprintf(lockp, sizeof lockp, "%s.lock", path);
    int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    while (lk >= 0 && flock(lk, LOCK_EX) < 0 && errno == EINTR)
        ;
    double age = baseline_record_age(path);
    size_t have = baseline_record_read(path, rec, BASELINE_CPU_RECORD);
    while (have < BASELINE_CPU_SHARE_MIN || !(age >= 0 && age <= stale_s)) {
        double *x = NULL;
        size_t n = 0;
        json_t *device = NULL;
        int r = baseline_batch(rc, "cpu", case_name, &x, &n, &device);
        json_decref(device);
        if (r == 0 && n > 0)
            r = baseline_record_add(path, stats_median(x, n));
        free(x);
        if (r != 0)
            break; /* logged by baseline_batch; the next refresh tries again */
        timed++, have++, age = 0;
    }
    if (lk >= 0)
        close(lk);
    return timed;
}

int baseline_refresh(const struct run_ctx *rc, double stale_s)
{
    const struct lab *lab = rc->lab;
    int timed = 0;
    if (!lab->timing_case)
        return 0;
    for (size_t i = 0; i < lab->nbaselines; i++) {
        const char *b = lab->baselines[i];
        double *x = NULL, age = 0;
        size_t n = 0;
        if (strcmp(b, "cpu") == 0) {
            timed += baseline_refresh_cpu(rc, lab->timing_case, stale_s);
            continue;
        }
        if (baseline_batch_recent(rc, b, lab->timing_case, stale_s, &x, &n, &age) == 0) {
            free(x);
            continue;
        }
        json_t *device = NULL;
        int lk = lock_gpu(rc->env, 1);
        /* Looked up again under the lock: another runner of this GPU may
         * have just timed it. */
        int r = baseline_batch_recent(rc, b, lab->timing_case, stale_s, &x, &n, &age);
        if (r != 0 && baseline_batch(rc, b, lab->timing_case, &x, &n, &device) == 0)
            timed++;
        lock_gpu_release(lk);
        json_decref(device);
        free(x);
    }
    return timed;
}

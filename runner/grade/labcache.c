/*
 * labcache.c - see labcache.h.
 */
#include "runner/grade/labcache.h"
#include "runner/grade/python.h"
#include "runner/timing/baseline.h"
#include "runner/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The lab build's stamp names its shape: bump it when build-lab.sh's outputs
 * change incompatibly (2: a position-independent harness.o, linked into the
 * sanitizers' shared object too). */
#define LAB_STAMP ".cugrade-built-2"

/* ---------------------------------------------------------------------- */
/* Lab builds. */

int grade_lab_ensure(const struct grade_env *env, const char *lab, char *err, size_t errlen)
{
    char dir[DIRLEN], stamp[PATH_MAX], lock[PATH_MAX], script[PATH_MAX];
    int rc, lfd = -1;
    run_lab_dir(env, lab, dir, sizeof dir);
    snprintf(stamp, sizeof stamp, "%s/" LAB_STAMP, dir);
    if (access(stamp, F_OK) == 0)
        return 0;
    if ((rc = run_mkdir_p(dir)) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-rc));
        return rc;
    }
    snprintf(lock, sizeof lock, "%s/%s/.%s.lock", env->cache, env->arch, lab);
    lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
        goto out;
    }
    if (access(stamp, F_OK) == 0) { /* another runner built it meanwhile */
        rc = 0;
        goto out;
    }
    snprintf(script, sizeof script, "%s/labs/build-lab.sh", env->root);
    const char *argv[] = {"sh", script, lab, dir, env->arch, NULL};
    char cuda_env[PATH_MAX + 16], path_env[PATH_MAX + 64];
    snprintf(cuda_env, sizeof cuda_env, "CUDA_HOME=%s", env->cuda_home);
    const char *p = getenv("PATH");
    snprintf(path_env, sizeof path_env, "PATH=%s/bin:%s", env->cuda_home, p ? p : "/usr/bin:/bin");
    const char *extra[] = {cuda_env, path_env, NULL};
    fprintf(stderr, "cugrade-runner: building lab %s for %s into %s\n", lab, env->arch, dir);
    rc = grade_exec_trusted(argv, extra, 900, 0, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "labs/build-lab.sh %s %s %s failed (%s %d)", lab, dir, env->arch,
                 rc < 0 ? "error" : "status", rc);
        rc = rc < 0 ? rc : -EIO;
        goto out;
    }
    rc = run_file_write_atomic(stamp, "ok\n", 3);
    if (rc < 0)
        snprintf(err, errlen, "cannot write %s: %s", stamp, strerror(-rc));
out:
    if (lfd >= 0)
        close(lfd);
    return rc;
}

/* cugrade-launch where every sandbox can reach it: CACHE/cugrade-launch
 * (the cache is traversable by the sandbox's uid, as the lab builds it
 * binds; the runner's own directory need not be), refreshed when the
 * runner's copy differs. Writes its path into out. */
int labcache_launch_ensure(const struct grade_env *env, char *out, size_t len, char *err,
                         size_t errlen)
{
    struct stat a, b;
    char tmp[PATH_MAX + 32];
    snprintf(out, len, "%s/cugrade-launch", env->cache);
    if (!env->launch || !*env->launch || stat(env->launch, &a) < 0) {
        snprintf(err, errlen, "cugrade-launch not found (%s): make builds it beside cugrade-runner",
                 env->launch && *env->launch ? env->launch : "beside the runner");
        return -ENOENT;
    }
    if (stat(out, &b) == 0 && b.st_size == a.st_size && b.st_mtime >= a.st_mtime)
        return 0;
    int in = open(env->launch, O_RDONLY | O_CLOEXEC), fd = -1, rc = 0;
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", out, (int)getpid());
    if (in < 0 || run_mkdir_p(env->cache) < 0 ||
        (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755)) < 0) {
        rc = -errno;
        goto done;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(fd, buf, (size_t)n) != n) {
            rc = -EIO;
            goto done;
        }
    if (n < 0 || fchmod(fd, 0755) < 0 || fsync(fd) < 0) {
        rc = -errno;
        goto done;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, out) < 0)
        rc = -errno;
done:
    if (in >= 0)
        close(in);
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        unlink(tmp);
        snprintf(err, errlen, "cannot copy %.300s to %.300s: %s", env->launch, out, strerror(-rc));
    }
    return rc;
}

/* The stale age of the GPU's baseline record: half the sharing window, so
 * that a record refreshed then is still fresh for a job until the next
 * refresh (baseline.h). */
static double lab_record_stale(void)
{
    return BASELINE_SHARE_S / 2;
}

/* grade_lab_warm (full: the device record, the limits and the cached
 * medians too) or grade_lab_refresh (the baseline record only). */
static int lab_warm(const struct grade_env *env, const char *lab_name, int full)
{
    struct lab lab;
    struct run_ctx rc;
    char err[512], labdir[PATH_MAX];
    char *workdir = NULL;
    int r;
    memset(&rc, 0, sizeof rc);
    snprintf(labdir, sizeof labdir, "%s/labs/%s", env->root, lab_name);
    if ((r = lab_load(labdir, &lab, err, sizeof err)) < 0)
        return r;
    if (!env->gpu_devices || !lab.timing_case) {
        lab_free(&lab);
        return 0;
    }
    rc.env = env;
    rc.lab = &lab;
    snprintf(rc.jobdir, sizeof rc.jobdir, "%s/warm-XXXXXX", env->work);
    if (run_mkdir_p(env->work) < 0 || !mkdtemp(rc.jobdir) || chmod(rc.jobdir, 0711) < 0 ||
        (r = sandbox_workdir_create(rc.jobdir, &workdir)) < 0) {
        r = -EIO;
        goto out;
    }
    rc.workdir = workdir;
    baseline_device_record(&rc);
    baseline_limits_set(&rc, full);
    json_t *device = NULL;
    struct score_timing t;
    for (size_t i = 0; full && i < lab.nbaselines; i++) {
        double *slot = score_median_slot(&t, lab.baselines[i]);
        if (slot) {
            *slot = baseline_time(&rc, lab.baselines[i], lab.timing_case, &device);
            fprintf(stderr, "cugrade-runner: %s baseline %s on %s: %.4g ms\n", lab.name,
                    lab.baselines[i], lab.timing_case, *slot);
        }
    }
    json_decref(device);
    int nk = full ? python_cupy_warm(&rc, &lab) : 0;
    if (nk > 0)
        fprintf(stderr, "cugrade-runner: %s: %d CuPy kernel%s kept for Python jobs\n", lab.name,
                nk, nk == 1 ? "" : "s");
    int nb = baseline_refresh(&rc, lab_record_stale());
    if (nb > 0)
        fprintf(stderr, "cugrade-runner: %s: %d baseline batch%s timed for this GPU's record\n",
                lab.name, nb, nb == 1 ? "" : "es");
    r = 0;
out:
    if (rc.jobdir[0])
        run_jobdir_remove(rc.jobdir, workdir);
    free(workdir);
    lab_free(&lab);
    return r;
}

int grade_lab_warm(const struct grade_env *env, const char *lab_name)
{
    return lab_warm(env, lab_name, 1);
}

int grade_lab_refresh(const struct grade_env *env, const char *lab_name)
{
    return lab_warm(env, lab_name, 0);
}

int labcache_built(const struct grade_env *env, const char *lab)
{
    char dir[DIRLEN], stamp[PATH_MAX];
    run_lab_dir(env, lab, dir, sizeof dir);
    snprintf(stamp, sizeof stamp, "%s/" LAB_STAMP, dir);
    return access(stamp, F_OK) == 0;
}

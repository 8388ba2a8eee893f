/*
 * runner_sandbox.c - unit tests of the sandbox's host-side pieces: defaults,
 * the work directory (size cap, removal that follows no link), taking files
 * out (links, FIFOs, size caps, climbing out), the seccomp export, cgroup
 * detection. The hostile programs themselves are in tests/sandbox/ (the .t files).
 */
#include "runner/sandbox/cgroup.h"
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "tests/unit/tap.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *cancel_later(void *p)
{
    int fd = *(int *)p;
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (write(fd, "c", 1) != 1)
        perror("write");
    return NULL;
}

/* The output limit, as the runner sees it: `yes` prints forever and is
 * killed once stdout passes the limit, long before its wall limit. */
static void test_output_limit(const char *parent)
{
    char *wd = NULL;
    struct sandbox_config cfg;
    struct sandbox_verdict v;
    if (sandbox_workdir_create(parent, &wd) != 0) {
        check(0, "output limit: set-up");
        return;
    }
    sandbox_config_init(&cfg);
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    const char *yes[] = {"yes", "cugrade", NULL};
    cfg.argv = yes;
    cfg.env = env;
    cfg.workdir = wd;
    cfg.wall_seconds = 120;
    cfg.cpu_seconds = 120;
    cfg.output_limit = 1 << 20;
    int rc = sandbox_run(&cfg, &v);
    check(rc == 0 && v.output_limit && !v.timed_out && !v.exited && v.stdout_bytes > (1 << 20) &&
              v.stdout_bytes < (3 << 20) && strstr(v.message, "output limit exceeded") &&
              strncmp(v.out, "cugrade\n", 8) == 0,
          "output limit: a program printing forever is killed past it, with its verdict");
    sandbox_verdict_free(&v);
    sandbox_workdir_remove(wd);
    free(wd);
}

/* The run's CPU priority (sandbox_config.nice): the program inside sees
 * the niceness it was given, and a run without one the runner's own
 * (root here: a negative one too). */
static void test_nice(const char *parent)
{
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    /* coreutils' nice prints the niceness; where the kernel groups CPU time
     * by session (autogroup), the run's session has the same (bwrap.c). */
    const char *nice_argv[] = {"/bin/sh", "-c",
                               "nice; cat /proc/self/autogroup 2>/dev/null || echo none", NULL};
    int want[3] = {7, 0, -3}, got[3] = {-1, -1, -1}, ag[3] = {-99, -99, -99};
    for (int i = 0; i < 3; i++) {
        char *wd = NULL;
        struct sandbox_config cfg;
        struct sandbox_verdict v;
        memset(&v, 0, sizeof v);
        if (sandbox_workdir_create(parent, &wd) != 0)
            continue;
        sandbox_config_init(&cfg);
        cfg.argv = nice_argv;
        cfg.env = env;
        cfg.workdir = wd;
        cfg.nice = want[i];
        if (sandbox_run(&cfg, &v) == 0 && v.exited && v.exit_code == 0 && v.out) {
            got[i] = atoi(v.out);
            const char *n = strstr(v.out, " nice ");
            if (n)
                ag[i] = atoi(n + 6);
        }
        sandbox_verdict_free(&v);
        sandbox_workdir_remove(wd);
        free(wd);
    }
    check(got[0] == 7 && got[1] == 0,
          "nice: a run given niceness 7 runs at 7, one given none at the runner's 0");
    check(got[2] == -3, "nice: a run given -3 runs above the runner (root may raise it)");
    FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
    int agon = f && fgetc(f) == '1';
    if (f)
        fclose(f);
    check(agon && ag[0] == 7 && ag[1] == 0 && ag[2] == -3,
          "nice: the run's session (autogroup: on here, as on most kernels) has the run's nice");
}

static void *boost_later(void *p)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    sandbox_boost_ask(p);
    return NULL;
}

/* A raise asked for while the command runs (sandbox_config.boost, what a
 * timing run's gate asks once it holds the GPU): the shell and a child it
 * started before the raise both reach the boost's nice, and so does the
 * run's session's autogroup; a run whose boost is never asked stays. */
static void test_boost(const char *parent)
{
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    const char *argv[] = {
        "/bin/sh", "-c",
        "sleep 30 & c=$!; nice; i=0; while [ \"$(nice)\" = 0 ] && [ $i -lt 100 ]; do "
        "sleep 0.02; i=$((i+1)); done; nice; cut -d' ' -f19 /proc/$c/stat; "
        "cat /proc/self/autogroup 2>/dev/null || echo none; kill $c",
        NULL};
    for (int asked = 0; asked < 2; asked++) {
        char *wd = NULL;
        struct sandbox_config cfg;
        struct sandbox_verdict v;
        struct sandbox_boost b;
        pthread_t th;
        memset(&v, 0, sizeof v);
        if (sandbox_workdir_create(parent, &wd) != 0) {
            check(0, "boost: set-up");
            return;
        }
        sandbox_config_init(&cfg);
        cfg.argv = argv;
        cfg.env = env;
        cfg.workdir = wd;
        sandbox_boost_init(&b, -10);
        cfg.boost = &b;
        int started = asked && pthread_create(&th, NULL, boost_later, &b) == 0;
        int rc = sandbox_run(&cfg, &v);
        if (started)
            pthread_join(th, NULL);
        int before = -99, after = -99, child = -99, ag = -99;
        if (rc == 0 && v.out && sscanf(v.out, "%d %d %d", &before, &after, &child) == 3) {
            const char *n = strstr(v.out, " nice ");
            if (n)
                ag = atoi(n + 6);
        }
        if (asked)
            check(
                before == 0 && after == -10 && child == -10 && ag == -10,
                "boost: asked while the run runs, the shell, its child and its session go to -10");
        else
            check(before == 0 && after == 0 && child == 0 && ag == 0,
                  "boost: never asked, the run stays at the runner's nice");
        if (before == -99)
            fprintf(stderr, "# rc %d out: %s\n", rc, v.out ? v.out : "(none)");
        sandbox_verdict_free(&v);
        sandbox_workdir_remove(wd);
        free(wd);
    }
}

/* Boxes: each work directory holds its own uid until it is removed; when
 * every box is taken, a new one is -EBUSY (a system error, retried), and a
 * removed directory's box is free again. A run in a directory that holds
 * no box takes one for the run, and lets it go after. */
static void test_boxes(const char *parent)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/boxes", parent);
    sandbox_boxes_configure(1900005000u, 2, dir);
    char *a = NULL, *b = NULL, *c = NULL;
    struct stat sa, sb;
    int ra = sandbox_workdir_create(parent, &a), rb = sandbox_workdir_create(parent, &b);
    check(ra == 0 && rb == 0 && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_uid != sb.st_uid &&
              sa.st_uid >= 1900005000u && sa.st_uid < 1900005002u && sb.st_uid >= 1900005000u &&
              sb.st_uid < 1900005002u && sa.st_gid == sa.st_uid,
          "boxes: two work directories, two uids from the range (uid = gid)");
    check(sandbox_workdir_create(parent, &c) == -EBUSY && c == NULL, "boxes: all taken is -EBUSY");
    struct sandbox_config cfg;
    struct sandbox_verdict v;
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    const char *idu[] = {"/bin/true", NULL};
    sandbox_config_init(&cfg);
    cfg.argv = idu;
    cfg.env = env;
    cfg.workdir = a;
    int rc = sandbox_run(&cfg, &v);
    check(rc == 0 && v.exited && v.exit_code == 0 && v.host_uid == sa.st_uid,
          "boxes: a run in a work directory has that directory's uid");
    sandbox_verdict_free(&v);
    char other[4200];
    snprintf(other, sizeof other, "%s/./", a);
    cfg.workdir = other;
    rc = sandbox_run(&cfg, &v);
    check(rc == 0 && v.exited && v.host_uid == sa.st_uid,
          "boxes: found by the directory's identity, not its spelling");
    sandbox_verdict_free(&v);
    char plain[4096];
    snprintf(plain, sizeof plain, "%s/plain", parent);
    mkdir(plain, 0755);
    cfg.workdir = plain;
    cfg.workdir_bytes = 0;
    check(sandbox_run(&cfg, &v) == -EBUSY, "boxes: a run that needs a box of its own, none free: -EBUSY");
    sandbox_verdict_free(&v);
    sandbox_workdir_remove(a);
    rc = sandbox_run(&cfg, &v);
    check(rc == 0 && v.exited && v.host_uid == sa.st_uid, "boxes: a removed directory's box is free again");
    sandbox_verdict_free(&v);
    rc = sandbox_workdir_create(parent, &c);
    check(rc == 0 && c && stat(c, &sa) == 0 && sa.st_uid != sb.st_uid,
          "boxes: and so is a run's, once the run is over");
    if (c)
        sandbox_workdir_remove(c);
    sandbox_workdir_remove(b);
    rmdir(plain);
    free(a);
    free(b);
    free(c);
    for (int i = 0; i < 2; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/box-%d.lock", dir, i);
        unlink(p);
    }
    rmdir(dir);
    sandbox_boxes_configure(SANDBOX_BOX_UID_BASE, SANDBOX_BOXES,
                            access("/run", W_OK) == 0 ? SANDBOX_BOX_DIR : SANDBOX_BOX_DIR_FALLBACK);
}

/* fd 4 (control_fd) and cancel_fd: the pre-started sanitizers' plumbing. */
static void test_control_and_cancel(const char *parent)
{
    char *wd = NULL, chan[4096], buf[64] = "";
    struct sandbox_config cfg;
    struct sandbox_verdict v;
    int sv[2], cp[2];
    if (sandbox_workdir_create(parent, &wd) != 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(cp, O_CLOEXEC) < 0) {
        check(0, "control/cancel: set-up");
        return;
    }
    snprintf(chan, sizeof chan, "%s/chan", parent);
    sandbox_config_init(&cfg);
    check(cfg.control_fd == -1 && cfg.cancel_fd == -1, "sandbox_config_init: no control or cancel fd");
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    const char *echo[] = {"/bin/sh", "-c", "printf r >&4; read x <&4; echo \"got $x\" >&3", NULL};
    cfg.argv = echo;
    cfg.env = env;
    cfg.workdir = wd;
    cfg.control_fd = sv[1];
    check(sandbox_run(&cfg, &v) == -EINVAL, "control_fd without a result channel: -EINVAL");
    cfg.result_fd = open(chan, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (write(sv[0], "go\n", 3) != 3)
        perror("write");
    int rc = sandbox_run(&cfg, &v);
    char c = 0;
    ssize_t k = recv(sv[0], &c, 1, MSG_DONTWAIT);
    ssize_t n = pread(cfg.result_fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    check(rc == 0 && v.exited && v.exit_code == 0 && k == 1 && c == 'r' && strcmp(buf, "got go\n") == 0,
          "control_fd is fd 4 inside: both ways");
    sandbox_verdict_free(&v);

    const char *sleeper[] = {"/bin/sh", "-c", "sleep 30", NULL};
    cfg.argv = sleeper;
    cfg.control_fd = -1;
    cfg.cancel_fd = cp[0];
    cfg.wall_seconds = 20;
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &cp[1]);
    double t0 = now_s();
    rc = sandbox_run(&cfg, &v);
    double took = now_s() - t0;
    pthread_join(th, NULL);
    check(rc == 0 && v.cancelled && !v.exited && !v.timed_out && took < 5,
          "cancel_fd: a byte ends the run at once, cancelled (not a timeout)");
    sandbox_verdict_free(&v);
    close(cfg.result_fd);
    close(sv[0]);
    close(sv[1]);
    close(cp[0]);
    close(cp[1]);
    unlink(chan);
    sandbox_workdir_remove(wd);
    free(wd);
}

static void write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, data, len) < 0)
            perror("write");
        close(fd);
    }
}

/* sandbox_tree_remove: a folder, its files and subfolders gone; a link in
 * it removed, not followed (its target outside stays). */
static void test_tree_remove(const char *parent)
{
    char dir[512], path[600], outside[512], outdir[512], keep[600];
    snprintf(dir, sizeof dir, "%s/tree", parent);
    snprintf(outside, sizeof outside, "%s/outside", parent);
    write_file(parent, "outside", "", 0);
    /* A link to a folder as well as to a file: a remover that follows a
     * link empties the folder (unlinking a link to a file removes the link
     * whatever the remover does, so that one alone could never tell). */
    snprintf(outdir, sizeof outdir, "%s/outside_dir", parent);
    mkdir(outdir, 0755);
    write_file(outdir, "keep", "x", 1);
    snprintf(keep, sizeof keep, "%s/keep", outdir);
    mkdir(dir, 0755);
    write_file(dir, "a", "", 0);
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0755);
    write_file(dir, "sub/b", "", 0);
    snprintf(path, sizeof path, "%s/link", dir);
    int linked = symlink(outside, path) == 0;
    snprintf(path, sizeof path, "%s/sub/dirlink", dir);
    linked = linked && symlink(outdir, path) == 0;
    struct stat st;
    check(linked && sandbox_tree_remove(dir) == 0 && stat(dir, &st) < 0 && errno == ENOENT,
          "sandbox_tree_remove: the folder, its files, a subfolder and links are gone");
    check(stat(outside, &st) == 0 && stat(keep, &st) == 0,
          "sandbox_tree_remove: a link's target outside, a file or a folder's files, is left");
    check(sandbox_tree_remove(dir) == 0, "sandbox_tree_remove: a missing folder is no error");
    unlink(outside);
    unlink(keep);
    rmdir(outdir);
}

int main(void)
{
    struct sandbox_config cfg;
    sandbox_config_init(&cfg);
    check(cfg.wall_seconds == 10 && cfg.cpu_seconds == 10 && cfg.memory_bytes == (1ULL << 30) &&
              cfg.pids == 64 && cfg.file_bytes == (64ULL << 20) && cfg.workdir_bytes == (64ULL << 20) &&
              cfg.output_cap == (64 << 10) && cfg.result_fd == -1 && cfg.nofile == 1024 &&
              cfg.output_limit == SANDBOX_OUTPUT_LIMIT && SANDBOX_OUTPUT_LIMIT == (8ULL << 20),
          "sandbox_config_init: the documented defaults (8 MiB output limit)");

    struct sandbox_verdict v;
    memset(&v, 0, sizeof v);
    v.out = strdup("captured stdout");
    v.err = strdup("captured stderr");
    sandbox_verdict_free(&v);
    int cleared = v.out == NULL && v.err == NULL;
    sandbox_verdict_free(&v); /* twice: the pointers were cleared, no double free */
    check(cleared && v.out == NULL && v.err == NULL,
          "sandbox_verdict_free: frees and clears the output, safe to call again");
    check(sandbox_run(&cfg, &v) == -EINVAL, "sandbox_run: no argv is -EINVAL, not a crash");

    char parent[] = "/tmp/cugrade-unit-XXXXXX";
    if (!mkdtemp(parent)) {
        perror("mkdtemp");
        return 1;
    }
    chmod(parent, 0755);
    char *wd = NULL;
    int rc = sandbox_workdir_create(parent, &wd);
    check(rc == 0 && wd, "sandbox_workdir_create: a fresh directory");
    if (rc != 0)
        return 1;
    struct statfs sf;
    int is_tmpfs = statfs(wd, &sf) == 0 && sf.f_type == 0x01021994;
    if (getuid() == 0) {
        check(is_tmpfs, "workdir: a tmpfs of its own (the size cap)");
        check(sandbox_workdir_resize(wd, 1 << 20) == 0, "workdir: resized to a run's cap");
        char big[4096];
        memset(big, 'x', sizeof big);
        char p[4096];
        snprintf(p, sizeof p, "%s/fill", wd);
        int fd = open(p, O_WRONLY | O_CREAT, 0644), err = 0;
        for (int i = 0; i < 1024 && fd >= 0; i++)
            if (write(fd, big, sizeof big) < 0) {
                err = errno;
                break;
            }
        if (fd >= 0)
            close(fd);
        unlink(p);
        check(err == ENOSPC, "workdir: writing past the cap is ENOSPC");
    }

    write_file(wd, "small", "hello\n", 6);
    char *buf = NULL;
    size_t len = 0;
    rc = sandbox_take_file(wd, "small", 100, &buf, &len);
    check(rc == 0 && len == 6 && strcmp(buf, "hello\n") == 0, "take_file: a regular file");
    free(buf);
    rc = sandbox_take_file(wd, "small", 5, &buf, &len);
    check(rc == -EFBIG && buf == NULL, "take_file: over the cap is -EFBIG");
    char lp[4096];
    snprintf(lp, sizeof lp, "%s/link", wd);
    if (symlink("/etc/passwd", lp) < 0)
        perror("symlink");
    rc = sandbox_take_file(wd, "link", 1 << 20, &buf, &len);
    check(rc == -ELOOP && buf == NULL, "take_file: a symlink to /etc/passwd is -ELOOP");
    snprintf(lp, sizeof lp, "%s/dir", wd);
    if (symlink("/etc", lp) < 0)
        perror("symlink");
    rc = sandbox_take_file(wd, "dir/passwd", 1 << 20, &buf, &len);
    check(rc < 0 && buf == NULL, "take_file: a path through a linked directory fails");
    rc = sandbox_take_file(wd, "../../../etc/passwd", 1 << 20, &buf, &len);
    check(rc < 0 && buf == NULL, "take_file: ../ out of the work directory fails");
    rc = sandbox_take_file(wd, "/etc/passwd", 1 << 20, &buf, &len);
    check(rc < 0 && buf == NULL, "take_file: an absolute name fails");
    snprintf(lp, sizeof lp, "%s/fifo", wd);
    mkfifo(lp, 0644);
    rc = sandbox_take_file(wd, "fifo", 1 << 20, &buf, &len);
    check(rc == -EINVAL, "take_file: a FIFO is -EINVAL, without blocking");
    rc = sandbox_take_file(wd, "missing", 1 << 20, &buf, &len);
    check(rc == -ENOENT, "take_file: a missing file is -ENOENT");

    /* removal must not follow a link into the host */
    char canary[4096];
    snprintf(canary, sizeof canary, "%s/canary", parent);
    mkdir(canary, 0755);
    write_file(canary, "keep", "x", 1);
    snprintf(lp, sizeof lp, "%s/victim", wd);
    if (symlink(canary, lp) < 0)
        perror("symlink");
    snprintf(lp, sizeof lp, "%s/sub", wd);
    mkdir(lp, 0755);
    snprintf(lp, sizeof lp, "%s/sub/victim", wd);
    if (symlink(canary, lp) < 0)
        perror("symlink");
    rc = sandbox_workdir_remove(wd);
    char keep[4200];
    snprintf(keep, sizeof keep, "%s/keep", canary);
    check(rc == 0 && access(wd, F_OK) != 0, "workdir_remove: the work directory is gone");
    check(access(keep, F_OK) == 0, "workdir_remove: a linked host directory is untouched");
    free(wd);

    int fd = seccomp_filter_export();
    struct stat st;
    check(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size % 8 == 0,
          "seccomp_filter_export: a BPF program (8-byte instructions) in a memfd");
    if (fd >= 0)
        close(fd);

    test_tree_remove(parent);

    if (getuid() == 0) {
        check(cgroup_detect() != CGROUP_NONE, "cgroup_detect: v1 or v2 found (running as root)");
        test_control_and_cancel(parent);
        test_output_limit(parent);
        test_nice(parent);
        test_boost(parent);
        test_boxes(parent);
    }

    unlink(keep);
    rmdir(canary);
    rmdir(parent);
    return failures ? 1 : 0;
}

/*
 * sandbox_run - a command-line front end to sandbox_run() for the hostile
 * suite, the GPU script and the benchmark. Prints the verdict as one line
 * of JSON ("key":value, no spaces, so shell tests can grep it).
 *
 *   sandbox_run [options] -- command [args...]
 *     --wall S  --cpu S  --mem BYTES  --pids N  --fsize BYTES
 *     --workdir-size BYTES  --output-cap BYTES  --nofile N   (K/M/G suffixes)
 *     --output-limit BYTES  kill past this much stdout+stderr (0: never)
 *     --workdir DIR       use this host work directory (default: a fresh one
 *                         from sandbox_workdir_create under --parent, removed after)
 *     --parent DIR        where to create it (default /tmp)
 *     --keep              do not remove the created work directory (path in "workdir")
 *     --remove            with --workdir: sandbox_workdir_remove() it after the run
 *     --put SRC:NAME      copy host file SRC into the work directory first
 *     --bind SRC[:DST]    read-only bind;   --bind-rw SRC[:DST]  writable bind
 *     --dev PATH          a device node (turns allow_gpu on);  --gpu  every /dev/nvidia*
 *     --env K=V           environment (repeatable; default PATH, HOME=/work, LANG=C)
 *     --result-file PATH  open PATH for writing and pass it as fd 3
 *     --take NAME[:CAP]   after the run, sandbox_take_file(NAME) ("take_rc", "take")
 *     --bench N           run N times, print the median wall time ("median_ms")
 *     --direct            with --bench: run the command without the sandbox
 *     --no-cgroup         diagnostics: WITHOUT cgroup limits (a host whose
 *                         cgroupfs we may not write; what the cgroup costs)
 *     --no-seccomp        diagnostics: WITHOUT the seccomp filter (its cost)
 *     --sweep-age S       remove a dead runner's leftover run groups once
 *                         S seconds old (cgroup.h CGROUP_SWEEP_AGE: 60)
 *     --quiet             leave "out"/"err" out of the JSON
 */
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static int copy_in(const char *workdir, const char *spec)
{
    char src[4096];
    snprintf(src, sizeof src, "%s", spec);
    char *colon = strrchr(src, ':');
    const char *name = colon ? colon + 1 : strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    if (colon)
        *colon = 0;
    char dst[8192];
    snprintf(dst, sizeof dst, "%s/%s", workdir, name);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    struct stat st;
    mode_t mode = fstat(in, &st) == 0 && (st.st_mode & 0100) ? 0755 : 0644;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (out < 0) {
        close(in);
        return -errno;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            break;
    close(in);
    close(out);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Time one fork+exec+wait of argv outside any sandbox; *failed is set
 * when it did not exit 0 (a benchmark of a failing exec measures nothing). */
static double run_direct(char *const *argv, int *failed)
{
    double t = now_ms();
    pid_t p = fork();
    if (p == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        (*failed)++;
    return now_ms() - t;
}

int main(int argc, char **argv)
{
    struct sandbox_config cfg;
    sandbox_config_init(&cfg);
    static struct sandbox_bind binds[MAXN];
    static const char *devs[MAXN + 1], *envs[MAXN + 1], *puts_[MAXN];
    static char devbuf[MAXN][300];
    size_t nb = 0, nd = 0, ne = 0, np = 0;
    const char *workdir = NULL, *parent = "/tmp", *result_file = NULL, *take = NULL;
    int keep = 0, remove_given = 0, bench = 0, direct = 0, quiet = 0, i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
#define ARG(name) (strcmp(a, name) == 0 && v && ++i)
        if (ARG("--wall")) cfg.wall_seconds = atof(v);
        else if (ARG("--cpu")) cfg.cpu_seconds = atof(v);
        else if (ARG("--mem")) cfg.memory_bytes = parse_size(v);
        else if (ARG("--pids")) cfg.pids = parse_size(v);
        else if (ARG("--fsize")) cfg.file_bytes = parse_size(v);
        else if (ARG("--workdir-size")) cfg.workdir_bytes = parse_size(v);
        else if (ARG("--output-cap")) cfg.output_cap = (size_t)parse_size(v);
        else if (ARG("--nofile")) cfg.nofile = parse_size(v);
        else if (ARG("--output-limit")) cfg.output_limit = parse_size(v);
        else if (ARG("--workdir")) workdir = v;
        else if (ARG("--parent")) parent = v;
        else if (ARG("--put") && np < MAXN) puts_[np++] = v;
        else if ((strcmp(a, "--bind") == 0 || strcmp(a, "--bind-rw") == 0) && v && nb < MAXN) {
            char *s = strdup(argv[++i]), *c = strchr(s, ':');
            if (c)
                *c = 0;
            binds[nb].src = s;
            binds[nb].dst = c ? c + 1 : NULL;
            binds[nb++].writable = a[6] == '-';
        } else if (ARG("--dev") && nd < MAXN) { devs[nd++] = v; cfg.allow_gpu = 1; }
        else if (strcmp(a, "--gpu") == 0) {
            DIR *d = opendir("/dev");
            struct dirent *e;
            while (d && (e = readdir(d)) && nd < MAXN)
                if (strncmp(e->d_name, "nvidia", 6) == 0) {
                    snprintf(devbuf[nd], sizeof devbuf[nd], "/dev/%s", e->d_name);
                    devs[nd] = devbuf[nd];
                    nd++;
                }
            if (d)
                closedir(d);
            cfg.allow_gpu = 1;
        }
        else if (ARG("--env") && ne < MAXN) envs[ne++] = v;
        else if (ARG("--result-file")) result_file = v;
        else if (ARG("--take")) take = v;
        else if (ARG("--bench")) bench = atoi(v);
        else if (ARG("--sweep-age"))
            cgroup_sweep_age_set(atol(v));
        else if (strcmp(a, "--direct") == 0) direct = 1;
        else if (strcmp(a, "--no-cgroup") == 0)
            cfg.diag_no_cgroup = 1;
        else if (strcmp(a, "--no-seccomp") == 0)
            cfg.diag_no_seccomp = 1;
        else if (strcmp(a, "--keep") == 0) keep = 1;
        else if (strcmp(a, "--remove") == 0) remove_given = 1;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else {
            fprintf(stderr, "sandbox_run: bad option %s\n", a);
            return 2;
        }
#undef ARG
    }
    if (i >= argc) {
        fprintf(stderr, "usage: sandbox_run [options] -- command [args...]\n");
        return 2;
    }
    if (ne == 0) {
        envs[ne++] = "PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin";
        envs[ne++] = "HOME=/work";
        envs[ne++] = "LANG=C";
    }
    cfg.argv = (const char *const *)argv + i;
    cfg.env = envs;
    cfg.binds = binds;
    cfg.nbinds = nb;
    cfg.devices = nd ? devs : NULL;

    if (bench > 0 && direct) {
        double *t = calloc((size_t)bench, sizeof *t);
        int failed = 0;
        for (int k = 0; k < bench; k++)
            t[k] = run_direct(argv + i, &failed);
        qsort(t, (size_t)bench, sizeof *t, cmp_double);
        printf("{\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"failed\":%d}\n", t[bench / 2], t[0],
               t[bench - 1], failed);
        return failed ? 1 : 0;
    }

    char *created = NULL;
    int rc;
    if (!workdir) {
        if ((rc = sandbox_workdir_create(parent, &created)) < 0) {
            fprintf(stderr, "sandbox_run: workdir: %s\n", strerror(-rc));
            return 2;
        }
        workdir = created;
    }
    cfg.workdir = workdir;
    for (size_t k = 0; k < np; k++)
        if ((rc = copy_in(workdir, puts_[k])) < 0) {
            fprintf(stderr, "sandbox_run: put %s: %s\n", puts_[k], strerror(-rc));
            return 2;
        }
    if (result_file) {
        cfg.result_fd = open(result_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (cfg.result_fd < 0) {
            perror("sandbox_run: result file");
            return 2;
        }
    }

    struct sandbox_verdict v;
    if (bench > 0) {
        double *t = calloc((size_t)bench, sizeof *t);
        int failed = 0;
        for (int k = 0; k < bench; k++) {
            double t0 = now_ms();
            rc = sandbox_run(&cfg, &v);
            t[k] = now_ms() - t0;
            if (rc == 0 && !(v.exited && v.exit_code == 0))
                failed++;
            sandbox_verdict_free(&v);
            if (rc < 0) {
                fprintf(stderr, "sandbox_run: %s\n", strerror(-rc));
                return 2;
            }
        }
        qsort(t, (size_t)bench, sizeof *t, cmp_double);
        printf("{\"median_ms\":%.3f,\"min_ms\":%.3f,\"max_ms\":%.3f,\"failed\":%d}\n", t[bench / 2], t[0],
               t[bench - 1], failed);
        if (created && !keep)
            sandbox_workdir_remove(created);
        return failed ? 1 : 0;
    }

    double t_start = now_ms();
    rc = sandbox_run(&cfg, &v);
    double t_end = now_ms();
    printf("{\"rc\":%d", rc);
    if (rc == 0) {
        printf(",\"t_start\":%.6f,\"t_end\":%.6f", t_start / 1e3, t_end / 1e3);
        printf(",\"exited\":%d,\"exit_code\":%d,\"signal\":%d,\"timed_out\":%d,\"cpu_limit\":%d,"
               "\"oom_killed\":%d,\"output_truncated\":%d,\"output_limit\":%d,\"file_limit\":%d,\"wall_seconds\":%.3f,"
               "\"cpu_seconds\":%.3f,\"setup_seconds\":%.3f,\"peak_memory_bytes\":%llu,"
               "\"stdout_bytes\":%llu,\"stderr_bytes\":%llu,\"host_uid\":%u,\"message\":",
               v.exited, v.exit_code, v.signal, v.timed_out, v.cpu_limit, v.oom_killed,
               v.output_truncated, v.output_limit, v.file_limit, v.wall_seconds, v.cpu_seconds, v.setup_seconds,
               (unsigned long long)v.peak_memory_bytes, (unsigned long long)v.stdout_bytes,
               (unsigned long long)v.stderr_bytes, v.host_uid);
        json_str(stdout, v.message);
        if (!quiet) {
            printf(",\"out\":");
            json_str(stdout, v.out);
            printf(",\"err\":");
            json_str(stdout, v.err);
        }
    }
    if (take) {
        char name[4096], *buf = NULL;
        size_t cap = 1 << 20, len = 0;
        snprintf(name, sizeof name, "%s", take);
        char *c = strchr(name, ':');
        if (c) {
            *c = 0;
            cap = (size_t)parse_size(c + 1);
        }
        int t = sandbox_take_file(workdir, name, cap, &buf, &len);
        printf(",\"take_rc\":%d,\"take\":", t);
        json_str(stdout, t == 0 ? buf : "");
        free(buf);
    }
    if (created && keep) {
        printf(",\"workdir\":");
        json_str(stdout, created);
    }
    printf("}\n");
    fflush(stdout);
    sandbox_verdict_free(&v);
    if (created && !keep) {
        int r = sandbox_workdir_remove(created);
        if (r < 0)
            fprintf(stderr, "sandbox_run: remove %s: %s\n", created, strerror(-r));
    }
    if (!created && remove_given) {
        int r = sandbox_workdir_remove(workdir);
        printf("{\"remove_rc\":%d}\n", r);
    }
    free(created);
    return rc == 0 ? 0 : 2;
}

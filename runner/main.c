/*
 * main.c - cugrade-runner: one runner per GPU. Claims one job at a time
 * from the server, grades it (grade.h) and posts the result; or grades one
 * file locally with `cugrade-runner grade`. See docs/runner.md.
 *
 * Each job is graded in a forked child of the runner: whatever a
 * submission does to the grading code (a parser bug, a crash we did not
 * foresee), the runner itself survives, posts system_error for that job and
 * claims the next one.
 */
#include "client.h"
#include "status.h"
#include "grade.h"
#include "lab.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_POSTED    0   /* child: the result was posted */
#define EXIT_ABANDONED 3   /* child: the lease was lost (409), nothing posted */
#define EXIT_UNPOSTED  4   /* child: graded, but the result could not be posted */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cugrade-runner --server URL --token-file F [--gpu N] [--cache DIR]\n"
            "                      [--work DIR] [--root DIR] [--name NAME] [--once]\n"
            "       cugrade-runner grade --lab L --file kernel.cu [--seed HEX] [--rubric F]\n"
            "                      [--gpu N] [--cache DIR] [--work DIR] [--root DIR]\n"
            "                      [--arch sm_XX] [--stop-after compile|inspect|link]\n"
            "       cugrade-runner prepare [--gpu N] [--cache DIR] [--root DIR] [--arch sm_XX]\n"
            "       cugrade-runner --help\n"
            "\n"
            "Claims jobs from a cugrade-server and grades them on one GPU (see docs/runner.md).\n"
            "`grade` runs the whole pipeline on one file without a server and prints\n"
            "{\"status\":...,\"result\":{...}}. `prepare` builds every lab and caches the\n"
            "GPU's device record and the baselines, then exits.\n"
            "\n"
            "  --server URL      the cugrade-server, e.g. http://127.0.0.1:8080\n"
            "  --token-file F    file holding the runner token (cgr_...)\n"
            "  --gpu N           GPU index (nvidia-smi order); default $CUDA_VISIBLE_DEVICES or 0\n"
            "  --cache DIR       built labs and cached baselines (default ROOT/var/runner-cache)\n"
            "  --work DIR        per-job directories (default /tmp/cugrade-runner-gpuN)\n"
            "  --root DIR        source tree with labs/ and rubrics/ (default: found from cwd/exe)\n"
            "  --arch sm_XX      GPU architecture when no GPU can be queried (or $CUGRADE_ARCH)\n"
            "  --once            exit after one job\n"
            "  --jobs N          jobs compiling at once (the CPU lane; default: cores /\n"
            "                    $CUGRADE_RUNNERS_PER_HOST)\n"
            "  --queue M         jobs in flight, compiling or waiting for the GPU (default and\n"
            "                    most 256: claim ahead, so compile errors never wait for the GPU)\n"
            "  --lazy-build      build a lab on its first job instead of at start\n"
            "  --name NAME       runner name reported to the server (default HOST-gpuN)\n"
            "Environment: CUDA_HOME (default /usr/local/cuda), CUGRADE_KEEP_JOBS=1 keeps job dirs,\n"
            "CUGRADE_GPU_HOLD=0 does not keep the GPU initialised (see docs/runner.md).\n");
}

/* ---------------------------------------------------------------------- */
/* The host: GPU, arch, device nodes, tree. */

struct host {
    char root[PATH_MAX];
    char cache[PATH_MAX];
    char work[PATH_MAX];
    char cuda_home[PATH_MAX];
    char gpu_index[64];
    char gpu_name[256];
    char arch[32];
    char minor[16];
    char hostname[128];
    char launch[PATH_MAX];     /* cugrade-launch: beside this binary, or $CUGRADE_LAUNCH */
    const char *devices[16];
    char devbuf[16][64];
    int have_gpu;
};

static int dir_has(const char *dir, const char *name)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* This binary's path (NUL-terminated) into exe; 0, or -1. */
static int self_exe(char *exe, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", exe, len - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    return 0;
}

static void find_root(struct host *h, const char *opt)
{
    char exe[PATH_MAX];
    const char *env = getenv("CUGRADE_ROOT");
    if (opt) {
        snprintf(h->root, sizeof h->root, "%s", opt);
        return;
    }
    if (env && dir_has(env, "labs")) {
        snprintf(h->root, sizeof h->root, "%s", env);
        return;
    }
    if (getcwd(h->root, sizeof h->root) && dir_has(h->root, "labs"))
        return;
    if (self_exe(exe, sizeof exe) == 0) {
        for (int up = 0; up < 3; up++) {
            char *s = strrchr(exe, '/');
            if (!s)
                break;
            *s = '\0';
            if (dir_has(exe, "labs")) {
                snprintf(h->root, sizeof h->root, "%s", exe);
                return;
            }
        }
    }
    if (!getcwd(h->root, sizeof h->root))
        snprintf(h->root, sizeof h->root, ".");
}

/* cugrade-launch (runner/launch.c), the sanitizer runs' target: built and
 * shipped beside cugrade-runner (make, make dist). */
static void find_launch(struct host *h)
{
    const char *e = getenv("CUGRADE_LAUNCH");
    char exe[PATH_MAX];
    if (e && *e) {
        snprintf(h->launch, sizeof h->launch, "%s", e);
        return;
    }
    h->launch[0] = '\0';
    if (self_exe(exe, sizeof exe) < 0)
        return;
    char *slash = strrchr(exe, '/');
    if (slash) {
        *slash = '\0';
        snprintf(h->launch, sizeof h->launch, "%.*s/cugrade-launch", PATH_MAX - 32, exe);
    }
}

/* Strip surrounding whitespace in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* The /dev/nvidiaN minor of the GPU at PCI address bus ("00000000:19:00.0"
 * as nvidia-smi prints it), from the driver's /proc entry; "" if unknown. */
static void gpu_minor_from_bus(const char *bus, char *minor, size_t len)
{
    char p[256], line[256], b[64];
    size_t n = strlen(bus);
    /* /proc uses a 4-digit PCI domain and lower case: 0000:19:00.0 */
    snprintf(b, sizeof b, "%s", n > 12 ? bus + n - 12 : bus);
    for (char *c = b; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    snprintf(p, sizeof p, "/proc/driver/nvidia/gpus/%s/information", b);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned m;
        if (sscanf(line, "Device Minor: %u", &m) == 1) {
            snprintf(minor, len, "%u", m);
            break;
        }
    }
    fclose(f);
}

/* Ask nvidia-smi for the GPU's name, compute capability and PCI address
 * (minor_number is not a --query-gpu field; the minor comes from /proc). */
static void detect_gpu(struct host *h, const char *arch_opt)
{
    char *out = NULL;
    const char *argv[] = {"nvidia-smi", "--query-gpu=index,name,compute_cap,pci.bus_id",
                          "--format=csv,noheader", "-i", h->gpu_index, NULL};
    const char *argv_old[] = {"nvidia-smi", "--query-gpu=index,name,pci.bus_id",
                              "--format=csv,noheader", "-i", h->gpu_index, NULL};
    int old = 0;
    int r = grade_exec_trusted(argv, NULL, 30, 4096, &out);
    if (r != 0 || !out || !strchr(out, ',')) {
        /* A driver too old for compute_cap: the arch comes from --arch. */
        free(out);
        out = NULL;
        old = 1;
        r = grade_exec_trusted(argv_old, NULL, 30, 4096, &out);
    }
    if (r == 0 && out && *out) {
        char *save = NULL;
        char *line = strtok_r(out, "\n", &save);
        char *idx = line ? strtok_r(line, ",", &save) : NULL;
        char *name = idx ? strtok_r(NULL, ",", &save) : NULL;
        char *cc = name && !old ? strtok_r(NULL, ",", &save) : NULL;
        char *bus = name ? strtok_r(NULL, ",", &save) : NULL;
        if (name) {
            int maj = 0, min = 0;
            snprintf(h->gpu_name, sizeof h->gpu_name, "%s", trim(name));
            if (cc && sscanf(trim(cc), "%d.%d", &maj, &min) == 2)
                snprintf(h->arch, sizeof h->arch, "sm_%d%d", maj, min);
            if (bus)
                gpu_minor_from_bus(trim(bus), h->minor, sizeof h->minor);
            if (!h->minor[0] && idx) /* usually equal to the index */
                snprintf(h->minor, sizeof h->minor, "%s", trim(idx));
            h->have_gpu = 1;
        }
    } else {
        fprintf(stderr, "cugrade-runner: nvidia-smi found no GPU %s (status %d): %.200s\n",
                h->gpu_index, r, out ? out : "");
    }
    free(out);
    if (arch_opt)
        snprintf(h->arch, sizeof h->arch, "%s", arch_opt);
    else if (!h->arch[0] && getenv("CUGRADE_ARCH"))
        snprintf(h->arch, sizeof h->arch, "%s", getenv("CUGRADE_ARCH"));
    if (!h->arch[0])
        snprintf(h->arch, sizeof h->arch, "sm_90");
    if (!h->gpu_name[0])
        snprintf(h->gpu_name, sizeof h->gpu_name, "%s", "none");
}

/* The device nodes of this GPU only: another job's GPU stays invisible.
 * Scanned again before every job: /dev/nvidia-uvm appears only once some
 * CUDA program (or nvidia-modprobe) has loaded the UVM module. */
static void host_scan_devices(struct host *h)
{
    size_t n = 0;
    const char *common[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                            "/dev/nvidia-caps", NULL};
    for (size_t i = 0; common[i] && n < 14; i++)
        if (access(common[i], F_OK) == 0) {
            snprintf(h->devbuf[n], sizeof h->devbuf[n], "%s", common[i]);
            h->devices[n] = h->devbuf[n];
            n++;
        }
    if (h->minor[0]) {
        snprintf(h->devbuf[n], sizeof h->devbuf[n], "/dev/nvidia%s", h->minor);
        if (access(h->devbuf[n], F_OK) == 0) {
            h->devices[n] = h->devbuf[n];
            n++;
        }
    }
    h->devices[n] = NULL;
}

/* Make sure the UVM nodes exist before the first sandboxed CUDA program (the
 * sandbox can only bind what is there): nvidia-modprobe creates them, as
 * libcuda would on its first use outside a sandbox. */
static void host_ensure_uvm(struct host *h, const char *lab)
{
    if (!h->have_gpu || access("/dev/nvidia-uvm", F_OK) == 0)
        return;
    const char *argv[] = {"nvidia-modprobe", "-u", "-c=0", NULL};
    int r = grade_exec_trusted(argv, NULL, 30, 0, NULL);
    if (access("/dev/nvidia-uvm", F_OK) != 0 && lab) {
        /* No nvidia-modprobe: a trusted CUDA program outside the sandbox (a
         * built lab's judge on an empty channel) makes libcuda create them. */
        char judge[PATH_MAX + 64], chan[] = "/tmp/cugrade-empty-XXXXXX";
        snprintf(judge, sizeof judge, "%s/%s/%s/judge", h->cache, h->arch, lab);
        int fd = mkstemp(chan);
        if (fd >= 0) {
            close(fd);
            const char *jargv[] = {judge, "--seed", "1", "--channel", chan, NULL};
            r = grade_exec_trusted(jargv, NULL, 60, 0, NULL);
            unlink(chan);
        }
    }
    if (access("/dev/nvidia-uvm", F_OK) != 0)
        fprintf(stderr, "cugrade-runner: warning: /dev/nvidia-uvm is missing (%d); sandboxed "
                        "CUDA programs may find no device\n", r);
    host_scan_devices(h);
}

static int host_setup(struct host *h, const char *gpu, const char *cache, const char *work,
                      const char *root, const char *arch)
{
    memset(h, 0, sizeof *h);
    find_root(h, root);
    find_launch(h);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(h->gpu_index, sizeof h->gpu_index, "%s",
             gpu ? gpu : (cvd && *cvd && !strchr(cvd, ',')) ? cvd : "0");
    const char *ch = getenv("CUDA_HOME");
    snprintf(h->cuda_home, sizeof h->cuda_home, "%s", ch && *ch ? ch : "/usr/local/cuda");
    if (cache)
        snprintf(h->cache, sizeof h->cache, "%s", cache);
    else
        snprintf(h->cache, sizeof h->cache, "%.3000s/var/runner-cache", h->root);
    if (work)
        snprintf(h->work, sizeof h->work, "%s", work);
    else
        snprintf(h->work, sizeof h->work, "/tmp/cugrade-runner-gpu%s", h->gpu_index);
    if (gethostname(h->hostname, sizeof h->hostname) < 0)
        snprintf(h->hostname, sizeof h->hostname, "runner");
    detect_gpu(h, arch);
    if (h->have_gpu) {
        host_scan_devices(h);
        host_ensure_uvm(h, NULL);
    }
    /* Every CUDA program the runner starts (judge, sandboxed runs, build
     * scripts) sees this one GPU, in nvidia-smi's order. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    setenv("CUDA_VISIBLE_DEVICES", h->gpu_index, 1);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The GPU holder. Measured on the H200 (tests/bench/sandbox_diag.sh): a
 * CUDA process that is the GPU's only user pays the driver's GPU
 * initialisation and teardown, ~270 ms for an empty kernel, ~90 ms more
 * inside the sandbox's cgroup; while another process holds a context open,
 * the same program takes ~160 ms outside and ~175 ms inside. Every graded
 * submission starts 4 to 6 CUDA processes (check, timing, memcheck,
 * racecheck, judges), so the runner keeps one trusted process holding a
 * context on its GPU for as long as it lives: `cugrade-runner gpu-hold`.
 * It runs no kernels (an idle context does not disturb timing) and holds
 * a few hundred MiB of device memory. */

/* `cugrade-runner gpu-hold`: retain the primary context of the first
 * visible device (CUDA_VISIBLE_DEVICES, set by host_setup), then block
 * until stdin reaches EOF: the runner holds the pipe's other end, so the
 * holder ends when the runner does, however it ends. The driver API comes
 * from libcuda.so.1 via dlopen: the runner links no CUDA library and runs
 * on hosts without one (then this exits 1 quietly). */
static int cmd_gpu_hold(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return 1;
    int (*cu_init)(unsigned) = NULL;
    int (*cu_device_get)(int *, int) = NULL;
    int (*cu_ctx_retain)(void **, int) = NULL;
    *(void **)&cu_init = dlsym(lib, "cuInit");
    *(void **)&cu_device_get = dlsym(lib, "cuDeviceGet");
    *(void **)&cu_ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    int dev = 0, r = -1;
    void *ctx = NULL;
    if (!cu_init || !cu_device_get || !cu_ctx_retain || (r = cu_init(0)) != 0 ||
        (r = cu_device_get(&dev, 0)) != 0 || (r = cu_ctx_retain(&ctx, dev)) != 0) {
        fprintf(stderr, "cugrade-runner: gpu-hold: CUDA error %d; the GPU is not held\n", r);
        return 1;
    }
    char buf[64];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        break;
    }
    return 0;
}

/* Start the holder (double fork: it is never our zombie, and our own
 * waitpid calls wait for specific pids only). Its stdin is a pipe whose
 * write end we keep (O_CLOEXEC: no program we exec inherits it; the
 * sandbox's reaper closes it at once). Best effort: a runner without a
 * holder is only slower. */
static void gpu_hold_start(const struct host *h)
{
    static int write_end = -1;
    const char *e = getenv("CUGRADE_GPU_HOLD");
    if (!h->have_gpu || write_end >= 0 || (e && strcmp(e, "0") == 0))
        return;
    char exe[PATH_MAX];
    int p[2];
    if (self_exe(exe, sizeof exe) < 0 || pipe2(p, O_CLOEXEC) < 0)
        return;
    pid_t a = fork();
    if (a == 0) {
        /* only async-signal-safe calls from here to exec */
        if (fork() != 0)
            _exit(0);
        if (dup2(p[0], 0) < 0)
            _exit(1);
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (devnull >= 0)
            dup2(devnull, 1);
        close_range(3, ~0U, 0); /* nothing of the runner's (sockets, the database) */
        char *const argv[] = {exe, "gpu-hold", NULL};
        execv(exe, argv);
        _exit(127);
    }
    close(p[0]);
    if (a < 0) {
        close(p[1]);
        return;
    }
    while (waitpid(a, NULL, 0) < 0 && errno == EINTR)
        ;
    write_end = p[1];
}

static void host_env(const struct host *h, struct grade_env *env)
{
    env->launch = h->launch;
    env->root = h->root;
    env->cache = h->cache;
    env->work = h->work;
    env->cuda_home = h->cuda_home;
    env->arch = h->arch;
    env->gpu_name = h->gpu_name;
    env->gpu_index = h->gpu_index;
    env->gpu_devices = h->have_gpu ? h->devices : NULL;
    env->lane_fd = -1;
}

static char *read_small_file(const char *path, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = malloc(cap + 1);
    size_t n = b ? fread(b, 1, cap, f) : 0;
    int more = fgetc(f) != EOF;
    fclose(f);
    if (!b || more) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    return b;
}

static void random_seed(char *out, size_t len)
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, b, sizeof b) != (ssize_t)sizeof b)
            memset(b, 0x5a, sizeof b);
        close(fd);
    }
    for (size_t i = 0; i < sizeof b && 2 * i + 2 < len; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* ---------------------------------------------------------------------- */
/* `cugrade-runner grade`: the pipeline on one file, no server. */

static int progress_print(void *arg, const char *phase, const char *detail)
{
    (void)arg;
    fprintf(stderr, "cugrade-runner: %s %s\n", phase, detail ? detail : "");
    return 0;
}

static int cmd_grade(int argc, char **argv)
{
    static const struct option opts[] = {
        {"lab", required_argument, 0, 'l'},   {"file", required_argument, 0, 'f'},
        {"seed", required_argument, 0, 's'},  {"rubric", required_argument, 0, 'r'},
        {"gpu", required_argument, 0, 'g'},   {"cache", required_argument, 0, 'c'},
        {"work", required_argument, 0, 'w'},  {"root", required_argument, 0, 'R'},
        {"arch", required_argument, 0, 'a'},  {"stop-after", required_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    const char *lab = NULL, *file = NULL, *seed = NULL, *rubric = NULL, *gpu = NULL;
    const char *cache = NULL, *work = NULL, *root = NULL, *arch = NULL, *stop = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l': lab = optarg; break;
        case 'f': file = optarg; break;
        case 's': seed = optarg; break;
        case 'r': rubric = optarg; break;
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'S': stop = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!lab || !file) {
        usage(stderr);
        return 2;
    }
    if (stop && strcmp(stop, "compile") && strcmp(stop, "inspect") && strcmp(stop, "link")) {
        fprintf(stderr, "cugrade-runner: --stop-after takes compile, inspect or link\n");
        return 2;
    }
    struct host h;
    struct grade_env env;
    host_setup(&h, gpu, cache, work, root, arch);
    host_env(&h, &env);
    gpu_hold_start(&h); /* initialises the GPU while nvcc compiles */
    char *src = read_small_file(file, 256u << 10);
    if (!src) {
        fprintf(stderr, "cugrade-runner: cannot read %s (or it is over 256 KiB)\n", file);
        return 2;
    }
    char rpath[PATH_MAX + 64];
    if (!rubric)
        snprintf(rpath, sizeof rpath, "%.3000s/rubrics/%s.json", h.root, lab);
    json_error_t je;
    json_t *rdoc = json_load_file(rubric ? rubric : rpath, 0, &je);
    if (!rdoc) {
        fprintf(stderr, "cugrade-runner: cannot load rubric %s: %s\n", rubric ? rubric : rpath,
                je.text);
        free(src);
        return 2;
    }
    char seedbuf[40] = "";
    if (!seed) {
        random_seed(seedbuf, sizeof seedbuf);
        seed = seedbuf;
    }
    const char *base = strrchr(file, '/');
    struct grade_job job = {
        .id = 0, .lab = lab, .filename = base ? base + 1 : file, .source = src,
        .source_len = strlen(src), .seed = seed, .rubric = rdoc, .rubric_version = 1,
        .stop_after = stop,
    };
    const char *status = NULL;
    json_t *result = NULL;
    char berr[512];
    if (h.have_gpu && access("/dev/nvidia-uvm", F_OK) != 0 &&
        grade_lab_ensure(&env, lab, berr, sizeof berr) == 0)
        host_ensure_uvm(&h, lab);
    int r = grade_job_run(&env, &job, progress_print, NULL, &status, &result);
    free(src);
    json_decref(rdoc);
    if (r < 0) {
        fprintf(stderr, "cugrade-runner: grading failed: %s\n", strerror(-r));
        return 1;
    }
    json_t *out = json_pack("{s:s, s:o}", "status", status, "result", result);
    char *txt = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
    if (txt)
        printf("%s\n", txt);
    free(txt);
    json_decref(out);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Serving: one job at a time, heartbeats while grading. */

struct heartbeat {
    struct client *cl;
    long long id;
    int attempt;                  /* the claim's "attempt": names our lease */
    int period;                   /* seconds between posts when nothing changed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char phase[32], detail[128];
    int dirty, stop, cancelled;
    pthread_t thread;
};

static void *heartbeat_main(void *p)
{
    struct heartbeat *hb = p;
    char phase[32], detail[128];
    pthread_mutex_lock(&hb->mu);
    while (!hb->stop) {
        if (!hb->dirty) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += hb->period;
            pthread_cond_timedwait(&hb->cv, &hb->mu, &ts);
            if (hb->stop)
                break;
        }
        hb->dirty = 0;
        snprintf(phase, sizeof phase, "%s", hb->phase);
        snprintf(detail, sizeof detail, "%s", hb->detail);
        pthread_mutex_unlock(&hb->mu);
        int r = client_progress(hb->cl, hb->id, hb->attempt, phase, detail, NULL);
        pthread_mutex_lock(&hb->mu);
        if (r == -ECANCELED) {
            fprintf(stderr, "cugrade-runner: job %lld: lease lost (409), abandoning\n", hb->id);
            hb->cancelled = 1;
        }
    }
    pthread_mutex_unlock(&hb->mu);
    return NULL;
}

static int progress_post(void *arg, const char *phase, const char *detail)
{
    struct heartbeat *hb = arg;
    int cancelled;
    pthread_mutex_lock(&hb->mu);
    snprintf(hb->phase, sizeof hb->phase, "%s", phase);
    snprintf(hb->detail, sizeof hb->detail, "%s", detail ? detail : "");
    hb->dirty = 1;
    cancelled = hb->cancelled;
    pthread_cond_signal(&hb->cv);
    pthread_mutex_unlock(&hb->mu);
    return cancelled ? -ECANCELED : 0;
}

/* In the child: grade the job, heartbeat, post the result. Returns an EXIT_* code. */
static int job_child(struct client *cl, struct host *hst, const struct grade_env *env,
                     const json_t *j)
{
    struct heartbeat hb;
    long long id = (long long)json_integer_value(json_object_get(j, "id"));
    int lease = (int)json_integer_value(json_object_get(j, "lease_seconds"));
    const char *src = json_string_value(json_object_get(j, "source"));
    struct grade_job job = {
        .id = id,
        .lab = json_string_value(json_object_get(j, "lab")),
        .filename = json_string_value(json_object_get(j, "filename")),
        .source = src ? src : "",
        .source_len = src ? json_string_length(json_object_get(j, "source")) : 0,
        .seed = json_string_value(json_object_get(j, "seed")),
        .rubric = json_object_get(j, "rubric"),
        .rubric_version = (int)json_integer_value(json_object_get(j, "rubric_version")),
    };
    memset(&hb, 0, sizeof hb);
    hb.cl = cl;
    hb.id = id;
    hb.attempt = (int)json_integer_value(json_object_get(j, "attempt"));
    hb.period = lease > 0 ? lease / 3 : 20;
    if (hb.period < 2)
        hb.period = 2;
    if (hb.period > 20)
        hb.period = 20;
    pthread_mutex_init(&hb.mu, NULL);
    pthread_cond_init(&hb.cv, NULL);
    snprintf(hb.phase, sizeof hb.phase, "%s", status_name(STATUS_COMPILING));
    int have_thread = pthread_create(&hb.thread, NULL, heartbeat_main, &hb) == 0;

    const char *status = NULL;
    json_t *result = NULL;
    int r;
    host_scan_devices(hst);
    if (!job.lab || !job.seed || !job.rubric) {
        status = status_name(STATUS_SYSTEM_ERROR);
        result = grade_system_error_doc(job.lab, env->gpu_name,
                                        "the claimed job lacks lab, seed or rubric");
        r = result ? 0 : -ENOMEM;
    } else {
        r = grade_job_run(env, &job, progress_post, &hb, &status, &result);
    }
    if (have_thread) {
        pthread_mutex_lock(&hb.mu);
        hb.stop = 1;
        pthread_cond_signal(&hb.cv);
        pthread_mutex_unlock(&hb.mu);
        pthread_join(hb.thread, NULL);
    }
    if (r == -ECANCELED || hb.cancelled) {
        json_decref(result);
        return EXIT_ABANDONED;
    }
    if (r < 0 || !result)
        return EXIT_UNPOSTED;
    fprintf(stderr, "cugrade-runner: job %lld: %s, score %g/%g\n", id, status,
            json_number_value(json_object_get(result, "score")),
            json_number_value(json_object_get(result, "max_score")));
    r = client_result(cl, id, hb.attempt, status, result, 600);
    json_decref(result);
    if (r == -ECANCELED)
        return EXIT_ABANDONED;
    return r == 0 ? EXIT_POSTED : EXIT_UNPOSTED;
}


/* ---------------------------------------------------------------------- */
/* Two lanes. Each claimed job is graded in a child of its own. Its CPU
 * work (compile, inspection, link) runs at once, beside the others', up to
 * `jobs` at a time (the CPU lane, sized from the host's cores); then the
 * child writes one byte on its lane pipe and waits for the GPU lane (the
 * GPU memory admission and the GPU lock, lock.h) holding nothing another
 * job needs. The runner claims a new job whenever fewer than `jobs`
 * children are in their CPU lane and fewer than `queue` are in flight: a
 * compile error is answered while the GPU lane is full. */

struct kid {
    pid_t pid;
    long long id;
    int attempt;
    int lane;          /* read end of its lane pipe, or -1 */
    int in_cpu;        /* still compiling, inspecting or linking */
    char lab[64];
};

/* How a child ended: a result posted or abandoned is the child's; anything
 * else (a crash of the grading code, a result it could not post) is a
 * system_error posted here. */
static void kid_ended(struct client *cl, const struct host *h, const struct kid *k, int status)
{
    char msg[256];
    if (WIFEXITED(status) &&
        (WEXITSTATUS(status) == EXIT_POSTED || WEXITSTATUS(status) == EXIT_ABANDONED))
        return;
    if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "the runner's grading process died (signal %d)",
                 WTERMSIG(status));
    else
        snprintf(msg, sizeof msg, "the runner's grading process failed (status %d)",
                 WEXITSTATUS(status));
    fprintf(stderr, "cugrade-runner: job %lld: %s\n", k->id, msg);
    json_t *doc = grade_system_error_doc(k->lab, h->gpu_name, msg);
    if (doc)
        client_result(cl, k->id, k->attempt, status_name(STATUS_SYSTEM_ERROR), doc, 120);
    json_decref(doc);
}

/* Reap ended children and read lane bytes, waiting at most ms for one. */
static void kids_poll(struct client *cl, const struct host *h, struct kid *kids, size_t *nk,
                      int ms)
{
    struct pollfd pf[256];
    size_t np = 0;
    for (size_t i = 0; i < *nk && np < 256; i++)
        if (kids[i].lane >= 0)
            pf[np++] = (struct pollfd){kids[i].lane, POLLIN, 0};
    if (ms > 0)
        poll(pf, np, ms);
    for (size_t i = 0; i < *nk; i++) {
        char c;
        if (kids[i].lane < 0)
            continue;
        ssize_t n = read(kids[i].lane, &c, 1);
        if (n == 1)
            kids[i].in_cpu = 0;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            close(kids[i].lane);
            kids[i].lane = -1;
        }
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (size_t i = 0; i < *nk; i++)
            if (kids[i].pid == pid) {
                kid_ended(cl, h, &kids[i], status);
                if (kids[i].lane >= 0)
                    close(kids[i].lane);
                kids[i] = kids[--*nk];
                break;
            }
}

/* Start a child grading job (a claim). Returns 0, or -errno (then a
 * system_error was posted for it). */
static int kid_start(struct client *cl, const struct host *h, const struct grade_env *env,
                     json_t *job, struct kid *kids, size_t *nk)
{
    struct kid *k = &kids[*nk];
    int p[2];
    memset(k, 0, sizeof *k);
    k->id = (long long)json_integer_value(json_object_get(job, "id"));
    k->attempt = (int)json_integer_value(json_object_get(job, "attempt"));
    const char *lab = json_string_value(json_object_get(job, "lab"));
    snprintf(k->lab, sizeof k->lab, "%s", lab ? lab : "");
    fprintf(stderr, "cugrade-runner: job %lld: lab %s, attempt %d\n", k->id, k->lab, k->attempt);
    fflush(stderr);
    if (pipe2(p, O_CLOEXEC) < 0)
        p[0] = p[1] = -1;
    else
        fcntl(p[0], F_SETFL, O_NONBLOCK);
    pid_t pid = fork();
    if (pid == 0) {
        struct grade_env e = *env;
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_IGN); /* a Ctrl-C lets the jobs in flight finish */
        for (size_t i = 0; i < *nk; i++)
            if (kids[i].lane >= 0)
                close(kids[i].lane);
        if (p[0] >= 0)
            close(p[0]);
        e.lane_fd = p[1];
        _exit(job_child(cl, (struct host *)h, &e, job));
    }
    if (p[1] >= 0)
        close(p[1]);
    if (pid < 0) {
        int e = errno;
        if (p[0] >= 0)
            close(p[0]);
        char msg[256];
        snprintf(msg, sizeof msg, "the runner could not fork: %s", strerror(e));
        fprintf(stderr, "cugrade-runner: job %lld: %s\n", k->id, msg);
        json_t *doc = grade_system_error_doc(k->lab, h->gpu_name, msg);
        if (doc)
            client_result(cl, k->id, k->attempt, status_name(STATUS_SYSTEM_ERROR), doc, 120);
        json_decref(doc);
        return -e;
    }
    k->pid = pid;
    k->lane = p[0];
    k->in_cpu = 1;
    (*nk)++;
    return 0;
}

/* Claim and grade until SIGTERM (or one job with once), then let the jobs
 * in flight finish. */
static void serve_loop(struct client *cl, struct host *h, const struct grade_env *env, int once,
                       int jobs, int queue)
{
    struct kid *kids = calloc((size_t)queue, sizeof *kids);
    size_t nk = 0;
    int attempt = 0, claimed = 0;
    assert(jobs >= 1 && queue >= jobs && queue <= 256);
    if (!kids)
        return;
    for (;;) {
        kids_poll(cl, h, kids, &nk, 0);
        size_t in_cpu = 0;
        for (size_t i = 0; i < nk; i++)
            in_cpu += kids[i].in_cpu;
        if (stopping || (once && claimed)) {
            if (nk == 0)
                break;
            kids_poll(cl, h, kids, &nk, 200);
            continue;
        }
        if (in_cpu >= (size_t)jobs || nk >= (size_t)queue) {
            kids_poll(cl, h, kids, &nk, 200);
            continue;
        }
        json_t *job = NULL;
        /* Long poll only when idle: children must be reaped in time. */
        int r = client_claim(cl, nk ? 1 : 20, &job);
        if (r < 0) {
            /* Server down, restarting, or refusing us: never die, back off. */
            client_backoff(attempt < 8 ? attempt++ : attempt);
            continue;
        }
        attempt = 0;
        if (!job)
            continue;
        kid_start(cl, h, env, job, kids, &nk);
        claimed++;
        json_decref(job);
    }
    free(kids);
}

/* The CPU lane's default size: the host's cores shared by its GPUs' runners
 * (CUGRADE_RUNNERS_PER_HOST, default 1), at least 1. */
static int default_jobs(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *per = getenv("CUGRADE_RUNNERS_PER_HOST");
    long n = per && atoi(per) > 0 ? atoi(per) : 1;
    long j = (cores > 0 ? cores : 1) / n;
    return j < 1 ? 1 : j > 64 ? 64 : (int)j;
}

/* Build every lab once at start, so the first student does not wait for it. */
static void build_labs(struct host *h, const struct grade_env *env)
{
    char dir[PATH_MAX + 16], err[512];
    struct lab *labs = NULL;
    snprintf(dir, sizeof dir, "%s/labs", env->root);
    int n = lab_load_all(dir, &labs, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "cugrade-runner: cannot load labs from %s: %s\n", dir, err);
        return;
    }
    /* Builds are independent nvcc runs: one child per lab, in parallel. */
    pid_t *kids = calloc((size_t)n + 1, sizeof *kids);
    for (int i = 0; i < n; i++) {
        pid_t pid = kids ? fork() : -1;
        if (pid == 0)
            _exit(grade_lab_ensure(env, labs[i].name, err, sizeof err) < 0
                      ? (fprintf(stderr, "cugrade-runner: lab %s not built: %s\n",
                                 labs[i].name, err),
                         1)
                      : 0);
        if (pid < 0 && grade_lab_ensure(env, labs[i].name, err, sizeof err) < 0)
            fprintf(stderr, "cugrade-runner: lab %s not built: %s\n", labs[i].name, err);
        if (kids)
            kids[i] = pid;
    }
    for (int i = 0; kids && i < n; i++)
        if (kids[i] > 0)
            while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
                ;
    free(kids);
    if (n > 0)
        host_ensure_uvm(h, labs[0].name);
    /* Then the device record and baselines, one lab at a time (timed). */
    for (int i = 0; i < n; i++)
        if (grade_lab_ensure(env, labs[i].name, err, sizeof err) == 0)
            grade_lab_warm(env, labs[i].name);
    lab_free_all(labs, (size_t)n);
}

static int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"server", required_argument, 0, 's'}, {"token-file", required_argument, 0, 't'},
        {"gpu", required_argument, 0, 'g'},    {"cache", required_argument, 0, 'c'},
        {"work", required_argument, 0, 'w'},   {"root", required_argument, 0, 'R'},
        {"arch", required_argument, 0, 'a'},   {"once", no_argument, 0, 'o'},
        {"lazy-build", no_argument, 0, 'L'},   {"name", required_argument, 0, 'n'},
        {"jobs", required_argument, 0, 'j'},   {"queue", required_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *server = NULL, *token_file = NULL, *gpu = NULL, *cache = NULL, *work = NULL;
    const char *root = NULL, *arch = NULL, *rname = NULL;
    int once = 0, lazy = 0, c, jobs = default_jobs(), queue = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': server = optarg; break;
        case 't': token_file = optarg; break;
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'o': once = 1; break;
        case 'L': lazy = 1; break;
        case 'j': jobs = atoi(optarg); break;
        case 'q': queue = atoi(optarg); break;
        case 'n': rname = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    /* Claim far ahead: a compile error or a rejection is answered as soon
     * as the CPU lane reaches it, whatever the GPU lane holds. On a cluster
     * of many GPU hosts a smaller --queue shares a burst between them. */
    if (queue <= 0)
        queue = 256;
    if (queue > 256)
        queue = 256;
    if (!server || !token_file || jobs < 1 || jobs > queue) {
        usage(stderr);
        return 2;
    }
    char *token = read_small_file(token_file, 4096);
    if (!token) {
        fprintf(stderr, "cugrade-runner: cannot read the token file %s\n", token_file);
        return 2;
    }
    char *t = token;
    while (*t == ' ' || *t == '\n')
        t++;
    t[strcspn(t, " \r\n\t")] = '\0';

    struct host h;
    struct grade_env env;
    struct client cl;
    char name[256];
    host_setup(&h, gpu, cache, work, root, arch);
    host_env(&h, &env);
    gpu_hold_start(&h);
    if (rname)
        snprintf(name, sizeof name, "%s", rname);
    else
        snprintf(name, sizeof name, "%s-gpu%s", h.hostname, h.gpu_index);
    if (client_global_init() < 0 || client_init(&cl, server, t, name, h.gpu_name) < 0) {
        free(token);
        return 1;
    }
    free(token);
    fprintf(stderr, "cugrade-runner: %s: GPU %s (%s), root %s, cache %s\n", name, h.gpu_name,
            h.arch, h.root, h.cache);
    if (!h.have_gpu)
        fprintf(stderr, "cugrade-runner: warning: no GPU found with nvidia-smi; jobs will "
                        "fail as system_error after compiling\n");
    if (!lazy)
        build_labs(&h, &env);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());

    serve_loop(&cl, &h, &env, once, jobs, queue);
    client_free(&cl);
    return 0;
}

/* `cugrade-runner prepare`: build every lab and measure the device record
 * and the baselines, then exit (a deploy step, or before several runners
 * share a GPU so that they do not all measure the same baselines). */
static int cmd_prepare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"gpu", required_argument, 0, 'g'},  {"cache", required_argument, 0, 'c'},
        {"work", required_argument, 0, 'w'}, {"root", required_argument, 0, 'R'},
        {"arch", required_argument, 0, 'a'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *gpu = NULL, *cache = NULL, *work = NULL, *root = NULL, *arch = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    struct host h;
    struct grade_env env;
    host_setup(&h, gpu, cache, work, root, arch);
    host_env(&h, &env);
    gpu_hold_start(&h);
    fprintf(stderr, "cugrade-runner: preparing labs for GPU %s (%s) in %s\n", h.gpu_name, h.arch,
            h.cache);
    build_labs(&h, &env);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "grade") == 0)
        return cmd_grade(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "prepare") == 0)
        return cmd_prepare(argc - 1, argv + 1);
    if (argc == 2 && strcmp(argv[1], "gpu-hold") == 0)
        return cmd_gpu_hold();
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    return cmd_serve(argc, argv);
}

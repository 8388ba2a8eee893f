/*
 * host.c - the host a runner grades on (see host.h): tree, GPU, device
 * nodes, the GPU holder, the labs built at start.
 */
#include "runner/service/host.h"
#include "runner/config.h"
#include "runner/run/run.h"
#include "lab.h"
#include "runner/grade/labcache.h"
#include "runner/grade/python.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int dir_has(const char *dir, const char *name)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* This binary's path (NUL-terminated) into exe; 0, or -1. */
static void find_root(struct host *h, const char *opt)
{
    char exe[PATH_MAX];
    const char *env = runner_cfg()->root;
    if (opt) {
        snprintf(h->root, sizeof h->root, "%s", opt);
        return;
    }
    if (*env && dir_has(env, "labs")) {
        snprintf(h->root, sizeof h->root, "%s", env);
        return;
    }
    if (getcwd(h->root, sizeof h->root) && dir_has(h->root, "labs"))
        return;
    if (run_self_exe(exe, sizeof exe) == 0) {
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
 * shipped beside cugrade-runner (make, make dist), and found only there. */
static void find_launch(struct host *h)
{
    char exe[PATH_MAX];
    h->launch[0] = '\0';
    if (run_self_exe(exe, sizeof exe) < 0)
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
    if (!h->arch[0])
        snprintf(h->arch, sizeof h->arch, "sm_90");
    if (!h->gpu_name[0])
        snprintf(h->gpu_name, sizeof h->gpu_name, "%s", "none");
}

/* The device nodes of this GPU only: another job's GPU stays invisible.
 * Scanned again before every job: /dev/nvidia-uvm appears only once some
 * CUDA program (or nvidia-modprobe) has loaded the UVM module. */
void host_scan_devices(struct host *h)
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
void host_ensure_uvm(struct host *h, const char *lab)
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

/* 1 when v is an architecture nvcc takes: sm_NN, a letter may follow
 * (sm_90a). */
static int arch_ok(const char *v)
{
    if (strncmp(v, "sm_", 3) != 0 || !isdigit((unsigned char)v[3]))
        return 0;
    const char *p = v + 3;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '\0' || (islower((unsigned char)*p) && p[1] == '\0');
}

int host_setup(struct host *h, const char *gpu, const char *cache, const char *work,
               const char *root, const char *arch)
{
    memset(h, 0, sizeof *h);
    if (arch && !arch_ok(arch)) {
        fprintf(stderr, "cugrade-runner: --arch %.100s: expected sm_NN (sm_90, sm_90a)\n", arch);
        return -EINVAL;
    }
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
int host_gpu_hold_main(void)
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
void host_gpu_hold_start(const struct host *h)
{
    static int write_end = -1;
    if (!h->have_gpu || write_end >= 0 || runner_cfg()->no_gpu)
        return;
    char exe[PATH_MAX];
    int p[2];
    if (run_self_exe(exe, sizeof exe) < 0 || pipe2(p, O_CLOEXEC) < 0)
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

void host_grade_env(const struct host *h, struct grade_env *env)
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
    env->grant_fd = -1;
}


/* Build every lab once at start, so the first student does not wait for it. */
void host_build_labs(struct host *h, const struct grade_env *env, int serving)
{
    char dir[PATH_MAX + 16], err[512];
    struct lab *labs = NULL;
    snprintf(dir, sizeof dir, "%s/labs", env->root);
    int n = lab_load_all(dir, &labs, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "cugrade-runner: cannot load labs from %s: %s\n", dir, err);
        return;
    }
    /* The Python root's bytecode beside the builds (python.h): prepare's
     * warm runs import from it; a serving runner's runs from when it ends. */
    python_bytecode_start();
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
    if (!serving)
        python_bytecode_wait(); /* a serving runner's loop reaps it (python.h) */
    if (n > 0)
        host_ensure_uvm(h, labs[0].name);
    /* Then the device record and baselines, one lab at a time (timed). */
    for (int i = 0; i < n; i++)
        if (grade_lab_ensure(env, labs[i].name, err, sizeof err) == 0)
            grade_lab_warm(env, labs[i].name);
    lab_free_all(labs, (size_t)n);
}

void host_refresh_baselines(const struct grade_env *env)
{
    char dir[PATH_MAX + 16], err[512];
    struct lab *labs = NULL;
    snprintf(dir, sizeof dir, "%s/labs", env->root);
    int n = lab_load_all(dir, &labs, err, sizeof err);
    for (int i = 0; i < n; i++)
        if (labcache_built(env, labs[i].name))
            grade_lab_refresh(env, labs[i].name);
    if (n > 0)
        lab_free_all(labs, (size_t)n);
}

/*
 * hostile.c - the student programs of the hostile suite, one binary with a
 * subcommand per attack (compiled by the test, outside the sandbox).
 * Each prints what it managed to do; the .t script asserts on the verdict
 * and on that output, and checks the host afterwards.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void forkbomb(void)
{
    for (;;)
        fork();
}

/* Fork up to n children that wait: how many did the pids limit let in? */
static void forkcount(int n)
{
    int got = 0, err = 0;
    while (got < n) {
        pid_t c = fork();
        if (c < 0) {
            err = errno;
            break;
        }
        if (c == 0) {
            pause();
            _exit(0);
        }
        got++;
    }
    printf("forked %d (%s)\n", got, err ? strerror(err) : "no error");
}

static void spin(void)
{
    for (volatile unsigned long i = 0;; i++)
        ;
}

/* Leave children behind: a plain child, a setsid()'d double-forked
 * daemon, and one that ignores the polite signals. */
static void orphans(int wait_too)
{
    if (fork() == 0) {
        pause();
        _exit(0);
    }
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            signal(SIGTERM, SIG_IGN);
            signal(SIGHUP, SIG_IGN);
            for (;;)
                pause();
        }
        _exit(0);
    }
    printf("orphans started\n");
    fflush(stdout);
    if (wait_too)
        for (;;)
            pause();
    _exit(0);
}

static void membomb(void)
{
    size_t total = 0;
    for (;;) {
        char *p = malloc(16 << 20);
        if (!p) {
            printf("malloc failed at %zu MiB\n", total >> 20);
            return;
        }
        memset(p, 1, 16 << 20);
        total += 16 << 20;
    }
}

/* n bytes (0: forever) of lines on stdout, or on stdout and stderr in turn */
static void flood(long long n, int both)
{
    static char line[4096];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (long long w = 0; n == 0 || w < n; w += (long long)sizeof line)
        if (write(both && (w / (long long)sizeof line) % 2 ? 2 : 1, line, sizeof line) < 0)
            return;
}

static void fill(const char *dir, int one_file)
{
    static char buf[1 << 20];
    memset(buf, 'z', sizeof buf);
    long long total = 0;
    char p[256];
    for (int i = 0;; i++) {
        snprintf(p, sizeof p, "%s/fill-%d", dir, one_file ? 0 : i);
        int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0) {
            printf("open stopped: %s after %lld bytes\n", strerror(errno), total);
            return;
        }
        ssize_t w = write(fd, buf, sizeof buf);
        close(fd);
        if (w < (ssize_t)sizeof buf) {
            printf("write stopped: %s after %lld bytes\n", w < 0 ? strerror(errno) : "short", total);
            return;
        }
        total += w;
    }
}

static void escape(char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        int fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            printf("%s: %s\n", paths[i], strerror(errno));
            continue;
        }
        ssize_t w = write(fd, "escaped\n", 8);
        (void)w;
        close(fd);
        printf("%s: WROTE\n", paths[i]);
    }
}

static void plant(const char *canary)
{
    /* Clean-up attack: links to a host directory, for a remover that
     * follows links (rm -rf through "victim" would empty the canary). */
    if (canary) {
        printf("victim: %d\n", symlink(canary, "/work/victim"));
        mkdir("/work/deep", 0755);
        printf("deep victim: %d\n", symlink(canary, "/work/deep/victim"));
    }
    printf("symlink: %d\n", symlink("/etc/passwd", "/work/out.txt"));
    printf("symlink2: %d\n", symlink("../../../../etc/passwd", "/work/rel.txt"));
    printf("mkfifo: %d\n", mkfifo("/work/fifo", 0644));
    mkdir("/work/d", 0755);
    printf("dirlink: %d\n", symlink("/etc", "/work/d/etc"));
    int r = link("/usr/bin/env", "/work/hard");
    printf("hardlink: %s\n", r == 0 ? "made" : strerror(errno));
}

static void readfiles(char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        int fd = open(paths[i], O_RDONLY);
        if (fd < 0) {
            printf("%s: %s\n", paths[i], strerror(errno));
            continue;
        }
        char buf[4096];
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        printf("%s: read %zd bytes: ", paths[i], r);
        for (ssize_t k = 0; k < r; k++)
            putchar(buf[k] ? buf[k] : ' ');
        putchar('\n');
    }
}

static void list(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        printf("%s: %s\n", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            printf("%s\n", e->d_name);
    closedir(d);
}

static int do_connect(const char *ip, int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) {
        printf("socket: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        printf("connect %s:%d: CONNECTED\n", ip, port);
        return 0;
    }
    printf("connect %s:%d: %s\n", ip, port, strerror(errno));
    return 1;
}

/* Host side: accept connections on 127.0.0.1, port written to a file. */
static void do_listen(const char *portfile)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t l = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &l) < 0) {
        perror("listen");
        exit(1);
    }
    FILE *f = fopen(portfile, "w");
    fprintf(f, "%d\n", ntohs(a.sin_port));
    fclose(f);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c >= 0)
            close(c);
    }
}

static void do_ptrace(void)
{
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        long r = ptrace(PTRACE_ATTACH, parent, 0, 0);
        printf("ptrace attach parent: %s\n", r == 0 ? "ATTACHED" : strerror(errno));
        r = ptrace(PTRACE_SEIZE, parent, 0, 0);
        printf("ptrace seize parent: %s\n", r == 0 ? "ATTACHED" : strerror(errno));
        r = ptrace(PTRACE_ATTACH, 1, 0, 0);
        printf("ptrace attach pid 1: %s\n", r == 0 ? "ATTACHED" : strerror(errno));
        char buf[16];
        struct iovec l = {buf, sizeof buf}, rem = {(void *)&parent, sizeof buf};
        ssize_t n = process_vm_readv(parent, &l, 1, &rem, 1, 0);
        printf("process_vm_readv: %s\n", n >= 0 ? "READ" : strerror(errno));
        fflush(stdout);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
    printf("ptrace traceme: %s\n", r == 0 ? "TRACED" : strerror(errno));
}

static void fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int me = dirfd(d);
    struct dirent *e;
    printf("fds:");
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != me)
            printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
    if (fcntl(3, F_GETFD) >= 0) {
        ssize_t w = write(3, "RESULT-OK\n", 10);
        printf("fd3 write: %zd\n", w);
    }
}

static void env(void)
{
    extern char **environ;
    for (char **e = environ; *e; e++)
        printf("%s\n", *e);
}

static void report(const char *name, long r)
{
    printf("%s: %s\n", name, r >= 0 ? "ALLOWED" : strerror(errno));
}

static void syscalls(void)
{
    report("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    report("add_key", syscall(SYS_add_key, "user", "k", "v", 1, -3));
    report("bpf", syscall(SYS_bpf, 0, NULL, 0));
    struct perf_event_attr pa = {.size = sizeof pa, .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK};
    report("perf_event_open", syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
    struct io_uring_params up;
    memset(&up, 0, sizeof up);
    report("io_uring_setup", syscall(SYS_io_uring_setup, 4, &up));
    report("userfaultfd", syscall(SYS_userfaultfd, 0));
    report("unshare_user", unshare(CLONE_NEWUSER));
    report("unshare_ns", unshare(CLONE_NEWNS));
    report("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0) == 0 ? (_exit(0), 0) : -1);
    report("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
    report("umount", umount2("/proc", MNT_DETACH));
    report("chroot", chroot("/tmp"));
    report("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
    report("setns", syscall(SYS_setns, 0, 0));
    report("personality_aslr_off", personality(ADDR_NO_RANDOMIZE) >= 0 && (personality(0xffffffff) & ADDR_NO_RANDOMIZE) ? 0 : -1);
    /* bit 31 is no flag: the old rule only matched with it clear */
    report("personality_aslr_off_bit31", personality(0x80000000 | ADDR_NO_RANDOMIZE) >= 0 &&
                                                 (personality(0xffffffff) & ADDR_NO_RANDOMIZE) ? 0 : -1);
    report("personality_read_implies_exec_bit31", personality(0x80000000 | READ_IMPLIES_EXEC) >= 0 &&
                                                          (personality(0xffffffff) & READ_IMPLIES_EXEC) ? 0 : -1);
    report("personality_page_zero", personality(MMAP_PAGE_ZERO) >= 0 && (personality(0xffffffff) & MMAP_PAGE_ZERO) ? 0 : -1);
    report("personality_linux32", personality(PER_LINUX32) >= 0 && personality(0xffffffff) == PER_LINUX32 ? 0 : -1);
    report("personality_top_bit", personality(0x80000000) >= 0 && personality(0xffffffff) != 0 ? 0 : -1);
    report("personality_high_bits", syscall(SYS_personality, 0xffffffff00000000UL | ADDR_NO_RANDOMIZE) >= 0 &&
                                            (personality(0xffffffff) & ADDR_NO_RANDOMIZE) ? 0 : -1);
    report("personality_query", personality(0xffffffff));
    report("personality_linux", personality(PER_LINUX));
    report("socket_vsock", socket(AF_VSOCK, SOCK_STREAM, 0));
    report("socket_packet", socket(AF_PACKET, SOCK_RAW, 0));
    report("socket_alg", socket(AF_ALG, SOCK_SEQPACKET, 0));
    report("socket_unix", socket(AF_UNIX, SOCK_STREAM, 0));
    report("init_module", syscall(SYS_init_module, NULL, 0, ""));
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
}

static void status(void)
{
    char *files[] = {"/proc/self/status", "/proc/self/uid_map", "/proc/sys/kernel/hostname"};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            if (i > 0 || strncmp(line, "Cap", 3) == 0 || strncmp(line, "NoNewPrivs", 10) == 0 ||
                strncmp(line, "Seccomp:", 8) == 0 || strncmp(line, "Uid", 3) == 0)
                printf("%s%s", i == 1 ? "uid_map: " : i == 2 ? "hostname: " : "", line);
        if (f)
            fclose(f);
    }
    printf("sid==pid: %d\n", getsid(0) == getpid());
    printf("pid: %d\n", getpid());
}

/* Take up to n inotify instances (a per-user kernel limit). With "hold":
 * say how many on fd 3, then keep them until the test creates /work/stop. */
static void inotify_take(int n, int hold)
{
    int got = 0, err = 0;
    while (got < n) {
        if (inotify_init1(IN_CLOEXEC) < 0) {
            err = errno;
            break;
        }
        got++;
    }
    if (hold) {
        dprintf(3, "HELD %d %s\n", got, err ? strerror(err) : "-");
        for (int i = 0; i < 600 && access("/work/stop", F_OK) != 0; i++)
            usleep(50000);
    }
    printf("inotify: got %d (%s)\n", got, err ? strerror(err) : "no error");
}

/* access(): the permission check alone, nothing is opened. A read of
 * /sys/class/zram-control/hot_add creates a zram device; a write to
 * /proc/sysrq-trigger or /proc/sys/kernel/core_pattern acts on the host:
 * the suite must not do them even if the sandbox were broken. */
static void access_check(int mode, char **paths, int n)
{
    for (int i = 0; i < n; i++)
        printf("%s: %s\n", paths[i],
               access(paths[i], mode) == 0 ? (mode == W_OK ? "WRITABLE" : "READABLE") : strerror(errno));
}

static void i386_call(void)
{
    /* getpid through the 32-bit entry point: a different syscall table */
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
    printf("int80 getpid returned %ld: NOT KILLED\n", r);
}

static void x32_call(void)
{
    long r = syscall(0x40000000 | 39 /* x32 getpid */);
    printf("x32 getpid returned %ld (%s): NOT KILLED\n", r, r < 0 ? strerror(errno) : "ok");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "forkbomb")) forkbomb();
    else if (!strcmp(c, "forkcount")) forkcount(atoi(argv[2]));
    else if (!strcmp(c, "spin")) spin();
    else if (!strcmp(c, "orphans")) orphans(argc > 2);
    else if (!strcmp(c, "membomb")) membomb();
    else if (!strcmp(c, "flood")) flood(argc > 2 ? atoll(argv[2]) : 0, argc > 3 && !strcmp(argv[3], "both"));
    else if (!strcmp(c, "diskfill")) fill(argc > 2 ? argv[2] : "/work", 0);
    else if (!strcmp(c, "bigfile")) fill("/work", 1);
    else if (!strcmp(c, "escape")) escape(argv + 2, argc - 2);
    else if (!strcmp(c, "plant")) plant(argc > 2 ? argv[2] : NULL);
    else if (!strcmp(c, "read")) readfiles(argv + 2, argc - 2);
    else if (!strcmp(c, "ls")) list(argc > 2 ? argv[2] : "/");
    else if (!strcmp(c, "connect")) return do_connect(argv[2], atoi(argv[3]));
    else if (!strcmp(c, "listen")) do_listen(argv[2]);
    else if (!strcmp(c, "ptrace")) do_ptrace();
    else if (!strcmp(c, "fds")) fds();
    else if (!strcmp(c, "env")) env();
    else if (!strcmp(c, "syscalls")) syscalls();
    else if (!strcmp(c, "status")) status();
    else if (!strcmp(c, "inotify")) inotify_take(atoi(argv[2]), argc > 3 && !strcmp(argv[3], "hold"));
    else if (!strcmp(c, "access")) access_check(R_OK, argv + 2, argc - 2);
    else if (!strcmp(c, "waccess")) access_check(W_OK, argv + 2, argc - 2);
    else if (!strcmp(c, "i386")) i386_call();
    else if (!strcmp(c, "x32")) x32_call();
    else if (!strcmp(c, "exit")) return atoi(argv[2]);
    else {
        fprintf(stderr, "hostile: unknown %s\n", c);
        return 2;
    }
    return 0;
}

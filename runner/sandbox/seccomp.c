/*
 * seccomp.c - build the deny-list (see seccomp.h).
 *
 * Denied calls fail with EPERM (a program that probes for them keeps
 * running and the student sees an ordinary error), except clone3, which
 * fails with ENOSYS so that glibc falls back to clone(2), whose flags we can
 * inspect. Calls from a foreign architecture (i386 int $0x80, x32) kill the
 * process: they would bypass every per-syscall rule below.
 */
#include "runner/sandbox/seccomp.h"

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* Calls that only attack: other processes, the kernel, or the sandbox's
 * own walls. Each is named with what it would be used for. */
static const char *const seccomp_denied[] = {
    /* reading or steering another process (the harness that shares our
     * pid namespace, or bwrap's init) */
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    /* the kernel keyring: per-user state shared with the host user */
    "keyctl", "add_key", "request_key",
    /* large kernel attack surfaces with a history of privilege escalations */
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    /* rearranging the filesystem view or leaving the namespaces */
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    /* the machine itself */
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "syslog", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "iopl", "ioperm", "uselib",
    "lookup_dcookie", "fanotify_init", "vhangup", "_sysctl", "nfsservctl",
};

/* socket()/socketpair() domains a graded program may use. The network
 * namespace is empty (only a down loopback), so INET/INET6 reach nothing;
 * NETLINK is kept because glibc's getaddrinfo asks it for addresses and it
 * only sees the empty namespace. Everything else (AF_VSOCK to the
 * hypervisor, AF_ALG, AF_PACKET, AF_BLUETOOTH, ...) is rare kernel code
 * with a history of bugs, and is denied. */
static int seccomp_socket_rules(scmp_filter_ctx ctx, int nr)
{
    int rc;
    for (int d = 0; d < 17; d++) {
        if (d == AF_UNIX || d == AF_INET || d == AF_INET6 || d == AF_NETLINK)
            continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)d));
        if (rc < 0)
            return rc;
    }
    /* 64-bit compare: a domain with garbage in the upper half is >= 17 too. */
    return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, SCMP_A0(SCMP_CMP_GE, 17));
}

static int seccomp_build(scmp_filter_ctx ctx)
{
    int rc;
    /* i386 (int $0x80) and x32 system calls are numbered differently and
     * would walk past the rules below: kill instead. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0)
        return rc;
    for (size_t i = 0; i < sizeof seccomp_denied / sizeof seccomp_denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(seccomp_denied[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not on this architecture (e.g. _sysctl, nfsservctl) */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc < 0)
            return rc;
    }
    /* New namespaces, in particular a user namespace, would give the
     * program capabilities over a fresh set of kernel objects (the classic
     * path to kernel bugs). clone3 passes its flags in memory, where BPF
     * cannot look: ENOSYS makes glibc retry with clone, checked here. */
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
        return rc;
    static const unsigned long ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x00000080 /* CLONE_NEWTIME */,
    };
    for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
        if (rc < 0)
            return rc;
    }
    /* personality: only the query personality(0xffffffff) and PER_LINUX (0,
     * what every process already has) pass. Anything else could turn off
     * ASLR (ADDR_NO_RANDOMIZE), W^X (READ_IMPLIES_EXEC), map page zero
     * (MMAP_PAGE_ZERO, NULL-dereference exploits) or change the layout.
     * The kernel reads the low 32 bits. libseccomp allows one comparison
     * per argument and no ALLOW rule under a default of ALLOW, so "neither
     * 0 nor 0xffffffff" is written bit by bit: with bit 31 clear, any other
     * bit set is denied; with bit 31 set, any other bit clear is denied.
     * (The old rules, "this flag set and bit 31 clear", let
     * 0x80000000 | ADDR_NO_RANDOMIZE through: bit 31 is no flag at all.) */
    for (unsigned i = 0; i < 31; i++) {
        const scmp_datum_t bit = 1UL << i, top = 0x80000000UL;
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                   SCMP_A0_32(SCMP_CMP_MASKED_EQ, top | bit, bit))) < 0 ||
            (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                   SCMP_A0_32(SCMP_CMP_MASKED_EQ, top | bit, top))) < 0)
            return rc;
    }
    if ((rc = seccomp_socket_rules(ctx, SCMP_SYS(socket))) < 0 ||
        (rc = seccomp_socket_rules(ctx, SCMP_SYS(socketpair))) < 0)
        return rc;
    /* Faking keyboard input into a terminal the sandbox shares with a
     * shell (TIOCSTI; TIOCLINUX on a VT). The run's own session (the
     * reaper's setsid, bwrap.c) has no controlling terminal; this is the
     * second wall. */
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                               SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCSTI))) < 0 ||
        (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                               SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCLINUX))) < 0)
        return rc;
    return 0;
}

int seccomp_filter_export(void)
{
    int fd = -1, rc;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    if ((rc = seccomp_build(ctx)) < 0)
        goto fail;
    fd = memfd_create("cugrade-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
        goto fail;
    if (lseek(fd, 0, SEEK_SET) < 0) {
        rc = -errno;
        goto fail;
    }
    seccomp_release(ctx);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    seccomp_release(ctx);
    return rc;
}

/*
 * seccomp.h - the sandbox's system-call deny-list, built with libseccomp and
 * exported as classic BPF for bubblewrap's --seccomp FD.
 *
 * A deny-list (default allow) rather than an allow-list: nvcc, gcc, cicc,
 * ptxas and the CUDA driver together use a large, version-dependent set of
 * calls (ioctl on the nvidia nodes, mmap of device memory, clone, futex,
 * eventfd...); an allow-list would break with the next driver. What is
 * denied is what a graded program never needs and what attacks the kernel
 * or other processes (see seccomp.c for the attack each rule names).
 */
#ifndef CUGRADE_SECCOMP_H
#define CUGRADE_SECCOMP_H

/* Build the filter and write its BPF program into a new memfd (O_CLOEXEC,
 * offset 0). Returns the fd (caller closes) or -errno. */
int seccomp_filter_export(void);

#endif

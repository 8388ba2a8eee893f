/*
 * box.h - boxes: the host uid/gid each concurrent sandbox runs as (the
 * sandbox's own; the interface callers use is sandbox_boxes_configure and
 * the SANDBOX_BOX* defaults in sandbox.h). A box is taken through a lock
 * file for a run, or held by a work directory from sandbox_workdir_create
 * until sandbox_workdir_remove. Thread-safe.
 */
#ifndef CUGRADE_BOX_H
#define CUGRADE_BOX_H

#include "runner/sandbox/sandbox.h"

#include <sys/stat.h>
#include <sys/types.h>

/* Take a free box. Returns the lock's fd (O_CLOEXEC; closing it frees the
 * box) and *uid, or -EBUSY when every box is taken, or -errno. */
int box_take(unsigned *uid);

/* The box a work directory made by sandbox_workdir_create holds (found by
 * the identity of path, however spelled), or 0. */
unsigned box_of_workdir(const char *path);

/* Record that the directory st holds the box uid through the lock fd
 * (from box_take); box_release closes fd. Returns 0 or -ENOMEM (then fd
 * is still the caller's). */
int box_hold(const struct stat *st, unsigned uid, int fd);

/* Let the box of the directory (dev, ino) go: close its lock (nothing
 * when it holds none). */
void box_release(dev_t dev, ino_t ino);

#endif

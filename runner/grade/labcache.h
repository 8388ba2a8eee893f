/*
 * labcache.h - the lab cache, CACHE/ARCH/LAB/ (labs/build-lab.sh's
 * harness.o, judge, baselines; cached baselines and limits beside them),
 * and the copy of cugrade-launch every sandbox can reach. The public
 * entry points (grade_lab_ensure, grade_lab_warm) are declared in grade.h.
 */
#ifndef CUGRADE_LABCACHE_H
#define CUGRADE_LABCACHE_H

#include "runner/grade/grade.h"

#include <stddef.h>

/* 1 when lab was built for env->arch (its stamp is there), else 0. */
int labcache_built(const struct grade_env *env, const char *lab);
/* Copy cugrade-launch to CACHE/cugrade-launch when the runner's copy
 * differs, its path into out. Returns 0 or -errno with a sentence in err. */
int labcache_launch_ensure(const struct grade_env *env, char *out, size_t len, char *err,
                           size_t errlen);

#endif

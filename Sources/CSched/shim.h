#ifndef GATE_CSCHED_SHIM_H
#define GATE_CSCHED_SHIM_H

/* CPU affinity, for OSThread.detach(elsewhere:). glibc declares these only
 * under _GNU_SOURCE, which Swift's Glibc module is not built with, so the few
 * prototypes are written out here (the signatures of glibc 2.36's <sched.h>
 * and <pthread.h>); cpu_set_t itself is always declared. */

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

extern int sched_getcpu(void);
extern int sched_getaffinity(pid_t pid, size_t cpusetsize, cpu_set_t *cpuset);
extern int sched_setaffinity(pid_t pid, size_t cpusetsize, const cpu_set_t *cpuset);
extern int pthread_attr_setaffinity_np(pthread_attr_t *attr, size_t cpusetsize, const cpu_set_t *cpuset);

#endif

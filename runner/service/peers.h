/*
 * peers.h - the runners of one host that serve one server share a burst.
 *
 * A runner claims far ahead (serve.c: up to --queue jobs in flight), so
 * that a compile error is answered while the GPU lane is full. Alone that
 * let the first runner to ask take a whole queue: in make test-gpu on two
 * H200s one runner of four took 58 of 61 Python jobs, queued before the
 * others had built their labs, and the other GPU idled. So each runner
 * publishes how many jobs it has in flight in a small file of a directory
 * shared by the runners of this host and this server, and claims only
 * while it has fewer than the least loaded live peer plus a margin (its
 * front lane's width): the host's runners still claim far ahead together,
 * and no one of them runs ahead of the others. A peer counts from its
 * start (it is building its labs, or its GPU's first probe has not
 * answered yet: it will claim soon) until it stops; a peer whose GPU's
 * probe failed, or that was told to stop,
 * claims nothing and does not count; a peer that died (its process is gone or is another program
 * now) does not count.
 *
 * Claiming far ahead also binds a burst's jobs to runners early: in a
 * burst of 100 Python jobs on two H200s one GPU ran out of work 95 s
 * before the other. So each runner also publishes how many of its jobs are
 * not yet admitted to its GPU (pending) and which GPU it serves (a key of
 * its admission ledger's path). A runner whose jobs wait for its GPU's
 * memory hands one back to the server while a peer on another GPU has
 * none pending (serve.c, docs/runner.md "Hand-back").
 */
#ifndef CUGRADE_RUNNER_PEERS_H
#define CUGRADE_RUNNER_PEERS_H

#include <stddef.h>

/* What a runner is doing, as its peers read it. */
enum peer_state {
    PEER_STARTING = 's', /* building labs, measuring, first probe: it will claim soon */
    PEER_CLAIMING = 'c', /* serving: claims when it has room */
    PEER_IDLE_GPU = 'u', /* its GPU's probe failed: it claims nothing */
    PEER_STOPPING = 'x', /* told to stop: it ends its jobs, claims nothing */
};

/* Join the peers of this host for the server at server_url: the
 * directory is /run/cugrade-runner/peers-HASH (root) or
 * $TMPDIR/cugrade-runner-UID/peers-HASH, HASH of the URL. Publishes
 * PEER_STARTING with nothing in flight. Returns 0 or -errno (then the
 * runner serves alone: peers_least is -1). One per process. */
int peers_join(const char *server_url, const char *gpu_key);

/* Publish this runner's state, jobs in flight and how many of them are not
 * yet admitted to its GPU (written when they changed or the file is gone:
 * its directory is made again if need be). */
void peers_publish(enum peer_state st, size_t in_flight, size_t pending);

/* The least number of jobs in flight among the live peers that claim or
 * are starting, this runner excluded; -1 when there is none. With hungry
 * (may be NULL), in the same look: whether a live peer that claims serves
 * another GPU (another gpu_key) and has no job pending admission, the GPU
 * that a job waiting here would reach sooner. */
long peers_least(int *hungry);

/* Leave: remove this runner's file. */
void peers_leave(void);

#endif

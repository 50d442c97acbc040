// SPDX-License-Identifier: MIT
/*
 * The native engine's access faults: views (or parts of them) made
 * PROT_NONE so that a device's first access is seen (tracking, managed
 * memory that moves on faults). A SIGSEGV with SEGV_ACCERR in a
 * registered range calls that range's callback, which records the
 * access and opens the page; any other SIGSEGV goes to the handler that
 * was installed before ours (or the default action), so a program's real
 * crashes stay crashes.
 *
 * The table is read in the signal handler without a lock: a slot is
 * published by storing its start last (release) and retired by clearing
 * it, then waiting until no handler is inside the table, so that a range
 * is never acted on after gpsu_fault_del() returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "engine_user.h"

#define GPSU_FAULT_SLOTS	8192	/* views watched: ndev per allocation */

struct gpsu_fault_slot {
	uintptr_t start, end;		/* start 0: free */
	gpsu_fault_fn fn;
	void *ctx;
	int tag;
};

static struct gpsu_fault_slot gpsu_slots[GPSU_FAULT_SLOTS];
static unsigned int gpsu_nslots;	/* slots ever used (high mark) */
static unsigned int gpsu_inside;	/* handlers walking the table */
static pthread_mutex_t gpsu_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction gpsu_old_segv;
static bool gpsu_installed;

/* Not ours: what would have happened without us. */
static void gpsu_fault_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *old = &gpsu_old_segv;

	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* the default action: the access faults again and kills */
	signal(sig, SIG_DFL);
}

static void gpsu_fault_sig(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	unsigned int i, n;
	int saved = errno;
	bool done = false;

	if (si->si_code == SEGV_ACCERR) {
		__atomic_fetch_add(&gpsu_inside, 1, __ATOMIC_ACQ_REL);
		n = __atomic_load_n(&gpsu_nslots, __ATOMIC_ACQUIRE);
		for (i = 0; i < n && !done; i++) {
			struct gpsu_fault_slot *s = &gpsu_slots[i];
			uintptr_t start = __atomic_load_n(&s->start,
							  __ATOMIC_ACQUIRE);

			if (!start || addr < start || addr >= s->end)
				continue;
			done = s->fn(s->ctx, s->tag, addr);
		}
		__atomic_fetch_sub(&gpsu_inside, 1, __ATOMIC_ACQ_REL);
	}
	errno = saved;
	if (!done)
		gpsu_fault_chain(sig, si, uc);
}

static int gpsu_fault_install(void)
{
	struct sigaction sa;

	if (gpsu_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = gpsu_fault_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &gpsu_old_segv))
		return errno;
	gpsu_installed = true;
	return 0;
}

int gpsu_fault_add(void *addr, size_t len, gpsu_fault_fn fn, void *ctx,
		   int tag)
{
	unsigned int i;
	int ret;

	pthread_mutex_lock(&gpsu_fault_lock);
	ret = gpsu_fault_install();
	if (ret)
		goto out;
	for (i = 0; i < GPSU_FAULT_SLOTS; i++)
		if (!__atomic_load_n(&gpsu_slots[i].start, __ATOMIC_RELAXED))
			break;
	if (i == GPSU_FAULT_SLOTS) {
		ret = ENOSPC;
		goto out;
	}
	gpsu_slots[i].end = (uintptr_t)addr + len;
	gpsu_slots[i].fn = fn;
	gpsu_slots[i].ctx = ctx;
	gpsu_slots[i].tag = tag;
	__atomic_store_n(&gpsu_slots[i].start, (uintptr_t)addr,
			 __ATOMIC_RELEASE);
	if (i >= gpsu_nslots)
		__atomic_store_n(&gpsu_nslots, i + 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&gpsu_fault_lock);
	return ret;
}

void gpsu_fault_del(void *ctx)
{
	unsigned int i;

	pthread_mutex_lock(&gpsu_fault_lock);
	for (i = 0; i < gpsu_nslots; i++)
		if (gpsu_slots[i].ctx == ctx)
			__atomic_store_n(&gpsu_slots[i].start, 0,
					 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gpsu_fault_lock);
	/* a handler that saw the slot finishes before the range goes */
	while (__atomic_load_n(&gpsu_inside, __ATOMIC_ACQUIRE))
		sched_yield();
}

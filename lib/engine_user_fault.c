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
 *
 * A hold (gpsu_fault_hold) makes the stores to a few ranges wait while a
 * subscription changes under them: the engine write-protects them, and
 * a write fault there sleeps on the hold's sequence (a futex) until the
 * hold ends, then retries. A fault that lost a race with the end of a
 * hold or of tracking finds its page open again: an access fault nobody
 * claims is retried once per hold, then passed on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "engine_user.h"
#include "gpsu_internal.h"

#define GPSU_FAULT_SLOTS	8192	/* views watched: ndev per allocation */

struct gpsu_fault_slot {
	uintptr_t start, end;		/* start 0: free */
	gpsu_fault_fn fn;
	void *ctx;
	int tag;
};

static struct gpsu_fault_slot gpsu_slots[GPSU_FAULT_SLOTS];
static unsigned int gpsu_nslots;	/* slots ever used (high mark) */
/*
 * Handlers walking the table or deciding on a hold, counted in the
 * generation they entered in: a quiesce flips the generation and waits
 * for the old one alone, so handlers that keep faulting cannot starve it.
 */
static unsigned int gpsu_gen;
static unsigned int gpsu_inside[2];
static pthread_mutex_t gpsu_quiesce_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gpsu_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction gpsu_old_segv;
static bool gpsu_installed;
/* $GPSU_TEST_FAULT_DELAY_US: a fault sleeps before it looks (tests) */
static unsigned long gpsu_fault_delay_us;

/*
 * The hold: seq % 4 is 0 when none is on (the ranges are the last
 * hold's), 1 while the ranges are written, 2 while it is on. Written by
 * one thread at a time (the engine's allocs_lock), read in handlers.
 */
static struct {
	unsigned int seq;
	int n;
	size_t len;
	uintptr_t lo[GPSU_MAX_DEVICES + 1];
} gpsu_hold;
/* the hold sequence + 1 at this thread's last unclaimed retry */
static __thread unsigned int gpsu_retried
	__attribute__((tls_model("initial-exec")));

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

static long gpsu_futex(unsigned int *uaddr, int op, unsigned int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/* The hold's sequence when it is on and covers @addr, else 0. */
static unsigned int gpsu_held(uintptr_t addr)
{
	unsigned int seq;
	bool in;
	int i, n;

	for (;;) {
		/* seq_cst: against the count of gpsu_fault_sig() */
		seq = __atomic_load_n(&gpsu_hold.seq, __ATOMIC_SEQ_CST);
		if (seq % 4 == 1) {
			sched_yield();	/* being written: a few stores */
			continue;
		}
		/* acquire: a range being written shows in seq below */
		in = false;
		n = __atomic_load_n(&gpsu_hold.n, __ATOMIC_ACQUIRE);
		for (i = 0; i < n && i <= GPSU_MAX_DEVICES; i++)
			if (addr - __atomic_load_n(&gpsu_hold.lo[i],
						   __ATOMIC_ACQUIRE) <
			    __atomic_load_n(&gpsu_hold.len, __ATOMIC_ACQUIRE))
				in = true;
		if (__atomic_load_n(&gpsu_hold.seq, __ATOMIC_RELAXED) == seq)
			return in && seq % 4 == 2 ? seq : 0;
	}
}

/* A store, where the CPU says (x86-64's page-fault error code). */
static bool gpsu_fault_was_store(const void *uc)
{
#if defined(__x86_64__)
	return ((const ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2;
#else
	(void)uc;
	return false;
#endif
}

static void gpsu_fault_sig(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	unsigned int i, n, held, gen;
	int saved = errno, what = GPSU_FAULT_PASS;
	uint64_t sleep_ns = 0;
	bool done = false;

	if (si->si_code == SEGV_ACCERR) {
		if (gpsu_fault_delay_us) {
			struct timespec ts = {
				.tv_sec = gpsu_fault_delay_us / 1000000,
				.tv_nsec = gpsu_fault_delay_us % 1000000 * 1000,
			};

			nanosleep(&ts, NULL);
		}
		/*
		 * seq_cst: a quiesce sees us, or we see what came before
		 * it; counted in the generation still current after the
		 * count, so that no quiesce waits on the other one alone.
		 */
		for (;;) {
			gen = __atomic_load_n(&gpsu_gen, __ATOMIC_SEQ_CST);
			__atomic_fetch_add(&gpsu_inside[gen & 1], 1,
					   __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&gpsu_gen, __ATOMIC_SEQ_CST) == gen)
				break;
			__atomic_fetch_sub(&gpsu_inside[gen & 1], 1,
					   __ATOMIC_SEQ_CST);
		}
		held = gpsu_held(addr);
		n = held ? 0 : __atomic_load_n(&gpsu_nslots, __ATOMIC_ACQUIRE);
		for (i = 0; i < n && what == GPSU_FAULT_PASS; i++) {
			struct gpsu_fault_slot *s = &gpsu_slots[i];
			uintptr_t start = __atomic_load_n(&s->start,
							  __ATOMIC_SEQ_CST);

			if (!start || addr < start || addr >= s->end)
				continue;
			what = s->fn(s->ctx, s->tag, addr,
				     gpsu_fault_was_store(uc), &sleep_ns);
		}
		__atomic_fetch_sub(&gpsu_inside[gen & 1], 1, __ATOMIC_SEQ_CST);
		if (sleep_ns) {
			struct timespec ts = {
				.tv_sec = (time_t)(sleep_ns / 1000000000ULL),
				.tv_nsec = (long)(sleep_ns % 1000000000ULL),
			};

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		if (what == GPSU_FAULT_WAIT) {
			held = __atomic_load_n(&gpsu_hold.seq, __ATOMIC_ACQUIRE);
			if (held % 4 != 2)
				held = 0;
		}
		done = what == GPSU_FAULT_OPENED;
		if (held || what == GPSU_FAULT_WAIT) {
			while (held && __atomic_load_n(&gpsu_hold.seq,
						       __ATOMIC_ACQUIRE) == held)
				gpsu_futex(&gpsu_hold.seq, FUTEX_WAIT_PRIVATE,
					   held);
			done = true;
		} else if (!done) {
			/* the page may have opened since it faulted */
			unsigned int seq = __atomic_load_n(&gpsu_hold.seq,
							   __ATOMIC_ACQUIRE);

			if (gpsu_retried != seq + 1) {
				gpsu_retried = seq + 1;
				done = true;
			}
		}
	}
	errno = saved;
	if (!done)
		gpsu_fault_chain(sig, si, uc);
}

bool gpsu_fault_holding(void)
{
	return __atomic_load_n(&gpsu_hold.seq, __ATOMIC_SEQ_CST) % 4 == 2;
}

/*
 * The table's lock, with asynchronous signals blocked: a handler of the
 * program's that stored into a held view while this thread held the
 * lock would wait for a holder that waits for the lock.
 */
static void gpsu_fault_lock_take(sigset_t *old)
{
	sigset_t async;

	gpsu_fault_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, old);
	pthread_mutex_lock(&gpsu_fault_lock);
}

static void gpsu_fault_lock_drop(const sigset_t *old)
{
	pthread_mutex_unlock(&gpsu_fault_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void gpsu_fault_async_signals(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, SIGSEGV);
	sigdelset(set, SIGBUS);
	sigdelset(set, SIGILL);
	sigdelset(set, SIGFPE);
	sigdelset(set, SIGTRAP);
}

static int gpsu_fault_install(void)
{
	struct sigaction sa;

	if (gpsu_installed)
		return 0;
	if (getenv("GPSU_TEST_FAULT_DELAY_US"))
		gpsu_fault_delay_us = strtoul(getenv("GPSU_TEST_FAULT_DELAY_US"),
					      NULL, 10);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = gpsu_fault_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	/* no handler of the program's runs inside ours (it may store) */
	gpsu_fault_async_signals(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &gpsu_old_segv))
		return errno;
	gpsu_installed = true;
	return 0;
}

int gpsu_fault_add(void *addr, size_t len, gpsu_fault_fn fn, void *ctx,
		   int tag)
{
	unsigned int i;
	sigset_t old;
	int ret;

	gpsu_fault_lock_take(&old);
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
	gpsu_fault_lock_drop(&old);
	return ret;
}

/* Until no handler that entered before this call is still inside. */
static void gpsu_fault_quiesce(void)
{
	unsigned int old;

	pthread_mutex_lock(&gpsu_quiesce_lock);
	old = __atomic_fetch_add(&gpsu_gen, 1, __ATOMIC_SEQ_CST) & 1;
	while (__atomic_load_n(&gpsu_inside[old], __ATOMIC_SEQ_CST))
		sched_yield();
	pthread_mutex_unlock(&gpsu_quiesce_lock);
}

void gpsu_fault_del(void *ctx)
{
	unsigned int i;
	sigset_t old;

	gpsu_fault_lock_take(&old);
	for (i = 0; i < gpsu_nslots; i++)
		if (gpsu_slots[i].ctx == ctx)
			__atomic_store_n(&gpsu_slots[i].start, 0,
					 __ATOMIC_SEQ_CST);
	/*
	 * A handler that saw the slot finishes before the range goes, and
	 * before the slot can be used again (under the lock: a handler
	 * must not read an old start with a new range's callback).
	 */
	gpsu_fault_quiesce();
	gpsu_fault_lock_drop(&old);
}

int gpsu_fault_hold(const uintptr_t *lo, int n, size_t len)
{
	unsigned int seq = gpsu_hold.seq;
	sigset_t old;
	int i, ret;

	if (n < 1 || n > GPSU_MAX_DEVICES + 1 || seq % 4)
		return EINVAL;
	gpsu_fault_lock_take(&old);
	ret = gpsu_fault_install();
	gpsu_fault_lock_drop(&old);
	if (ret)
		return ret;
	/* release: a handler that reads a new range sees seq moved */
	__atomic_store_n(&gpsu_hold.seq, seq + 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		__atomic_store_n(&gpsu_hold.lo[i], lo[i], __ATOMIC_RELEASE);
	__atomic_store_n(&gpsu_hold.len, len, __ATOMIC_RELEASE);
	__atomic_store_n(&gpsu_hold.n, n, __ATOMIC_RELEASE);
	__atomic_store_n(&gpsu_hold.seq, seq + 2, __ATOMIC_SEQ_CST);
	/* a handler that missed the hold is done before any page closes */
	gpsu_fault_quiesce();
	return 0;
}

void gpsu_fault_unhold(void)
{
	unsigned int seq = gpsu_hold.seq;

	if (seq % 4 != 2)
		return;
	__atomic_store_n(&gpsu_hold.seq, seq + 2, __ATOMIC_RELEASE);
	gpsu_futex(&gpsu_hold.seq, FUTEX_WAKE_PRIVATE, INT32_MAX);
}

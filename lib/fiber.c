// SPDX-License-Identifier: MIT
/*
 * Fibers for the threads of a block that synchronise (gpsKernelSync).
 *
 * The threads of a block run as fibers on the one worker that runs the
 * block, in turn: a thread runs until it must wait (gpsSyncThreads, a
 * warp function) or ends, then the next thread that may run does. No
 * lock, no system call: one CPU runs them all, so every store made before
 * a wait is visible after it.
 *
 * Waits: a thread at the block barrier waits until every live thread of
 * the block is there (threads that ended count as arrived); a thread at a
 * warp function (gpsShflSync & co., mask M) waits until every live lane
 * of M in its warp (32 consecutive threads) is at a warp function with
 * the same mask. The last to arrive computes every member's result and
 * frees them all. A thread that would wait where no other thread can run
 * (threads of a block at different barriers) fails the block.
 *
 * The switch on x86-64 saves the callee-saved registers, the x87 control
 * word and MXCSR (the SysV ABI has their control bits callee-saved, so a
 * fiber's fesetround stays its own) and the stack pointer
 * (gpsu_fiber_switch below, tens of nanoseconds); elsewhere it is
 * ucontext's swapcontext, which saves the floating-point environment and
 * the signal mask (a system call per switch). Stacks (GPSU_FIBER_STACK
 * bytes and a guard page below each) are mapped once per worker and kept
 * for the next blocks. Under ASan and TSan the switches are announced
 * to the sanitizer.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) && !defined(GPSU_FIBER_UCONTEXT)
#define GPSU_FIBER_ASM 1	/* -DGPSU_FIBER_UCONTEXT tests the fallback */
#else
#include <ucontext.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define GPSU_FIBER_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GPSU_FIBER_ASAN 1
#define GPSU_FIBER_STACK	(256 * 1024)
#else
#define GPSU_FIBER_STACK	(64 * 1024)
#endif

#include "fiber.h"

enum gpsu_fiber_state {
	GPSU_F_RUN,		/* may run */
	GPSU_F_BAR,		/* at the block barrier */
	GPSU_F_WARP,		/* at a warp function */
	GPSU_F_DONE,		/* returned */
};

struct gpsu_fiber {
	void *map;		/* guard page + stack */
	void *stack;		/* lowest usable byte */
#ifdef GPSU_FIBER_ASM
	void *sp;		/* saved stack pointer */
#else
	ucontext_t uc;
#endif
	void *fake;		/* ASan's fake stack while switched out */
	void *tsan;		/* TSan's fiber (its shadow stack) */
	unsigned int runs;	/* blocks run since it was created */
	int state;		/* enum gpsu_fiber_state */
	/* at a warp function: what it asked, then what it gets */
	unsigned int wmask;	/* lanes named, the caller's included */
	unsigned int wsrc;	/* lane whose value it reads */
	int wpred;
	unsigned long long wval;
	struct gpsu_warp_res res;
	gpsThreadCtx ctx;
};

struct gpsu_fibers {
	struct gpsu_fiber *f;
	unsigned int cap;	/* stacks mapped */
	unsigned int n;		/* threads of the current block */
	unsigned int cur;
	unsigned int live;	/* not returned */
	unsigned int nbar;	/* at the block barrier */
	int stuck;		/* no thread could run: the block failed */
	const gpsKernel *k;
	void *args;
#ifdef GPSU_FIBER_ASM
	void *main_sp;
#else
	ucontext_t main_uc;
#endif
	void *main_fake;
	void *main_tsan;	/* TSan's fiber of the worker thread */
	const void *main_bottom;
	size_t main_size;
};

/* the worker's set while it runs a block of fibers, else NULL */
static GPSU_TLS struct gpsu_fibers *gpsu_cur_fibers;

#ifdef GPSU_FIBER_ASM
/*
 * void gpsu_fiber_switch(void **save_sp, void *to_sp)
 * The frame: x87 control word at 0, MXCSR at 4, r15 r14 r13 r12 rbx rbp,
 * the return address.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl gpsu_fiber_switch\n"
	".hidden gpsu_fiber_switch\n"
	".type gpsu_fiber_switch,@function\n"
	"gpsu_fiber_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	subq $8, %rsp\n"
	"	fnstcw (%rsp)\n"
	"	stmxcsr 4(%rsp)\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	fldcw (%rsp)\n"
	"	ldmxcsr 4(%rsp)\n"
	"	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size gpsu_fiber_switch, .-gpsu_fiber_switch\n");
void gpsu_fiber_switch(void **save_sp, void *to_sp);
#endif

static void gpsu_asan_start(void **fake, const void *bottom, size_t size)
{
#ifdef GPSU_FIBER_ASAN
	__sanitizer_start_switch_fiber(fake, bottom, size);
#else
	(void)fake, (void)bottom, (void)size;
#endif
}

static void gpsu_asan_finish(struct gpsu_fibers *fs, void *fake)
{
#ifdef GPSU_FIBER_ASAN
	const void *bottom;
	size_t size;

	__sanitizer_finish_switch_fiber(fake, &bottom, &size);
	if (!fs->main_bottom) {
		fs->main_bottom = bottom;
		fs->main_size = size;
	}
#else
	(void)fs, (void)fake;
#endif
}

/* From fiber (or main, from == NULL) to fiber @to (or main, to == NULL). */
static void gpsu_switch(struct gpsu_fibers *fs, struct gpsu_fiber *from,
			struct gpsu_fiber *to)
{
	void **fake = from ? &from->fake : &fs->main_fake;

	if (from && from->state == GPSU_F_DONE)
		fake = NULL;	/* never resumed: ASan frees its fake stack */
	if (to)
		gpsu_asan_start(fake, to->stack, GPSU_FIBER_STACK);
	else
		gpsu_asan_start(fake, fs->main_bottom, fs->main_size);
#ifdef GPSU_FIBER_TSAN
	/* TSan keeps a shadow stack per fiber: say which one runs now */
	__tsan_switch_to_fiber(to ? to->tsan : fs->main_tsan, 0);
#endif
#ifdef GPSU_FIBER_ASM
	gpsu_fiber_switch(from ? &from->sp : &fs->main_sp,
			  to ? to->sp : fs->main_sp);
#else
	swapcontext(from ? &from->uc : &fs->main_uc,
		    to ? &to->uc : &fs->main_uc);
#endif
	gpsu_asan_finish(fs, from ? from->fake : fs->main_fake);
}

/*
 * The next thread that may run after the current one: first the lanes
 * after it in its warp (@warp_first), then the block in turn. NULL if
 * none: every thread ended, or the block is stuck.
 */
static struct gpsu_fiber *gpsu_next(struct gpsu_fibers *fs, int warp_first)
{
	unsigned int i, j, w, nw;

	if (warp_first) {
		w = fs->cur & ~(GPS_WARP_SIZE - 1u);
		nw = fs->n - w < GPS_WARP_SIZE ? fs->n - w : GPS_WARP_SIZE;
		for (i = 1; i < nw; i++) {
			j = w + (fs->cur - w + i) % nw;
			if (fs->f[j].state == GPSU_F_RUN) {
				fs->cur = j;
				return &fs->f[j];
			}
		}
	}
	for (i = 1; i <= fs->n; i++) {
		j = (fs->cur + i) % fs->n;
		if (fs->f[j].state == GPSU_F_RUN) {
			fs->cur = j;
			return &fs->f[j];
		}
	}
	return NULL;
}

/* The current fiber waits: run another, or give the block up. */
static void gpsu_wait(struct gpsu_fibers *fs, int warp_first)
{
	struct gpsu_fiber *from = &fs->f[fs->cur], *to;

	to = gpsu_next(fs, warp_first);
	if (!to && fs->live) {
		fs->stuck = 1;	/* back to the worker; never resumed */
		gpsu_switch(fs, from, NULL);
		abort();
	}
	gpsu_switch(fs, from, to);
	gpsu_tls.thread_idx = from->ctx.tIdx;
}

/* Lanes of warp @w that take part: named in @mask, present, not ended. */
static unsigned int gpsu_warp_members(struct gpsu_fibers *fs, unsigned int w,
				      unsigned int mask)
{
	unsigned int l, m = 0, nw = fs->n - w;

	if (nw > GPS_WARP_SIZE)
		nw = GPS_WARP_SIZE;
	for (l = 0; l < nw; l++)
		if ((mask >> l & 1) && fs->f[w + l].state != GPSU_F_DONE)
			m |= 1u << l;
	return m;
}

/*
 * If every member of the group of warp @w named by @mask is at a warp
 * function with that mask, gives each its result and lets them run.
 */
static void gpsu_warp_try(struct gpsu_fibers *fs, unsigned int w,
			  unsigned int mask)
{
	unsigned int m = gpsu_warp_members(fs, w, mask);
	unsigned int l, ballot = 0;
	struct gpsu_fiber *f;

	for (l = 0; l < GPS_WARP_SIZE; l++) {
		if (!(m >> l & 1))
			continue;
		f = &fs->f[w + l];
		if (f->state != GPSU_F_WARP || f->wmask != mask)
			return;
		if (f->wpred)
			ballot |= 1u << l;
	}
	for (l = 0; l < GPS_WARP_SIZE; l++) {
		if (!(m >> l & 1))
			continue;
		f = &fs->f[w + l];
		if (!(m >> f->wsrc & 1) && f->wsrc != l)
			gpsu_warp_report_outside(fs->k ? fs->k->name : NULL,
						 &f->ctx, mask, m, f->wsrc);
		f->res.val = (m >> f->wsrc & 1) ? fs->f[w + f->wsrc].wval
						 : f->wval;
		f->res.ballot = ballot;
		f->res.members = m;
		f->state = GPSU_F_RUN;
	}
}

/* Waits that a thread's end may complete. */
static void gpsu_release_after_end(struct gpsu_fibers *fs, unsigned int t)
{
	unsigned int w = t & ~(GPS_WARP_SIZE - 1u), l, nw = fs->n - w;
	unsigned int done = 0;

	if (fs->nbar && fs->nbar == fs->live) {
		for (l = 0; l < fs->n; l++)
			if (fs->f[l].state == GPSU_F_BAR)
				fs->f[l].state = GPSU_F_RUN;
		fs->nbar = 0;
	}
	if (nw > GPS_WARP_SIZE)
		nw = GPS_WARP_SIZE;
	for (l = 0; l < nw; l++) {
		struct gpsu_fiber *f = &fs->f[w + l];

		if (f->state == GPSU_F_WARP && !(done >> l & 1)) {
			done |= f->wmask;
			gpsu_warp_try(fs, w, f->wmask);
		}
	}
}

static void gpsu_fiber_entry(void)
{
	struct gpsu_fibers *fs = gpsu_cur_fibers;
	unsigned int t = fs->cur;
	struct gpsu_fiber *f = &fs->f[t];

	gpsu_asan_finish(fs, NULL);
	/* for gpsThreadIdx() in helpers that the body calls */
	gpsu_tls.thread_idx = f->ctx.tIdx;
	fs->k->thread(&f->ctx, fs->args);
	f->state = GPSU_F_DONE;
	fs->live--;
	gpsu_release_after_end(fs, t);
	gpsu_wait(fs, 0);
	abort();	/* a finished fiber is never resumed */
}

static void gpsu_fiber_init(struct gpsu_fibers *fs, struct gpsu_fiber *f)
{
#ifdef GPSU_FIBER_ASAN
	/* the frames a finished fiber left behind are gone */
	__asan_unpoison_memory_region(f->stack, GPSU_FIBER_STACK);
#endif
#ifdef GPSU_FIBER_ASM
	uintptr_t top = ((uintptr_t)f->stack + GPSU_FIBER_STACK) & ~(uintptr_t)15;
	void **sp = (void **)(top - 72);
	uint16_t cw;
	uint32_t csr;

	(void)fs;
	/* the worker's control word and MXCSR (a fiber starts with the
	 * floating-point modes of the thread that runs the block), r15 r14
	 * r13 r12 rbx rbp, then the return address of the switch (16-byte
	 * aligned: entry starts as if called), then a null return address
	 * for the entry itself */
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	__asm__ volatile("stmxcsr %0" : "=m"(csr));
	memset(sp, 0, 7 * sizeof(void *));
	memcpy(sp, &cw, sizeof(cw));
	memcpy((char *)sp + 4, &csr, sizeof(csr));
	sp[7] = (void *)gpsu_fiber_entry;
	sp[8] = NULL;
	f->sp = sp;
#else
	/* getcontext takes the caller's floating-point environment */
	getcontext(&f->uc);
	f->uc.uc_stack.ss_sp = f->stack;
	f->uc.uc_stack.ss_size = GPSU_FIBER_STACK;
	f->uc.uc_link = &fs->main_uc;
	makecontext(&f->uc, gpsu_fiber_entry, 0);
#endif
#ifdef GPSU_FIBER_TSAN
	/*
	 * A finished fiber leaves its last frames on TSan's shadow stack;
	 * a fresh one now and then keeps it short (one per block is slow).
	 */
	if (!f->tsan || ++f->runs % 256 == 0) {
		if (f->tsan)
			__tsan_destroy_fiber(f->tsan);
		f->tsan = __tsan_create_fiber(0);
	}
#endif
	f->state = GPSU_F_RUN;
	f->fake = NULL;
}

static int gpsu_fibers_grow(struct gpsu_fibers *fs, unsigned int n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct gpsu_fiber *nf;
	unsigned int i;

	if (n <= fs->cap)
		return 0;
	nf = realloc(fs->f, n * sizeof(*nf));
	if (!nf)
		return -1;
	fs->f = nf;
	for (i = fs->cap; i < n; i++) {
		void *m = mmap(NULL, page + GPSU_FIBER_STACK,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			       MAP_STACK, -1, 0);

		if (m == MAP_FAILED)
			return -1;
		if (mprotect(m, page, PROT_NONE)) {
			munmap(m, page + GPSU_FIBER_STACK);
			return -1;
		}
		memset(&nf[i], 0, sizeof(nf[i]));
		nf[i].map = m;
		nf[i].stack = (char *)m + page;
		fs->cap = i + 1;
	}
	return 0;
}

gpsError_t gpsu_fibers_run_block(struct gpsu_fibers **fsp, const gpsKernel *k,
				 const gpsThreadCtx *proto, void *args)
{
	struct gpsu_fibers *fs = *fsp;
	gpsDim3 d = proto->bDim;
	unsigned int i, n = d.x * d.y * d.z;

	if (!fs) {
		fs = calloc(1, sizeof(*fs));
		if (!fs)
			return gpsErrorMemoryAllocation;
		*fsp = fs;
	}
	if (gpsu_fibers_grow(fs, n))
		return gpsErrorMemoryAllocation;
	fs->n = n;
	fs->k = k;
	fs->args = args;
	for (i = 0; i < n; i++) {
		struct gpsu_fiber *f = &fs->f[i];

		f->ctx = *proto;
		f->ctx.tIdx.x = i % d.x;
		f->ctx.tIdx.y = (i / d.x) % d.y;
		f->ctx.tIdx.z = i / (d.x * d.y);
		gpsu_fiber_init(fs, f);
	}
	fs->live = n;
	fs->nbar = 0;
	fs->stuck = 0;
	fs->cur = 0;
	gpsu_cur_fibers = fs;
#ifdef GPSU_FIBER_TSAN
	fs->main_tsan = __tsan_get_current_fiber();
#endif
	gpsu_switch(fs, NULL, &fs->f[0]);
	gpsu_cur_fibers = NULL;
	memset(&gpsu_tls.thread_idx, 0, sizeof(gpsu_tls.thread_idx));
	if (fs->stuck) {
		fprintf(stderr,
			"libgpsu: kernel %s, block (%u, %u, %u): its threads wait at different barriers (gpsSyncThreads, warp functions) and none can go on\n",
			k->name ? k->name : "?", proto->bIdx.x, proto->bIdx.y,
			proto->bIdx.z);
		return gpsErrorLaunchFailure;
	}
	return gpsSuccess;
}

int gpsu_fiber_yield(void)
{
	struct gpsu_fibers *fs = gpsu_cur_fibers;
	unsigned int i;

	if (!fs)
		return 0;
	if (++fs->nbar < fs->live) {
		fs->f[fs->cur].state = GPSU_F_BAR;
		gpsu_wait(fs, 0);
		return 1;
	}
	/* the last to arrive frees the others and goes on */
	for (i = 0; i < fs->n; i++)
		if (fs->f[i].state == GPSU_F_BAR)
			fs->f[i].state = GPSU_F_RUN;
	fs->nbar = 0;
	return 1;
}

/* GPSU_CHECK_SHUFFLE=1: at most this many lines, then one that says so */
#define GPSU_SHUFFLE_REPORTS	16

void gpsu_warp_report_outside(const char *kname, const gpsThreadCtx *c,
			      unsigned int mask, unsigned int members,
			      unsigned int src)
{
	static int check = -1;
	static unsigned int said;
	unsigned int n;

	if (!gpsu_env_switch("GPSU_CHECK_SHUFFLE", &check))
		return;
	n = __atomic_fetch_add(&said, 1, __ATOMIC_RELAXED);
	if (n < GPSU_SHUFFLE_REPORTS)
		fprintf(stderr,
			"libgpsu: GPSU_CHECK_SHUFFLE: kernel %s, block (%u, %u, %u), thread (%u, %u, %u): a shuffle reads lane %u, which is not taking part (mask 0x%08x, lanes taking part 0x%08x: not in the mask, returned or past the block's last thread); it got its own value, CUDA leaves it undefined\n",
			kname ? kname : "?", c->bIdx.x, c->bIdx.y, c->bIdx.z,
			c->tIdx.x, c->tIdx.y, c->tIdx.z, src, mask, members);
	else if (n == GPSU_SHUFFLE_REPORTS)
		fprintf(stderr,
			"libgpsu: GPSU_CHECK_SHUFFLE: more shuffles read lanes that do not take part; no more are reported\n");
}

unsigned int gpsu_warp_src(const struct gpsu_warp_op *op, unsigned int lane)
{
	unsigned int width = op->width, seg, src;

	if (!width || width > GPS_WARP_SIZE || (width & (width - 1)))
		width = GPS_WARP_SIZE;
	seg = lane & ~(width - 1);
	switch (op->kind) {
	case GPSU_WARP_IDX:
		src = seg + ((unsigned int)op->arg & (width - 1));
		break;
	case GPSU_WARP_UP:
		src = lane - seg >= (unsigned int)op->arg ?
		      lane - (unsigned int)op->arg : lane;
		break;
	case GPSU_WARP_DOWN:
		src = (unsigned int)op->arg < seg + width - lane ?
		      lane + (unsigned int)op->arg : lane;
		break;
	case GPSU_WARP_XOR:
		src = lane ^ (unsigned int)op->arg;
		if (src >= seg + width)
			src = lane;
		break;
	default:
		src = lane;
		break;
	}
	return src;
}

int gpsu_fiber_warp(const struct gpsu_warp_op *op, struct gpsu_warp_res *res)
{
	struct gpsu_fibers *fs = gpsu_cur_fibers;
	struct gpsu_fiber *f;
	unsigned int t, w, lane, src, mask;

	if (!fs)
		return 0;
	t = fs->cur;
	f = &fs->f[t];
	w = t & ~(GPS_WARP_SIZE - 1u);
	lane = t - w;
	src = gpsu_warp_src(op, lane);
	mask = op->mask | 1u << lane;	/* the caller takes part */
	f->wmask = mask;
	f->wsrc = src;
	f->wpred = op->pred != 0;
	f->wval = op->val;
	f->state = GPSU_F_WARP;
	gpsu_warp_try(fs, w, mask);
	if (f->state == GPSU_F_WARP)
		gpsu_wait(fs, 1);
	*res = f->res;
	return 1;
}

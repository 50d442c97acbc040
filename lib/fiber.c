// SPDX-License-Identifier: MIT
/*
 * Fibers for the threads of a block that synchronise (gpsKernelSync).
 *
 * The threads of a block run as fibers on the one worker that runs the
 * block, in turn: a thread runs until gpsSyncThreads or its end, then the
 * next live thread of the block runs (round robin). When a thread resumes
 * after its barrier, every other live thread of the block has reached the
 * same barrier (or ended), and all their stores are visible: one CPU ran
 * them. No lock, no system call.
 *
 * The switch on x86-64 saves the callee-saved registers and the stack
 * pointer (gpsu_fiber_switch below, tens of nanoseconds); elsewhere it is
 * ucontext's swapcontext, which also saves the signal mask (a system call
 * per switch). Stacks (GPSU_FIBER_STACK bytes and a guard page below each)
 * are mapped once per worker and kept for the next blocks. Under ASan the
 * switches are announced to the sanitizer.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) && !defined(GPSU_FIBER_UCONTEXT)
#define GPSU_FIBER_ASM 1	/* -DGPSU_FIBER_UCONTEXT tests the fallback */
#else
#include <ucontext.h>
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

struct gpsu_fiber {
	void *map;		/* guard page + stack */
	void *stack;		/* lowest usable byte */
#ifdef GPSU_FIBER_ASM
	void *sp;		/* saved stack pointer */
#else
	ucontext_t uc;
#endif
	void *fake;		/* ASan's fake stack while switched out */
	int done;
	gpsThreadCtx ctx;
};

struct gpsu_fibers {
	struct gpsu_fiber *f;
	unsigned int cap;	/* stacks mapped */
	unsigned int n;		/* threads of the current block */
	unsigned int cur;
	unsigned int live;
	const gpsKernel *k;
	void *args;
#ifdef GPSU_FIBER_ASM
	void *main_sp;
#else
	ucontext_t main_uc;
#endif
	void *main_fake;
	const void *main_bottom;
	size_t main_size;
};

/* the worker's set while it runs a block of fibers, else NULL */
static GPSU_TLS struct gpsu_fibers *gpsu_cur_fibers;

#ifdef GPSU_FIBER_ASM
/* void gpsu_fiber_switch(void **save_sp, void *to_sp) */
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
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
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

	if (from && from->done)
		fake = NULL;	/* never resumed: ASan frees its fake stack */
	if (to)
		gpsu_asan_start(fake, to->stack, GPSU_FIBER_STACK);
	else
		gpsu_asan_start(fake, fs->main_bottom, fs->main_size);
#ifdef GPSU_FIBER_ASM
	gpsu_fiber_switch(from ? &from->sp : &fs->main_sp,
			  to ? to->sp : fs->main_sp);
#else
	swapcontext(from ? &from->uc : &fs->main_uc,
		    to ? &to->uc : &fs->main_uc);
#endif
	gpsu_asan_finish(fs, from ? from->fake : fs->main_fake);
}

/* The next live thread after the current one, or NULL if none. */
static struct gpsu_fiber *gpsu_next_live(struct gpsu_fibers *fs)
{
	unsigned int i, j;

	for (i = 1; i <= fs->n; i++) {
		j = (fs->cur + i) % fs->n;
		if (!fs->f[j].done) {
			fs->cur = j;
			return &fs->f[j];
		}
	}
	return NULL;
}

static void gpsu_fiber_entry(void)
{
	struct gpsu_fibers *fs = gpsu_cur_fibers;
	struct gpsu_fiber *f = &fs->f[fs->cur];

	gpsu_asan_finish(fs, NULL);
	/* for gpsThreadIdx() in helpers that the body calls */
	gpsu_tls.thread_idx = f->ctx.tIdx;
	fs->k->thread(&f->ctx, fs->args);
	f->done = 1;
	fs->live--;
	gpsu_switch(fs, f, gpsu_next_live(fs));
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
	void **sp = (void **)(top - 64);

	(void)fs;
	/* r15 r14 r13 r12 rbx rbp, then the return address of the switch
	 * (16-byte aligned: entry starts as if called), then a null return
	 * address for the entry itself */
	memset(sp, 0, 6 * sizeof(void *));
	sp[6] = (void *)gpsu_fiber_entry;
	sp[7] = NULL;
	f->sp = sp;
#else
	getcontext(&f->uc);
	f->uc.uc_stack.ss_sp = f->stack;
	f->uc.uc_stack.ss_size = GPSU_FIBER_STACK;
	f->uc.uc_link = &fs->main_uc;
	makecontext(&f->uc, gpsu_fiber_entry, 0);
#endif
	f->done = 0;
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
	fs->cur = 0;
	gpsu_cur_fibers = fs;
	gpsu_switch(fs, NULL, &fs->f[0]);
	gpsu_cur_fibers = NULL;
	memset(&gpsu_tls.thread_idx, 0, sizeof(gpsu_tls.thread_idx));
	return gpsSuccess;
}

int gpsu_fiber_yield(void)
{
	struct gpsu_fibers *fs = gpsu_cur_fibers;
	struct gpsu_fiber *from, *to;

	if (!fs)
		return 0;
	from = &fs->f[fs->cur];
	to = gpsu_next_live(fs);
	if (to != from) {
		gpsu_switch(fs, from, to);
		gpsu_tls.thread_idx = from->ctx.tIdx;
	}
	return 1;
}

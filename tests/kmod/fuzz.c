// SPDX-License-Identifier: GPL-2.0
/*
 * Description: an ioctl fuzzer of /dev/gps.  Several threads make random
 * and mutated argument structs for every command (sizes, offsets and
 * lengths around page and allocation boundaries, devices in and out of
 * range, flags, reserved fields, handles valid, stale and foreign, user
 * pointers valid, NULL, unmapped, in a GPS view or in the kernel), random
 * ioctl numbers with the 0xBB magic and wrong sizes, interleaved with
 * mmap/munmap of views (valid and invalid offsets, lengths, flags), loads
 * and stores through views, fork (the child touches, calls and exits),
 * close and reopen of the file and the io_uring fence.  Every call must
 * succeed or fail with a documented errno; afterwards, with everything
 * closed, the driver's counters are back at their starting values.  The
 * kernel log is checked by the runner.
 *
 * Fixed seed and number of calls; for a soak:
 *   GPS_FUZZ_CALLS=N  calls in all (default 3000)
 *   GPS_FUZZ_SEED=S   seed (default 1)
 *   GPS_FUZZ_THREADS=T threads (default 4)
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/io_uring.h>

#define FZ_FDS		3	/* open files fuzzed at once */
#define FZ_HANDLES	48	/* handles remembered (live and stale) */
#define FZ_LIVE_MAX	20	/* live allocations before frees win */
#define FZ_VIEWS	24	/* views remembered */
#define FZ_BUF		(64 * 1024)
#define FZ_MAX_BYTES	(96LL << 20)	/* replica cap during the run */

enum fz_op {
	OP_VERSION, OP_DEVICE_INFO, OP_ALLOC, OP_FREE, OP_ADVISE, OP_FENCE,
	OP_MEMSET, OP_WRITE, OP_READ, OP_QUERY, OP_TRACK, OP_RANDOM_NR,
	OP_URING, OP_MMAP, OP_MUNMAP, OP_ACCESS, OP_FORK, OP_REOPEN,
	OP_NR
};

static const char *const fz_op_name[OP_NR] = {
	"VERSION", "DEVICE_INFO", "ALLOC", "FREE", "ADVISE", "FENCE",
	"MEMSET", "WRITE", "READ", "QUERY", "TRACK", "random-nr",
	"uring-fence", "mmap", "munmap", "access", "fork", "reopen",
};

/* Weights of the operations (sum is the modulus of the draw). */
static const int fz_weight[OP_NR] = {
	4, 6, 20, 12, 20, 12, 12, 12, 16, 12, 6, 12, 4, 20, 6, 20, 1, 1,
};

/* errnos counted; index 0 is success, the last one "other" */
static const int fz_errnos[] = {
	0, EINVAL, ENOMEM, EBUSY, EFAULT, ENOTTY, EINTR, ENOSPC,
	EACCES, EOVERFLOW, ENODEV, EPERM, EBADF,
};
#define FZ_NERR		(sizeof(fz_errnos) / sizeof(fz_errnos[0]))
#define FZ_IOCTL_ERRS	8	/* the first 8 are allowed for ioctls */

struct fz_handle {
	uint64_t handle;
	int slot, gen;		/* file it was made on */
	int live;
	uint64_t offset, stride, size;
	uint32_t ps;
};

struct fz_view {
	void *addr;
	size_t len;
	int live;
};

/* State shared by the threads. */
static struct {
	pthread_rwlock_t big;		/* write: close/reopen, munmap */
	pthread_mutex_t lock;		/* the tables below */
	int fd[FZ_FDS];
	int gen[FZ_FDS];
	struct fz_handle h[FZ_HANDLES];
	int nh;				/* next slot to reuse */
	struct fz_view v[FZ_VIEWS];
	int nr;				/* devices */
	unsigned char *guard;		/* 2 pages: RW then PROT_NONE */
	unsigned char *hole;		/* PROT_NONE */
	int ring_fd;			/* io_uring, or -1 */
	struct io_uring_sqe *sqes;
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail;
	unsigned int *cq_mask;
	struct io_uring_cqe *cqes;
	pthread_mutex_t ring_lock;
} fz;

struct fz_thread {
	pthread_t tid;
	uint64_t rng;
	long calls;
	long per_op[OP_NR][FZ_NERR + 1];
	long long op_us[OP_NR];		/* time spent per operation */
	long bad;			/* undocumented errnos */
	char bad_what[160];
	sigjmp_buf jb;
	volatile int in_access;
	long signals;
	unsigned char *buf;		/* FZ_BUF private bytes */
	unsigned char last[OP_NR][256];	/* last struct tried, for mutation */
};

static __thread struct fz_thread *fz_self;
static long fz_calls_left;

static uint64_t rnd_below(struct fz_thread *t, uint64_t n)
{
	return n ? rnd(&t->rng) % n : 0;
}

static int one_in(struct fz_thread *t, int n)
{
	return rnd_below(t, n) == 0;
}

/* A size or offset near an interesting boundary. */
static uint64_t rnd_len(struct fz_thread *t, uint64_t around)
{
	static const uint64_t b[] = {
		0, 1, 8, 63, 64, 127, 128, 4095, 4096, 4097, 8192,
		65535, 65536, 65537, 131072, 2097151, 2097152, 2097153,
		4194304,
	};
	uint64_t v;

	switch (rnd_below(t, 10)) {
	case 0:
		return rnd(&t->rng);
	case 1:
		return ~0ULL - rnd_below(t, 4096);
	case 2:
		return 1ULL << rnd_below(t, 64);
	case 3:
	case 4:
		v = around + rnd_below(t, 3) - 1;
		return v;
	case 5:
		return rnd_below(t, around + 1);
	case 6:
		return rnd_below(t, around / 4096 + 1) * 4096;
	default:
		v = b[rnd_below(t, sizeof(b) / sizeof(b[0]))];
		if (one_in(t, 4))
			v += rnd_below(t, 3) - 1;
		return v;
	}
}

static uint32_t rnd_dev(struct fz_thread *t)
{
	switch (rnd_below(t, 8)) {
	case 0:
		return fz.nr + rnd_below(t, 3);
	case 1:
		return one_in(t, 2) ? GPS_MAX_DEVICES : ~0U - rnd_below(t, 2);
	case 2:
		return rnd(&t->rng);
	default:
		return rnd_below(t, fz.nr);
	}
}

static uint32_t rnd_ps(struct fz_thread *t)
{
	static const uint32_t ps[] = {
		0, GPS_PAGE_4K, GPS_PAGE_64K, GPS_PAGE_2M,
	};

	if (one_in(t, 8))
		return one_in(t, 2) ? rnd(&t->rng) : (1U << rnd_below(t, 32));
	/* 2 MiB pages are costly to zero under emulation: fewer of them */
	return one_in(t, 10) ? ps[3] : ps[rnd_below(t, 3)];
}

/* Reserved fields: zero, now and then not. */
static void rnd_reserved(struct fz_thread *t, void *p, size_t len)
{
	if (one_in(t, 12))
		((unsigned char *)p)[rnd_below(t, len)] = rnd(&t->rng) | 1;
}

/* A file to call on: one of ours, sometimes a bad descriptor. */
static int rnd_fd(struct fz_thread *t, int *slot)
{
	int s = rnd_below(t, FZ_FDS);

	*slot = s;
	if (one_in(t, 64))
		return one_in(t, 2) ? -1 : 1000;
	return fz.fd[s];
}

/* A handle: live, stale, of another file, or made up. */
static struct fz_handle rnd_handle(struct fz_thread *t)
{
	struct fz_handle h = {};
	int i, start, stale;

	if (one_in(t, 10)) {
		h.handle = one_in(t, 2) ? rnd_below(t, 4) : rnd(&t->rng);
		h.size = rnd_len(t, 65536);
		h.ps = GPS_PAGE_4K;
		return h;
	}
	stale = one_in(t, 5);
	pthread_mutex_lock(&fz.lock);
	start = rnd_below(t, FZ_HANDLES);
	for (i = 0; i < FZ_HANDLES; i++) {
		struct fz_handle *c = &fz.h[(start + i) % FZ_HANDLES];

		if (c->handle && (c->live || stale)) {
			h = *c;
			break;
		}
	}
	pthread_mutex_unlock(&fz.lock);
	if (!h.ps)
		h.ps = GPS_PAGE_4K;
	return h;
}

/* A user pointer for @len bytes: valid mostly, else hostile. */
static uint64_t rnd_uptr(struct fz_thread *t, uint64_t len)
{
	int i;

	switch (rnd_below(t, 12)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)fz.hole + rnd_below(t, 4096);
	case 2:	/* runs into the guard page */
		return (uintptr_t)fz.guard + 4096 - rnd_below(t, 64);
	case 3:
		return 0xffff888000000000ULL + rnd_below(t, 1 << 20);
	case 4:
	case 5:	/* a GPS view: copies that fault on our own pages */
		pthread_mutex_lock(&fz.lock);
		for (i = 0; i < FZ_VIEWS; i++) {
			struct fz_view *v =
				&fz.v[(i + rnd(&t->rng)) % FZ_VIEWS];

			if (v->live && v->len > len) {
				uint64_t p = (uintptr_t)v->addr +
					     rnd_below(t, v->len - len);

				pthread_mutex_unlock(&fz.lock);
				return p;
			}
		}
		pthread_mutex_unlock(&fz.lock);
		/* fall through */
	default:
		if (len < FZ_BUF)
			return (uintptr_t)t->buf + rnd_below(t, FZ_BUF - len);
		return (uintptr_t)t->buf;
	}
}

static void count(struct fz_thread *t, int op, int ret, int err, int ioctl)
{
	unsigned int i, idx = FZ_NERR;

	if (ret >= 0)
		err = 0;
	for (i = 0; i < FZ_NERR; i++)
		if (fz_errnos[i] == err)
			idx = i;
	t->per_op[op][idx]++;
	t->calls++;
	/* EBADF only from the deliberately bad descriptors */
	if (ioctl && err && err != EBADF && (idx >= FZ_IOCTL_ERRS)) {
		if (!t->bad++)
			snprintf(t->bad_what, sizeof(t->bad_what),
				 "%s: errno %d (%s)", fz_op_name[op], err,
				 strerror(err));
	}
}

static void remember_alloc(int slot, const struct gps_alloc_args *a)
{
	struct fz_handle *h;

	pthread_mutex_lock(&fz.lock);
	h = &fz.h[fz.nh++ % FZ_HANDLES];
	/* a live entry pushed out stays allocated: freed at close */
	h->handle = a->handle;
	h->slot = slot;
	h->gen = fz.gen[slot];
	h->live = 1;
	h->offset = a->offset;
	h->stride = a->view_stride;
	h->size = a->alloc_size;
	h->ps = a->out_page_size;
	pthread_mutex_unlock(&fz.lock);
}

static int live_allocs(void)
{
	int i, n = 0;

	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_HANDLES; i++)
		n += fz.h[i].live;
	pthread_mutex_unlock(&fz.lock);
	return n;
}

static void forget_handle(uint64_t handle)
{
	int i;

	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_HANDLES; i++)
		if (fz.h[i].handle == handle)
			fz.h[i].live = 0;
	pthread_mutex_unlock(&fz.lock);
}

/* Mutate the previous struct of @op in place, or fill @p fresh. */
static void maybe_mutate(struct fz_thread *t, int op, void *p, size_t len)
{
	int i, n;

	if (!one_in(t, 6)) {
		memcpy(t->last[op], p, len);
		return;
	}
	memcpy(p, t->last[op], len);
	n = 1 + rnd_below(t, 3);
	for (i = 0; i < n; i++) {
		size_t at = rnd_below(t, len);

		switch (rnd_below(t, 3)) {
		case 0:
			((unsigned char *)p)[at] ^= 1 << rnd_below(t, 8);
			break;
		case 1:
			((unsigned char *)p)[at] = rnd(&t->rng);
			break;
		default:
			((unsigned char *)p)[at] = 0;
		}
	}
}

/* The argument pointer of an ioctl: the struct, or something hostile. */
static void *arg_ptr(struct fz_thread *t, void *p)
{
	if (!one_in(t, 24))
		return p;
	return (void *)(uintptr_t)rnd_uptr(t, 256);
}

static int do_ioctl(struct fz_thread *t, int op, unsigned long cmd,
		    void *p, size_t len)
{
	int slot, fd, ret;

	maybe_mutate(t, op, p, len);
	fd = rnd_fd(t, &slot);
	ret = ioctl(fd, cmd, arg_ptr(t, p));
	count(t, op, ret, errno, 1);
	return ret;
}

static void op_alloc(struct fz_thread *t)
{
	struct gps_alloc_args a = {};
	int slot, fd, ret;

	if (live_allocs() >= FZ_LIVE_MAX)
		return;
	a.size = one_in(t, 20) ? rnd_len(t, 1ULL << 30) :
		 1 + rnd_below(t, one_in(t, 8) ? 2 << 20 : 128 << 10);
	a.kind = one_in(t, 10) ? rnd_below(t, 5) :
		 one_in(t, 4) ? GPS_MEM_CONVENTIONAL :
		 one_in(t, 6) ? GPS_MEM_MANAGED : GPS_MEM_GPS;
	a.flags = one_in(t, 10) ? rnd(&t->rng) :
		  (one_in(t, 3) ? GPS_ALLOC_MANUAL : 0);
	if (a.kind != GPS_MEM_GPS && !one_in(t, 10))
		a.flags = 0;
	a.home = one_in(t, 8) ? rnd_dev(t) : rnd_below(t, fz.nr);
	a.page_size = rnd_ps(t);
	if (a.page_size == GPS_PAGE_2M && a.size > (8 << 20))
		a.size = 8 << 20;
	rnd_reserved(t, a.reserved, sizeof(a.reserved));
	if (one_in(t, 16))
		a.pad = rnd(&t->rng);
	maybe_mutate(t, OP_ALLOC, &a, sizeof(a));
	/* keep it bounded: a mutated size stays below 64 MiB */
	if (a.size > (64 << 20) && a.size < (1ULL << 40) && !one_in(t, 8))
		a.size &= (64 << 20) - 1;
	fd = rnd_fd(t, &slot);
	ret = ioctl(fd, GPS_IOC_ALLOC, &a);
	count(t, OP_ALLOC, ret, errno, 1);
	if (!ret && fd == fz.fd[slot])
		remember_alloc(slot, &a);
}

static void op_free(struct fz_thread *t)
{
	struct fz_handle h = rnd_handle(t);
	struct gps_free_args f = { .handle = h.handle };
	int fd, ret;

	rnd_reserved(t, f.reserved, sizeof(f.reserved));
	fd = fz.fd[h.slot];
	if (one_in(t, 6))
		fd = fz.fd[rnd_below(t, FZ_FDS)];	/* foreign */
	ret = ioctl(fd, GPS_IOC_FREE, &f);
	count(t, OP_FREE, ret, errno, 1);
	if (!ret)
		forget_handle(h.handle);
}

/* Range arguments of an allocation: aligned mostly, around its ends. */
static void rnd_range(struct fz_thread *t, struct fz_handle *h,
		      __u64 *off, __u64 *len, int aligned)
{
	uint64_t ps = h->ps ? h->ps : 4096, np = h->size / ps;

	if (aligned && !one_in(t, 5)) {
		uint64_t first = rnd_below(t, np + 1);

		*off = first * ps;
		*len = (1 + rnd_below(t, np - first + 1)) * ps;
		return;
	}
	*off = one_in(t, 3) ? rnd_len(t, h->size) : rnd_below(t, h->size + 1);
	*len = one_in(t, 3) ? rnd_len(t, h->size) :
	       rnd_below(t, h->size - (*off < h->size ? *off : h->size) + 2);
}

static int handle_fd(struct fz_thread *t, struct fz_handle *h)
{
	if (one_in(t, 8))
		return fz.fd[rnd_below(t, FZ_FDS)];
	return fz.fd[h->slot];
}

static void op_advise(struct fz_thread *t)
{
	struct fz_handle h = rnd_handle(t);
	struct gps_advise_args a = { .handle = h.handle };
	int ret;

	rnd_range(t, &h, &a.offset, &a.length, 1);
	a.advice = one_in(t, 10) ? rnd(&t->rng) : 1 + rnd_below(t, 3);
	a.device = rnd_dev(t);
	rnd_reserved(t, a.reserved, sizeof(a.reserved));
	maybe_mutate(t, OP_ADVISE, &a, sizeof(a));
	ret = ioctl(handle_fd(t, &h), GPS_IOC_ADVISE, arg_ptr(t, &a));
	count(t, OP_ADVISE, ret, errno, 1);
}

static void op_fence(struct fz_thread *t)
{
	struct gps_fence_args f = {};

	f.device = one_in(t, 3) ? GPS_FENCE_ALL : rnd_dev(t);
	if (one_in(t, 16))
		f.flags = rnd(&t->rng);
#ifdef GPS_FENCE_MASK
	/* a set of devices: empty, some, or some that do not exist */
	if (one_in(t, 4)) {
		f.flags = GPS_FENCE_MASK;
		f.device = one_in(t, 8) ? rnd_dev(t) : 0;
	}
	if (f.flags & GPS_FENCE_MASK || one_in(t, 16))
		f.device_mask = one_in(t, 8) ? rnd(&t->rng) :
				rnd_below(t, gps_all_mask(fz.nr) + 1);
#endif
	/* a host fence, alone or with devices, or the flag without a mask */
	if (one_in(t, 4))
		f.flags |= GPS_FENCE_HOST;
	rnd_reserved(t, f.reserved, sizeof(f.reserved));
	do_ioctl(t, OP_FENCE, GPS_IOC_FENCE, &f, sizeof(f));
}

static void op_memset(struct fz_thread *t)
{
	struct fz_handle h = rnd_handle(t);
	struct gps_memset_args m = { .handle = h.handle };
	int ret;

	rnd_range(t, &h, &m.offset, &m.length, 0);
	m.value = one_in(t, 8) ? rnd(&t->rng) : rnd_below(t, 256);
	if (one_in(t, 16))
		m.pad = rnd(&t->rng);
	rnd_reserved(t, m.reserved, sizeof(m.reserved));
	maybe_mutate(t, OP_MEMSET, &m, sizeof(m));
	ret = ioctl(handle_fd(t, &h), GPS_IOC_MEMSET, arg_ptr(t, &m));
	count(t, OP_MEMSET, ret, errno, 1);
}

static void op_copy(struct fz_thread *t, int op)
{
	struct fz_handle h = rnd_handle(t);
	struct gps_copy_args c = { .handle = h.handle };
	uint64_t uaddr, view = 0, vlen = 0;
	int ret;

	rnd_range(t, &h, &c.offset, &c.length, 0);
	if (c.length > FZ_BUF && !one_in(t, 4))
		c.length = 1 + rnd_below(t, FZ_BUF);
	c.uaddr = rnd_uptr(t, c.length);
	if (c.uaddr < (uintptr_t)t->buf ||
	    c.uaddr >= (uintptr_t)t->buf + FZ_BUF) {
		view = c.uaddr;
		vlen = c.length;
	}
	c.device = op == OP_READ || one_in(t, 8) ? rnd_dev(t) : 0;
	if (one_in(t, 16))
		c.pad = rnd(&t->rng);
	rnd_reserved(t, c.reserved, sizeof(c.reserved));
	uaddr = c.uaddr;
	maybe_mutate(t, op, &c, sizeof(c));
	/*
	 * A READ may write c.length bytes at c.uaddr: a mutated pointer or
	 * length could hit our own heap, so keep the pointer chosen above,
	 * and a length past our buffer goes to the guard page instead.
	 */
	c.uaddr = uaddr;
	if (c.uaddr >= (uintptr_t)t->buf &&
	    c.uaddr < (uintptr_t)t->buf + FZ_BUF &&
	    c.uaddr + c.length > (uintptr_t)t->buf + FZ_BUF)
		c.uaddr = (uintptr_t)fz.guard + 4096 - 16;
	else if (c.uaddr == view && c.length > vlen)
		c.length = vlen;
	ret = ioctl(handle_fd(t, &h), op == OP_READ ? GPS_IOC_READ :
		    GPS_IOC_WRITE, &c);
	count(t, op, ret, errno, 1);
}

static void op_query(struct fz_thread *t)
{
	struct fz_handle h = rnd_handle(t);
	struct gps_query_args q = { .handle = h.handle };
	uint64_t np = h.size / (h.ps ? h.ps : 4096);
	int ret;

	q.first_page = one_in(t, 4) ? rnd_len(t, np) : rnd_below(t, np + 1);
	q.nr_pages = one_in(t, 4) ? rnd(&t->rng) : rnd_below(t, np + 2);
	if (q.nr_pages > FZ_BUF / 8 && !one_in(t, 8))
		q.nr_pages = FZ_BUF / 8;
	q.subs = rnd_uptr(t, (uint64_t)q.nr_pages * 8);
	if (q.subs >= (uintptr_t)t->buf &&
	    q.subs < (uintptr_t)t->buf + FZ_BUF &&
	    q.subs + (uint64_t)q.nr_pages * 8 > (uintptr_t)t->buf + FZ_BUF)
		q.subs = (uintptr_t)fz.guard + 4096 - 8;
	rnd_reserved(t, q.reserved, sizeof(q.reserved));
	if (one_in(t, 16))
		q.pad = rnd(&t->rng);
	ret = ioctl(handle_fd(t, &h), GPS_IOC_QUERY, &q);
	count(t, OP_QUERY, ret, errno, 1);
}

static void op_simple(struct fz_thread *t, int op)
{
	union {
		struct gps_version_args v;
		struct gps_device_args d;
		struct gps_track_args k;
	} u;

	memset(&u, 0, sizeof(u));
	switch (op) {
	case OP_VERSION:
		rnd_reserved(t, &u.v, sizeof(u.v));
		do_ioctl(t, op, GPS_IOC_VERSION, &u.v, sizeof(u.v));
		break;
	case OP_DEVICE_INFO:
		u.d.device = rnd_dev(t);
		rnd_reserved(t, u.d.reserved, sizeof(u.d.reserved));
		do_ioctl(t, op, GPS_IOC_DEVICE_INFO, &u.d, sizeof(u.d));
		break;
	case OP_TRACK:
		u.k.op = one_in(t, 8) ? rnd(&t->rng) : 1 + rnd_below(t, 2);
		if (one_in(t, 16))
			u.k.flags = rnd(&t->rng);
		rnd_reserved(t, u.k.reserved, sizeof(u.k.reserved));
		do_ioctl(t, op, GPS_IOC_TRACK, &u.k, sizeof(u.k));
		break;
	}
}

/* Any number with our magic: wrong sizes, directions, unknown numbers. */
static void op_random_nr(struct fz_thread *t)
{
	unsigned int dir = rnd_below(t, 4), nr = rnd_below(t, 0x20);
	unsigned int size = one_in(t, 2) ? rnd_below(t, 128) :
			    rnd_below(t, 1 << 14);
	unsigned long cmd = _IOC(dir, GPS_IOC_MAGIC, nr, size);
	unsigned char *p = t->buf + FZ_BUF - 16384;
	int slot, fd, ret, i;

	for (i = 0; i < 256; i++)
		p[i] = one_in(t, 3) ? rnd(&t->rng) : 0;
	if (one_in(t, 16))	/* a raw number, magic or not */
		cmd = one_in(t, 2) ? (unsigned int)rnd(&t->rng) :
		      (GPS_IOC_MAGIC << 8) | rnd_below(t, 256);
	/* FIBMAP (1) and friends are the VFS's, not ours */
	if (_IOC_TYPE(cmd) != GPS_IOC_MAGIC)
		cmd = _IOC(dir, GPS_IOC_MAGIC, nr, size);
	fd = rnd_fd(t, &slot);
	ret = ioctl(fd, cmd, one_in(t, 8) ? (void *)(uintptr_t)rnd_uptr(t, 8) :
		    (void *)p);
	count(t, OP_RANDOM_NR, ret, errno, 1);
}

/* The io_uring fence, with good and bad payloads. */
static void op_uring(struct fz_thread *t)
{
	struct io_uring_sqe *sqe;
	struct gps_uring_fence *f;
	unsigned int tail, head, idx;
	int ret, res = 0, slot;

	if (fz.ring_fd < 0) {
		count(t, OP_URING, -1, ENOTTY, 0);
		return;
	}
	pthread_mutex_lock(&fz.ring_lock);
	tail = *fz.sq_tail;
	idx = tail & *fz.sq_mask;
	sqe = &fz.sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = rnd_fd(t, &slot);
	sqe->cmd_op = one_in(t, 8) ? rnd(&t->rng) : GPS_URING_CMD_FENCE;
	f = (struct gps_uring_fence *)sqe->cmd;
	f->device = one_in(t, 3) ? GPS_FENCE_ALL : rnd_dev(t);
	if (one_in(t, 10))
		f->flags = rnd(&t->rng);
#ifdef GPS_FENCE_MASK
	if (one_in(t, 4)) {
		f->flags = GPS_FENCE_MASK;
		f->device = one_in(t, 8) ? rnd_dev(t) : 0;
	}
	if (f->flags & GPS_FENCE_MASK || one_in(t, 10))
		f->device_mask = one_in(t, 8) ? rnd(&t->rng) :
				 1 + rnd_below(t, gps_all_mask(fz.nr));
	if (one_in(t, 4))
		f->flags |= GPS_FENCE_HOST;
#else
	if (one_in(t, 10))
		f->reserved = rnd(&t->rng);
#endif
	fz.sq_array[idx] = idx;
	__atomic_store_n(fz.sq_tail, tail + 1, __ATOMIC_RELEASE);
	ret = syscall(__NR_io_uring_enter, fz.ring_fd, 1, 1,
		      IORING_ENTER_GETEVENTS, NULL, 0);
	if (ret >= 0) {
		head = __atomic_load_n(fz.cq_head, __ATOMIC_ACQUIRE);
		while (head != __atomic_load_n(fz.cq_tail, __ATOMIC_ACQUIRE)) {
			res = fz.cqes[head & *fz.cq_mask].res;
			head++;
		}
		__atomic_store_n(fz.cq_head, head, __ATOMIC_RELEASE);
		count(t, OP_URING, res, -res, 1);
	} else {
		count(t, OP_URING, ret, errno, 0);
	}
	pthread_mutex_unlock(&fz.ring_lock);
}

static void ring_setup(void)
{
	struct io_uring_params p = {};
	unsigned char *sq, *cq;
	size_t sqlen, cqlen;

	fz.ring_fd = syscall(__NR_io_uring_setup, 8, &p);
	if (fz.ring_fd < 0)
		return;
	sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cqlen = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED |
		  MAP_POPULATE, fz.ring_fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cqlen, PROT_READ | PROT_WRITE, MAP_SHARED |
		  MAP_POPULATE, fz.ring_fd, IORING_OFF_CQ_RING);
	fz.sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       fz.ring_fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || fz.sqes == MAP_FAILED) {
		close(fz.ring_fd);
		fz.ring_fd = -1;
		return;
	}
	fz.sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	fz.sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	fz.sq_array = (unsigned int *)(sq + p.sq_off.array);
	fz.cq_head = (unsigned int *)(cq + p.cq_off.head);
	fz.cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	fz.cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	fz.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static void op_mmap(struct fz_thread *t)
{
	struct fz_handle h = rnd_handle(t);
	uint64_t off, len, dev;
	int prot, flags, slot, fd, i;
	void *p;

	/* a device's view, the host view (dev nr), or beyond */
	dev = one_in(t, 10) ? rnd_dev(t) : rnd_below(t, fz.nr + 1);
	off = h.offset + dev * h.stride;
	len = h.size;
	switch (rnd_below(t, 8)) {
	case 0:	/* part of the view */
		off += rnd_below(t, h.size / 4096 + 1) * 4096;
		len = (1 + rnd_below(t, h.size / 4096 + 1)) * 4096;
		break;
	case 1:	/* unaligned or made up */
		off = one_in(t, 2) ? off + 1 + rnd_below(t, 4095) :
		      rnd_len(t, 1ULL << 40) & ~4095ULL;
		break;
	case 2:
		len = rnd_len(t, h.size);
		if (len > (256 << 20))
			len = 256 << 20;
		break;
	}
	prot = one_in(t, 6) ? (int)rnd_below(t, 8) : PROT_READ | PROT_WRITE;
	flags = one_in(t, 6) ? MAP_PRIVATE : MAP_SHARED;
	if (one_in(t, 16))
		flags |= MAP_POPULATE;
	if (one_in(t, 32))
		flags |= MAP_NORESERVE | MAP_LOCKED;
	fd = rnd_fd(t, &slot);
	if (!one_in(t, 8))
		fd = fz.fd[h.slot];
	if (!len)
		len = 4096;
	p = mmap(NULL, len, prot, flags, fd, off);
	count(t, OP_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
	if (p == MAP_FAILED)
		return;
	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_VIEWS; i++)
		if (!fz.v[i].live)
			break;
	if (i == FZ_VIEWS) {
		pthread_mutex_unlock(&fz.lock);
		munmap(p, len);
		return;
	}
	fz.v[i].addr = p;
	fz.v[i].len = len;
	/* only writable, readable shared views are touched */
	fz.v[i].live = (prot & (PROT_READ | PROT_WRITE)) ==
		       (PROT_READ | PROT_WRITE) ? 1 : 2;
	pthread_mutex_unlock(&fz.lock);
}

/* Caller holds fz.big for writing. */
static void unmap_view(struct fz_view *v, struct fz_thread *t)
{
	size_t part;

	if (t && one_in(t, 4) && v->len > 4096) {
		/* unmap a piece first, then the rest */
		part = rnd_below(t, v->len / 4096) * 4096;
		munmap((char *)v->addr + part, 4096);
	}
	munmap(v->addr, v->len);
	v->live = 0;
}

static void op_munmap(struct fz_thread *t)
{
	int i = rnd_below(t, FZ_VIEWS);

	pthread_rwlock_unlock(&fz.big);
	pthread_rwlock_wrlock(&fz.big);
	if (fz.v[i].live)
		unmap_view(&fz.v[i], t);
	count(t, OP_MUNMAP, 0, 0, 0);
	pthread_rwlock_unlock(&fz.big);
	pthread_rwlock_rdlock(&fz.big);
}

static void fz_signal(int sig)
{
	struct fz_thread *t = fz_self;

	if (t && t->in_access) {
		t->in_access = 0;
		siglongjmp(t->jb, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Loads and stores through a view; SIGBUS/SIGSEGV (freed) are fine. */
static void op_access(struct fz_thread *t)
{
	struct fz_view v = {};
	int i, n;

	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_VIEWS; i++) {
		struct fz_view *c = &fz.v[(i + rnd(&t->rng)) % FZ_VIEWS];

		if (c->live == 1) {
			v = *c;
			break;
		}
	}
	pthread_mutex_unlock(&fz.lock);
	if (!v.live)
		return;
	if (sigsetjmp(t->jb, 1)) {
		t->signals++;
		count(t, OP_ACCESS, -1, EFAULT, 0);
		return;
	}
	t->in_access = 1;
	n = 1 + rnd_below(t, 16);
	for (i = 0; i < n; i++) {
		volatile unsigned char *p = (unsigned char *)v.addr +
					    rnd_below(t, v.len);
		size_t room = (unsigned char *)v.addr + v.len -
			      (unsigned char *)p;

		switch (rnd_below(t, 4)) {
		case 0:
			(void)*p;
			break;
		case 1:
			*p = rnd(&t->rng);
			break;
		case 2:
			memset((void *)p, rnd(&t->rng), room < 9000 ? room :
			       rnd_below(t, 9000));
			break;
		default:
			__atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
		}
	}
	t->in_access = 0;
	count(t, OP_ACCESS, 0, 0, 0);
}

/*
 * fork(): the child does not inherit views (VM_DONTCOPY) but shares the
 * files; it allocates, maps, writes, fences, touches a parent's view
 * address (SIGSEGV is fine) and exits without cleaning up.
 */
static void op_fork(struct fz_thread *t)
{
	struct gps_alloc_args a = {
		.size = 65536, .kind = GPS_MEM_GPS, .home = 0,
	};
	struct gps_fence_args f = { .device = GPS_FENCE_ALL };
	void *touch = NULL;
	int fd = fz.fd[rnd_below(t, FZ_FDS)], i, status;
	pid_t pid;

	pthread_mutex_lock(&fz.lock);
	for (i = 0; i < FZ_VIEWS; i++)
		if (fz.v[i].live == 1)
			touch = fz.v[i].addr;
	pthread_mutex_unlock(&fz.lock);
	pid = fork();
	if (pid < 0) {
		count(t, OP_FORK, -1, errno, 0);
		return;
	}
	if (!pid) {
		int own = open(GPS_DEV, O_RDWR);
		unsigned char *p;

		if (!ioctl(fd, GPS_IOC_ALLOC, &a)) {
			p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, a.offset);
			if (p != MAP_FAILED)
				p[100] = 1;
		}
		ioctl(fd, GPS_IOC_FENCE, &f);
		if (own >= 0 && !ioctl(own, GPS_IOC_ALLOC, &a)) {
			p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, own, a.offset);
			if (p != MAP_FAILED)
				p[5] = 5;
		}
		if (touch)
			*(volatile unsigned char *)touch = 1;
		_exit(0);
	}
	status = gps_wait_child(pid);
	/* exit 0, or SIGSEGV from the uninherited view */
	if (status == -1 || (!(WIFEXITED(status) && !WEXITSTATUS(status)) &&
			     !gps_killed_by(status, SIGSEGV)))
		count(t, OP_FORK, -1, ECHILD, 1);
	else
		count(t, OP_FORK, 0, 0, 0);
}

/* Close a file with whatever it holds (views stay) and open it again. */
static void op_reopen(struct fz_thread *t)
{
	int s = rnd_below(t, FZ_FDS), i;

	pthread_rwlock_unlock(&fz.big);
	pthread_rwlock_wrlock(&fz.big);
	close(fz.fd[s]);
	fz.fd[s] = open(GPS_DEV, one_in(t, 8) ? O_RDONLY : O_RDWR);
	pthread_mutex_lock(&fz.lock);
	fz.gen[s]++;
	for (i = 0; i < FZ_HANDLES; i++)
		if (fz.h[i].slot == s)
			fz.h[i].live = 0;	/* stale now */
	pthread_mutex_unlock(&fz.lock);
	count(t, OP_REOPEN, fz.fd[s] < 0 ? -1 : 0, errno, 0);
	pthread_rwlock_unlock(&fz.big);
	pthread_rwlock_rdlock(&fz.big);
}

static int fz_total_weight;

static long long fz_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int pick_op(struct fz_thread *t)
{
	int i, r;

	r = rnd_below(t, fz_total_weight);
	for (i = 0; i < OP_NR; i++) {
		r -= fz_weight[i];
		if (r < 0)
			return i;
	}
	return 0;
}

static void *fz_thread_main(void *arg)
{
	struct fz_thread *t = arg;
	int op;

	fz_self = t;
	while (__atomic_fetch_sub(&fz_calls_left, 1, __ATOMIC_RELAXED) > 0) {
		long long t0 = fz_now_us();

		pthread_rwlock_rdlock(&fz.big);
		op = pick_op(t);
		switch (op) {
		case OP_VERSION:
		case OP_DEVICE_INFO:
		case OP_TRACK:
			op_simple(t, op);
			break;
		case OP_ALLOC:
			op_alloc(t);
			break;
		case OP_FREE:
			op_free(t);
			break;
		case OP_ADVISE:
			op_advise(t);
			break;
		case OP_FENCE:
			op_fence(t);
			break;
		case OP_MEMSET:
			op_memset(t);
			break;
		case OP_WRITE:
		case OP_READ:
			op_copy(t, op);
			break;
		case OP_QUERY:
			op_query(t);
			break;
		case OP_RANDOM_NR:
			op_random_nr(t);
			break;
		case OP_URING:
			op_uring(t);
			break;
		case OP_MMAP:
			op_mmap(t);
			break;
		case OP_MUNMAP:
			op_munmap(t);
			break;
		case OP_ACCESS:
			op_access(t);
			break;
		case OP_FORK:
			op_fork(t);
			break;
		case OP_REOPEN:
			op_reopen(t);
			break;
		}
		pthread_rwlock_unlock(&fz.big);
		t->op_us[op] += fz_now_us() - t0;
	}
	return NULL;
}

FIXTURE(fuzz) {
	struct gps_fixture;
};

FIXTURE_SETUP(fuzz)
{
	static const char *const knobs[] = { "max_bytes", NULL };

	if (gps_fixture_setup(_metadata, gps_fx(self), 1, knobs))
		return;
	ASSERT_LE(0, self->start.nr_allocs);
	/* a cap so that huge allocations fail fast instead of draining nodes */
	ASSERT_EQ(0, gps_set_knob("max_bytes", FZ_MAX_BYTES));
}

FIXTURE_TEARDOWN(fuzz)
{
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * GPS_FUZZ_CALLS calls by GPS_FUZZ_THREADS threads: only documented
 * errnos, no stuck call, every counter back once all is closed.
 */
TEST_F_TIMEOUT(fuzz, ioctls_mmap_fork_threads, 86400)
{
	long calls = gps_env_long("GPS_FUZZ_CALLS", 3000);
	long seed = gps_env_long("GPS_FUZZ_SEED", 1);
	int nthreads = gps_env_long("GPS_FUZZ_THREADS", 4);
	long per_op[OP_NR][FZ_NERR + 1] = {}, total = 0, bad = 0, sigs = 0;
	long per_err[FZ_NERR + 1] = {};
	long long op_us[OP_NR] = {};
	struct fz_thread *th;
	struct sigaction sa = { .sa_handler = fz_signal };
	pthread_rwlockattr_t rwa;
	struct gps_usage u;
	long long t0 = gps_now_ms();
	unsigned int e;
	int i, op;

	ASSERT_GT(nthreads, 0);
	ASSERT_LE(nthreads, 64);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	for (op = 0; op < OP_NR; op++)
		fz_total_weight += fz_weight[op];
	/* writers first, or munmap/reopen would starve behind the readers */
	pthread_rwlockattr_init(&rwa);
	pthread_rwlockattr_setkind_np(&rwa,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fz.big, &rwa);
	pthread_mutex_init(&fz.lock, NULL);
	pthread_mutex_init(&fz.ring_lock, NULL);
	fz.nr = self->nr;
	for (i = 0; i < FZ_FDS; i++) {
		fz.fd[i] = open(GPS_DEV, O_RDWR);
		ASSERT_LE(0, fz.fd[i]);
	}
	fz.guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz.guard);
	ASSERT_EQ(0, mprotect(fz.guard + 4096, 4096, PROT_NONE));
	fz.hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	ASSERT_NE(MAP_FAILED, fz.hole);
	ring_setup();
	fz_calls_left = calls;

	th = calloc(nthreads, sizeof(*th));
	ASSERT_NE(NULL, th);
	for (i = 0; i < nthreads; i++) {
		th[i].rng = (seed + 1) * 0x9E3779B97F4A7C15ULL + i * 7919 + 1;
		th[i].buf = malloc(FZ_BUF);
		ASSERT_NE(NULL, th[i].buf);
		memset(th[i].buf, 0x5a, FZ_BUF);
		ASSERT_EQ(0, pthread_create(&th[i].tid, NULL, fz_thread_main,
					    &th[i]));
	}
	for (i = 0; i < nthreads; i++) {
		ASSERT_EQ(0, pthread_join(th[i].tid, NULL));
		total += th[i].calls;
		sigs += th[i].signals;
		if (th[i].bad && !bad)
			TH_LOG("thread %d: %s", i, th[i].bad_what);
		bad += th[i].bad;
		for (op = 0; op < OP_NR; op++)
			op_us[op] += th[i].op_us[op];
		for (op = 0; op < OP_NR; op++)
			for (e = 0; e <= FZ_NERR; e++) {
				per_op[op][e] += th[i].per_op[op][e];
				per_err[e] += th[i].per_op[op][e];
			}
	}

	/* Everything closed: tracking off, views gone, files released. */
	for (i = 0; i < FZ_VIEWS; i++)
		if (fz.v[i].live)
			unmap_view(&fz.v[i], NULL);
	for (i = 0; i < FZ_FDS; i++)
		if (fz.fd[i] >= 0)
			close(fz.fd[i]);
	if (fz.ring_fd >= 0)
		close(fz.ring_fd);

	printf("# fuzz: seed %ld, %d threads, %ld calls in %lld ms, "
	       "%ld signals in views\n", seed, nthreads, total,
	       gps_now_ms() - t0, sigs);
	for (op = 0; op < OP_NR; op++) {
		char line[512];
		int n = 0;

		n += snprintf(line + n, sizeof(line) - n, "# %-12s %6lld ms",
			      fz_op_name[op], op_us[op] / 1000);
		for (e = 0; e <= FZ_NERR; e++) {
			if (!per_op[op][e])
				continue;
			n += snprintf(line + n, sizeof(line) - n, " %s=%ld",
				      e == FZ_NERR ? "other" :
				      e ? strerrorname_np(fz_errnos[e]) : "ok",
				      per_op[op][e]);
		}
		printf("%s\n", line);
	}
	printf("# by errno:");
	for (e = 0; e <= FZ_NERR; e++)
		if (per_err[e])
			printf(" %s=%ld", e == FZ_NERR ? "other" :
			       e ? strerrorname_np(fz_errnos[e]) : "ok",
			       per_err[e]);
	printf("\n");
	fflush(stdout);

	EXPECT_EQ(0, bad);
	u = gps_usage_wait(self->start, 5000);
	EXPECT_TRUE(gps_usage_eq(self->start, u)) {
		TH_LOG("allocs %lld/%lld replica %lld/%lld twins %lld/%lld",
		       u.nr_allocs, self->start.nr_allocs, u.replica_pages,
		       self->start.replica_pages, u.twin_pages,
		       self->start.twin_pages);
	}
	for (i = 0; i < nthreads; i++)
		free(th[i].buf);
	free(th);
}

TEST_HARNESS_MAIN

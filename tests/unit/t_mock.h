/* SPDX-License-Identifier: MIT */
/*
 * t_mock.h - an in-process stand-in for gps.ko, for host unit tests.
 *
 * A test that includes this file defines ioctl() and mmap(): gps ioctls
 * (type GPS_IOC_MAGIC) are answered here, and mmap() of the device fd maps
 * a memfd per allocation, the same pages for every view, the host's too (one
 * coherent copy: the mock checks the library's bookkeeping and argument
 * handling, not publication). Every other call goes to the kernel.
 * Point GPSU_DEVICE at /dev/null: it opens, and its fd becomes the mock's.
 * Counters (fences per device, ...) are there for exact asserts.
 */
#ifndef T_MOCK_H
#define T_MOCK_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/gps.h>

#define MOCK_NDEV	2
#define MOCK_PAGE	GPS_PAGE_64K
#define MOCK_ALLOCS	64
#define MOCK_PAGES	256
#define MOCK_STRIDE	(1ULL << 30)

struct mock_alloc {
	int used;
	int memfd;
	char *master;
	uint64_t size, offset;
	uint32_t kind, flags, home, page_size;
	uint64_t subs[MOCK_PAGES];
};

static struct mock_alloc mock_allocs[MOCK_ALLOCS];
static pthread_mutex_t mock_lock = PTHREAD_MUTEX_INITIALIZER;
static int mock_fd = -1;
static unsigned long mock_fences[MOCK_NDEV + 1]; /* [MOCK_NDEV]: ALL */
static int mock_fence_fail;			 /* fences fail: EIO */
static unsigned long mock_fence_calls;		 /* GPS_IOC_FENCE calls */
static unsigned long mock_fence_masks;		 /* ... with GPS_FENCE_MASK */
static unsigned long mock_host_fences;		 /* ... with GPS_FENCE_HOST */
static int mock_track;				 /* answer GPS_IOC_TRACK */
static int mock_tracking;			 /* between START and STOP */
static unsigned long mock_nr_allocs;		 /* live allocations */
static unsigned long mock_collapses;		 /* GPS_ADVISE_COLLAPSE calls */

static void mock_setup(void)
{
	setenv("GPSU_DEVICE", "/dev/null", 1);
	/* fences through ioctl(), where the mock sees them */
	setenv("GPSU_NO_URING", "1", 1);
}

static struct mock_alloc *mock_get(uint64_t handle)
{
	if (!handle || handle > MOCK_ALLOCS || !mock_allocs[handle - 1].used)
		return NULL;
	return &mock_allocs[handle - 1];
}

static int mock_range(struct mock_alloc *a, uint64_t off, uint64_t len)
{
	return !len || off > a->size || len > a->size - off;
}

static int mock_copy(int write, struct gps_copy_args *c)
{
	struct mock_alloc *a = mock_get(c->handle);
	struct iovec local, remote;
	ssize_t n;

	if (!a || mock_range(a, c->offset, c->length) ||
	    (!write && c->device >= MOCK_NDEV))
		return EINVAL;
	local.iov_base = a->master + c->offset;
	local.iov_len = c->length;
	remote.iov_base = (void *)(uintptr_t)c->uaddr;
	remote.iov_len = c->length;
	n = write ? process_vm_readv(getpid(), &local, 1, &remote, 1, 0) :
		    process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
	return n == (ssize_t)c->length ? 0 : EFAULT;
}

static int mock_ioctl(int fd, unsigned long req, void *arg)
{
	uint64_t i, first, last, changed = 0;

	switch (req) {
	case GPS_IOC_VERSION: {
		struct gps_version_args *v = arg;

		mock_fd = fd;
		memset(v, 0, sizeof(*v));
		v->abi_version = GPS_ABI_VERSION;
		v->nr_devices = MOCK_NDEV;
		v->page_size = MOCK_PAGE;
		v->block_size = 128;
		v->node_mask = (1ULL << MOCK_NDEV) - 1;
		return 0;
	}
	case GPS_IOC_DEVICE_INFO: {
		struct gps_device_args *d = arg;

		if (d->device >= MOCK_NDEV)
			return EINVAL;
		d->node = d->device;
		d->nr_cpus = 1;
		d->mem_total = 1ULL << 30;
		d->mem_free = 1ULL << 29;
		return 0;
	}
	case GPS_IOC_ALLOC: {
		struct gps_alloc_args *al = arg;
		struct mock_alloc *a = NULL;
		uint32_t ps = al->page_size ? al->page_size : MOCK_PAGE;

		if ((al->kind != GPS_MEM_GPS &&
		     al->kind != GPS_MEM_CONVENTIONAL) ||
		    (al->flags & ~GPS_ALLOC_FLAGS) || al->home >= MOCK_NDEV ||
		    !al->size || (ps != GPS_PAGE_4K && ps != GPS_PAGE_64K &&
				  ps != GPS_PAGE_2M))
			return EINVAL;
		for (i = 0; i < MOCK_ALLOCS; i++)
			if (!mock_allocs[i].used) {
				a = &mock_allocs[i];
				break;
			}
		if (!a || al->size > (uint64_t)MOCK_PAGES * ps)
			return ENOMEM;
		memset(a, 0, sizeof(*a));
		a->size = (al->size + ps - 1) / ps * ps;
		a->memfd = memfd_create("gps-mock", MFD_CLOEXEC);
		if (a->memfd < 0 || ftruncate(a->memfd, a->size))
			return ENOMEM;
		a->master = (char *)syscall(SYS_mmap, NULL, a->size,
				PROT_READ | PROT_WRITE, MAP_SHARED, a->memfd, 0);
		a->used = 1;
		a->kind = al->kind;
		a->flags = al->flags;
		a->home = al->home;
		a->page_size = ps;
		a->offset = (i + 1) * MOCK_STRIDE * 4;
		for (first = 0; first < a->size / ps; first++)
			a->subs[first] = (al->kind == GPS_MEM_GPS &&
					  !(al->flags & GPS_ALLOC_MANUAL)) ?
					 (1ULL << MOCK_NDEV) - 1 :
					 1ULL << al->home;
		al->handle = i + 1;
		al->offset = a->offset;
		al->view_stride = MOCK_STRIDE;
		al->alloc_size = a->size;
		al->out_page_size = ps;
		mock_nr_allocs++;
		return 0;
	}
	case GPS_IOC_FREE: {
		struct gps_free_args *f = arg;
		struct mock_alloc *a = mock_get(f->handle);

		if (!a)
			return EINVAL;
		syscall(SYS_munmap, a->master, a->size);
		close(a->memfd);
		a->used = 0;
		mock_nr_allocs--;
		return 0;
	}
	case GPS_IOC_ADVISE: {
		struct gps_advise_args *ad = arg;
		struct mock_alloc *a = mock_get(ad->handle);

		if (!a || mock_range(a, ad->offset, ad->length) ||
		    ad->offset % a->page_size || ad->length % a->page_size ||
		    ad->device >= MOCK_NDEV ||
		    (ad->advice != GPS_ADVISE_SUBSCRIBE &&
		     ad->advice != GPS_ADVISE_UNSUBSCRIBE &&
		     ad->advice != GPS_ADVISE_COLLAPSE))
			return EINVAL;
		first = ad->offset / a->page_size;
		last = (ad->offset + ad->length) / a->page_size;
		if (ad->advice == GPS_ADVISE_COLLAPSE) {
			/* keep the copy the device sees: its own, or the
			 * lowest subscriber's */
			mock_collapses++;
			for (i = first; i < last; i++) {
				uint64_t old = a->subs[i];

				if (!(old & (1ULL << ad->device)))
					a->subs[i] = old & -old;
				else
					a->subs[i] = 1ULL << ad->device;
				changed += old != a->subs[i];
			}
			ad->pages_changed = changed;
			return 0;
		}
		if (ad->advice == GPS_ADVISE_UNSUBSCRIBE)
			for (i = first; i < last; i++)
				if (a->subs[i] == 1ULL << ad->device)
					return EBUSY;
		for (i = first; i < last; i++) {
			uint64_t old = a->subs[i];

			if (ad->advice == GPS_ADVISE_SUBSCRIBE)
				a->subs[i] |= 1ULL << ad->device;
			else
				a->subs[i] &= ~(1ULL << ad->device);
			changed += old != a->subs[i];
		}
		ad->pages_changed = changed;
		ad->pages_failed = 0;
		return 0;
	}
	case GPS_IOC_FENCE: {
		struct gps_fence_args *f = arg;

		if (f->flags & GPS_FENCE_MASK) {
			int host = !!(f->flags & GPS_FENCE_HOST);

			if (f->flags & ~(GPS_FENCE_MASK | GPS_FENCE_HOST) ||
			    f->device || (!f->device_mask && !host) ||
			    f->device_mask >> MOCK_NDEV || f->reserved[0])
				return EINVAL;
			if (mock_fence_fail)
				return EIO;
			for (i = 0; i < MOCK_NDEV; i++)
				if (f->device_mask & (1ULL << i))
					mock_fences[i]++;
			mock_fence_calls++;
			mock_fence_masks++;
			mock_host_fences += host;
			return 0;
		}
		if (f->flags || f->device_mask || f->reserved[0] ||
		    (f->device >= MOCK_NDEV && f->device != GPS_FENCE_ALL))
			return EINVAL;
		if (mock_fence_fail)
			return EIO;
		mock_fences[f->device == GPS_FENCE_ALL ? MOCK_NDEV :
			    f->device]++;
		mock_fence_calls++;
		return 0;
	}
	case GPS_IOC_MEMSET: {
		struct gps_memset_args *m = arg;
		struct mock_alloc *a = mock_get(m->handle);

		if (!a || mock_range(a, m->offset, m->length) || m->value > 255)
			return EINVAL;
		memset(a->master + m->offset, (int)m->value, m->length);
		return 0;
	}
	case GPS_IOC_WRITE:
		return mock_copy(1, arg);
	case GPS_IOC_READ:
		return mock_copy(0, arg);
	case GPS_IOC_QUERY: {
		struct gps_query_args *q = arg;
		struct mock_alloc *a = mock_get(q->handle);
		uint64_t total;

		if (!a)
			return EINVAL;
		total = a->size / a->page_size;
		if (q->first_page >= total)
			return EINVAL;
		if (q->nr_pages > total - q->first_page)
			q->nr_pages = (uint32_t)(total - q->first_page);
		memcpy((void *)(uintptr_t)q->subs, &a->subs[q->first_page],
		       q->nr_pages * sizeof(uint64_t));
		q->kind = a->kind;
		q->flags = a->flags;
		q->page_size = a->page_size;
		q->home = a->home;
		q->total_pages = total;
		return 0;
	}
#ifdef GPS_IOC_TRACK
	case GPS_IOC_TRACK: {
		struct gps_track_args *t = arg;

		if (!mock_track)
			return ENOTTY;
		if (t->flags || (t->op != GPS_TRACK_START &&
				 t->op != GPS_TRACK_STOP) ||
		    (t->op == GPS_TRACK_START) == mock_tracking)
			return EINVAL;
		mock_tracking = t->op == GPS_TRACK_START;
		return 0;
	}
#endif
	default:
		return ENOTTY;
	}
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(req) != GPS_IOC_MAGIC)
		return (int)syscall(SYS_ioctl, fd, req, arg);
	pthread_mutex_lock(&mock_lock);
	ret = mock_ioctl(fd, req, arg);
	pthread_mutex_unlock(&mock_lock);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint64_t i;

	if (fd < 0 || fd != mock_fd)
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd,
				       off);
	pthread_mutex_lock(&mock_lock);
	for (i = 0; i < MOCK_ALLOCS; i++) {
		struct mock_alloc *a = &mock_allocs[i];

		if (a->used && (uint64_t)off >= a->offset &&
		    (uint64_t)off <= a->offset + MOCK_NDEV * MOCK_STRIDE &&
		    (off - a->offset) % MOCK_STRIDE == 0 && len <= a->size) {
			int memfd = a->memfd;

			pthread_mutex_unlock(&mock_lock);
			return (void *)syscall(SYS_mmap, addr, len, prot,
					       flags, memfd, 0);
		}
	}
	pthread_mutex_unlock(&mock_lock);
	errno = EINVAL;
	return MAP_FAILED;
}

#endif /* T_MOCK_H */

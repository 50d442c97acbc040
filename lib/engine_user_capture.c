// SPDX-License-Identifier: MIT
/*
 * The native engine's write capture: asynchronous userfaultfd
 * write-protect (UFFD_FEATURE_WP_ASYNC: the kernel resolves a write
 * fault on a protected page itself and marks the page written) and
 * PAGEMAP_SCAN on /proc/self/pagemap with PM_SCAN_WP_MATCHING (find the
 * written pages and protect them again, in one walk). No thread reads the
 * userfaultfd: no fault is ever handed to user space.
 *
 * Debian 12's user-space headers (linux-libc-dev 6.1) have neither the
 * feature bits nor PAGEMAP_SCAN: their ABI values, from the 6.12 uapi
 * (<linux/userfaultfd.h>, <linux/fs.h>), are defined here where the
 * headers lack them, and the kernel is probed at run time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>

#include "gps_compat.h"
#include "engine_user.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY		1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM	(1 << 12)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED	(1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC		(1 << 15)
#endif

#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN		_IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WRITTEN		(1 << 1)
#define PM_SCAN_WP_MATCHING	(1 << 0)
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)
#endif

#define GPSU_UFFD_FEATURES	(UFFD_FEATURE_WP_ASYNC |		\
				 UFFD_FEATURE_WP_HUGETLBFS_SHMEM |	\
				 UFFD_FEATURE_WP_UNPOPULATED)
#define GPSU_SCAN_VEC		64	/* regions per PAGEMAP_SCAN call */

static int gpsu_uffd = -1;	/* the process's userfaultfd */
static int gpsu_pagemap = -1;	/* /proc/self/pagemap */
static size_t gpsu_psize;	/* the system page size */

/* $GPSU_TEST_MISSING names @what: pretend the kernel lacks it. */
static bool gpsu_test_missing(const char *what)
{
	const char *m = getenv("GPSU_TEST_MISSING");

	return m && !strcmp(m, what);
}

static int gpsu_ioctl_retry(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret;
}

/*
 * A userfaultfd: the syscall, for user-mode faults only where
 * vm.unprivileged_userfaultfd is 0 and we lack the privilege (our views
 * never fault in the kernel's own accesses: they are never handed out
 * to a system call as a buffer by the engine), else /dev/userfaultfd.
 */
static int gpsu_uffd_new(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK, fd;

	if (gpsu_test_missing("userfaultfd")) {
		errno = ENOSYS;
		return -1;
	}
	fd = (int)syscall(SYS_userfaultfd, flags);
	if (fd < 0 && (errno == EPERM || errno == EACCES))
		fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
			close(dev);
		}
	}
	return fd;
}

/* The features this kernel's userfaultfd offers (UFFDIO_API of 0). */
static int gpsu_uffd_features(uint64_t *features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int fd = gpsu_uffd_new(), ret;

	if (fd < 0)
		return errno;
	ret = gpsu_ioctl_retry(fd, UFFDIO_API, &api);
	close(fd);
	if (ret)
		return errno;
	*features = api.features;
	if (gpsu_test_missing("wp_async"))
		*features &= ~(uint64_t)UFFD_FEATURE_WP_ASYNC;
	return 0;
}

/*
 * The whole cycle once on a page of memfd memory: register, protect,
 * write, scan: the scan must find exactly that page.
 */
static int gpsu_capture_selftest(const char **why)
{
	int fd = memfd_create("gpsu-probe", MFD_CLOEXEC), ret;
	size_t n = 0;
	char *p;

	if (fd < 0)
		return errno;
	if (ftruncate(fd, (off_t)(2 * gpsu_psize))) {
		ret = errno;
		close(fd);
		return ret;
	}
	p = mmap(NULL, 2 * gpsu_psize, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return errno;
	ret = gpsu_capture_arm(p, 2 * gpsu_psize);
	if (ret) {
		*why = "UFFDIO_REGISTER_MODE_WP on memfd memory";
		goto out;
	}
	p[gpsu_psize] = 1;
	ret = gpsu_capture_harvest(p, 2 * gpsu_psize, NULL, &n, NULL);
	if (ret) {
		*why = "PAGEMAP_SCAN with PM_SCAN_WP_MATCHING (Linux 6.7+)";
		goto out;
	}
	if (n != 1) {
		*why = "PAGEMAP_SCAN found no written page";
		ret = ENOTSUP;
	}
out:
	munmap(p, 2 * gpsu_psize);
	return ret;
}

int gpsu_capture_open(const char **why)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = GPSU_UFFD_FEATURES };
	uint64_t features = 0;
	int ret;

	gpsu_psize = (size_t)sysconf(_SC_PAGESIZE);
	/* the diff and the push work on the core's 4 KiB pages */
	if (gpsu_psize != PAGE_SIZE) {
		*why = "a 4 KiB base page size";
		return ENOTSUP;
	}
	ret = gpsu_uffd_features(&features);
	if (ret) {
		*why = "userfaultfd (CONFIG_USERFAULTFD, or the privilege: vm.unprivileged_userfaultfd)";
		return ret;
	}
	if (!(features & UFFD_FEATURE_WP_ASYNC)) {
		*why = "UFFD_FEATURE_WP_ASYNC (Linux 6.7+)";
		return ENOTSUP;
	}
	if (!(features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM)) {
		*why = "UFFD_FEATURE_WP_HUGETLBFS_SHMEM";
		return ENOTSUP;
	}
	gpsu_uffd = gpsu_uffd_new();
	if (gpsu_uffd < 0) {
		*why = "userfaultfd";
		return errno;
	}
	if (gpsu_ioctl_retry(gpsu_uffd, UFFDIO_API, &api)) {
		ret = errno;
		*why = "UFFDIO_API with UFFD_FEATURE_WP_ASYNC";
		goto err_close;
	}
	if (gpsu_test_missing("pagemap_scan")) {
		ret = ENOTTY;
		*why = "PAGEMAP_SCAN (Linux 6.7+)";
		goto err_close;
	}
	gpsu_pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (gpsu_pagemap < 0) {
		ret = errno;
		/* a change of credentials makes /proc/self root's */
		*why = ret == EACCES && prctl(PR_GET_DUMPABLE) != 1 ?
		       "/proc/self/pagemap: the process is not dumpable (it "
		       "changed its user or group: prctl(PR_SET_DUMPABLE, 1) "
		       "after the change)" :
		       "/proc/self/pagemap";
		goto err_close;
	}
	ret = gpsu_capture_selftest(why);
	if (ret)
		goto err_close;
	return 0;

err_close:
	gpsu_capture_close();
	return ret;
}

void gpsu_capture_close(void)
{
	if (gpsu_pagemap >= 0)
		close(gpsu_pagemap);
	if (gpsu_uffd >= 0)
		close(gpsu_uffd);
	gpsu_pagemap = -1;
	gpsu_uffd = -1;
}

int gpsu_capture_arm(void *addr, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	if (gpsu_ioctl_retry(gpsu_uffd, UFFDIO_REGISTER, &reg))
		return errno;
	if (gpsu_ioctl_retry(gpsu_uffd, UFFDIO_WRITEPROTECT, &wp))
		return errno;
	return 0;
}

static uint64_t gpsu_capture_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The walks of gpsu_capture_harvest() (@flags its), _written() (0) and
 * _peek() (@max pages at most, 0: all; *@walked, when not NULL, the
 * bytes walked).
 */
static int gpsu_capture_scan(void *addr, size_t len,
			     void (*fn)(void *ctx, size_t page), void *ctx,
			     uint64_t *scan_ns, uint64_t flags, size_t max,
			     size_t *walked)
{
	uint64_t t0 = 0;
	struct page_region vec[GPSU_SCAN_VEC];
	uintptr_t start = (uintptr_t)addr, end = start + len;
	struct pm_scan_arg arg;
	size_t found = 0;
	long n, i;

	while (start < end && (!max || found < max)) {
		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.flags = flags;
		arg.start = start;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = GPSU_SCAN_VEC;
		arg.max_pages = max ? max - found : 0;
		arg.category_mask = PAGE_IS_WRITTEN;
		arg.return_mask = PAGE_IS_WRITTEN;
		if (scan_ns)
			t0 = gpsu_capture_now();
		n = gpsu_ioctl_retry(gpsu_pagemap, PAGEMAP_SCAN, &arg);
		if (scan_ns)
			*scan_ns += gpsu_capture_now() - t0;
		if (n < 0)
			return errno;
		for (i = 0; i < n; i++) {
			uintptr_t p;

			for (p = vec[i].start;
			     p < vec[i].end && (!max || found < max);
			     p += gpsu_psize, found++) {
				if (fn)
					fn(ctx, (p - (uintptr_t)addr) /
						    gpsu_psize);
				else
					(*(size_t *)ctx)++;
			}
		}
		/* the walk stops where the vector filled, or at the end */
		if (arg.walk_end <= start)
			break;
		start = arg.walk_end;
	}
	if (walked)
		*walked = (start < end ? start : end) - (uintptr_t)addr;
	return 0;
}

int gpsu_capture_harvest(void *addr, size_t len,
			 void (*fn)(void *ctx, size_t page), void *ctx,
			 uint64_t *scan_ns)
{
	return gpsu_capture_scan(addr, len, fn, ctx, scan_ns,
				 PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, 0,
				 NULL);
}

int gpsu_capture_written(void *addr, size_t len,
			 void (*fn)(void *ctx, size_t page), void *ctx)
{
	return gpsu_capture_scan(addr, len, fn, ctx, NULL, 0, 0, NULL);
}

/* Where gpsu_capture_peek() lists the pages it finds. */
struct gpsu_capture_list {
	size_t *pages;
	size_t n;
};

static void gpsu_capture_list_add(void *ctx, size_t page)
{
	struct gpsu_capture_list *l = ctx;

	l->pages[l->n++] = page;
}

int gpsu_capture_peek(void *addr, size_t len, size_t max, size_t *pages,
		      size_t *n, size_t *walked)
{
	struct gpsu_capture_list l = { pages, 0 };
	int ret;

	/* a range not registered fails, as in a harvest */
	ret = gpsu_capture_scan(addr, len, gpsu_capture_list_add, &l, NULL,
				PM_SCAN_CHECK_WPASYNC, max, walked);
	*n = l.n;
	return ret;
}

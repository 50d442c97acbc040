// SPDX-License-Identifier: MIT
/*
 * Description: a program killed (SIGKILL) in the middle of a kernel that
 * stores to GPS memory on every device leaves no replica behind: the
 * driver's replica page counters return to where they were.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/gps.h>

#include "kselftest_harness.h"
#include "t_lib.h"

/* Replica pages of every device, through a file of our own. */
static long raw_replica_pages(int fd)
{
	struct gps_version_args v;
	struct gps_device_args d;
	long sum = 0;
	unsigned int i;

	memset(&v, 0, sizeof(v));
	if (ioctl(fd, GPS_IOC_VERSION, &v))
		return -1;
	for (i = 0; i < v.nr_devices; i++) {
		memset(&d, 0, sizeof(d));
		d.device = i;
		if (ioctl(fd, GPS_IOC_DEVICE_INFO, &d))
			return -1;
		sum += (long)d.replica_pages;
	}
	return sum;
}

struct spin_args {
	unsigned int *data;	/* GPS, translated */
	size_t n;
};

static void spin(void *p)
{
	const struct spin_args *a = p;
	size_t i;

	for (;;)
		for (i = gpsBlockIdx().x; i < a->n; i += gpsGridDim().x)
			a->data[i]++;
}

static void child(int ready)
{
	struct spin_args a;
	gpsStream_t s[64];
	int ndev, d;
	char c = 1;

	if (gpsGetDeviceCount(&ndev))
		_exit(3);
	if (ndev > 64)
		ndev = 64;
	a.n = (4 << 20) / sizeof(unsigned int);
	if (gpsMallocGPS((void **)&a.data, a.n * sizeof(unsigned int), 0) ||
	    gpsMemset(a.data, 0, a.n * sizeof(unsigned int)))
		_exit(4);
	for (d = 0; d < ndev; d++) {
		gpsSetDevice(d);
		if (gpsStreamCreate(&s[d]) ||
		    gpsLaunchKernel(spin, gpsDim(4, 1, 1), gpsDim(1, 1, 1),
				    GPS_ARGS(&a, GPS_PTR(struct spin_args, data)),
				    s[d]))
			_exit(5);
	}
	usleep(300000);		/* the kernels are storing by now */
	if (write(ready, &c, 1) != 1)
		_exit(6);
	for (;;)
		pause();
}

/* SIGKILL during a kernel: every replica page is given back. */
TEST(kill_during_kernel)
{
	int fd, pipefd[2], status, i;
	long before, during, after = -1;
	pid_t pid;
	char c;

	fd = open("/dev/gps", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "no /dev/gps (gps.ko not loaded)");
	before = raw_replica_pages(fd);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(fd);
		close(pipefd[0]);
		child(pipefd[1]);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	during = raw_replica_pages(fd);
	ASSERT_LT(before, during);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	/* the release of the file may finish just after the exit */
	for (i = 0; i < 100; i++) {
		after = raw_replica_pages(fd);
		if (after == before)
			break;
		usleep(50000);
	}
	ASSERT_EQ(before, after);
	close(pipefd[0]);
	ASSERT_EQ(0, close(fd));
}

TEST_HARNESS_MAIN

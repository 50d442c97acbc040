// SPDX-License-Identifier: MIT
/*
 * Description: the examples (build/examples/mvmul, halo, transpose) run
 * on every device and agree with their own single-device runs or a CPU
 * reference (exit status 0).
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "t_lib.h"

/* build/tests/lib/examples -> build/examples/<name> */
static int run_example(const char *name, const char *args)
{
	char self[PATH_MAX], cmd[2 * PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd), "%s/../../examples/%s %s", dirname(self),
		 name, args);
	if (access(strtok(strdup(cmd), " "), X_OK))
		return -2;
	status = system(cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

/* mvmul: Listing 1 of the paper, result check against one device. */
TEST(mvmul)
{
	int ndev, ret;

	T_DEVICES(ndev);
	ret = run_example("mvmul", "-n 256 -i 2");
	if (ret == -2)
		SKIP(return, "build/examples/mvmul not built");
	ASSERT_EQ(0, ret);
}

/* halo: manual subscriptions, result check against one device. */
TEST(halo)
{
	int ndev, ret;

	T_DEVICES(ndev);
	ret = run_example("halo", "-p 2 -i 5");
	if (ret == -2)
		SKIP(return, "build/examples/halo not built");
	ASSERT_EQ(0, ret);
}

/* transpose: shared-memory tiles, barriers, a block reduction with a
 * device-scope atomic, checked against a CPU reference. */
TEST(transpose)
{
	int ndev, ret;

	T_DEVICES(ndev);
	ret = run_example("transpose", "-n 300");
	if (ret == -2)
		SKIP(return, "build/examples/transpose not built");
	ASSERT_EQ(0, ret);
}

TEST_HARNESS_MAIN

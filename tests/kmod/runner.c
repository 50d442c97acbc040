// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the test runner's own promise about the driver's state.
 * A program that leaves a knob of /sys/kernel/gps changed fails, by
 * name, and the runner writes the knobs back: a test killed by its
 * timeout skips its teardown, and what it left must fail that program,
 * not the ones after it (a block size of 4 KiB left by a timed-out
 * limits test once failed the queue tests).  A program that exits at
 * once ends its run at once.  Runs tests/runtests.sh on a program that
 * changes block_size and on one that does nothing; from the tree's top
 * (/gps in a guest).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "gps_test.h"

#define RUNNER	"tests/runtests.sh"

/* An executable shell script at @path with @body after its #! line. */
static int write_script(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\n%s", body);
	if (fclose(f))
		return -1;
	return chmod(path, 0755);
}

/*
 * No test here may depend on the machine being idle: each runs a whole
 * inner runner (tests/runtests.sh, its knob checks, its watchdog), which
 * on a loaded machine (a debug kernel under TCG beside other guests)
 * takes many seconds, so each has a harness timeout well above the
 * default 30 s.  What they assert is unchanged.
 */
FIXTURE(runner) {
	int unused;
};

FIXTURE_SETUP(runner)
{
	const char *series = getenv("GPS_VM_SERIES");

	/* they test tests/runtests.sh, not the driver: every other guest */
	if (series && !strcmp(series, "debug"))
		SKIP(return, "the runner's own tests: not under the debug kernel");
}

FIXTURE_TEARDOWN(runner)
{
}

TEST_F_TIMEOUT(runner, program_that_leaves_a_knob_fails_and_knobs_come_back,
	       120)
{
	static const char want[] =
		"GPS-RESULT: FAIL inner: leaker (left knobs changed: block_size=";
	char dir[] = "/tmp/gps-runner.XXXXXX", prog[64], cmd[160], line[512];
	char body[128];
	long long bs = gps_knob("block_size"), other;
	static char out[8192];	/* what the runner said, for a failure */
	int found = 0, status;
	size_t used = 0;
	FILE *f;

	if (access(RUNNER, R_OK))
		SKIP(return, "no " RUNNER " (run from the tree's top)");
	ASSERT_GT(bs, 0);
	other = bs == 4096 ? 128 : 4096;
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/leaker", dir);
	snprintf(body, sizeof(body), "echo %lld > " GPS_SYSFS "block_size\n",
		 other);
	ASSERT_EQ(0, write_script(prog, body));

	snprintf(cmd, sizeof(cmd), "sh " RUNNER " -p inner %s 2>&1", prog);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		found += !strncmp(line, want, sizeof(want) - 1);
		/* indented: none of its result lines starts a line here */
		if (used < sizeof(out))
			used += snprintf(out + used, sizeof(out) - used,
					 "  | %s", line);
	}
	status = pclose(f);
	unlink(prog);
	rmdir(dir);
	/* written back, then failed by name, and the run failed */
	ASSERT_EQ(bs, gps_knob("block_size")) {
		TH_LOG("the runner said:\n%s", out);
	}
	ASSERT_EQ(1, found) {
		TH_LOG("the runner said:\n%s", out);
	}
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(1, WEXITSTATUS(status));
}

/*
 * A program that exits at once is done at once: the runner's watchdog is
 * killed even when the program ends before the watchdog has made its own
 * process group (it then lived on, its sleep holding the runner's output
 * pipe open for the whole timeout: the test above timed out once in CI
 * with the knob left changed).  A setsid first in the inner runner's PATH
 * that starts the watchdog (sh -c) 0.3 s late, and the program at once,
 * makes that order certain.  Three runs, each under 120 s, a fifth of
 * the watchdog's 600 s: a watchdog left behind holds a run to the full
 * 600 s, which the harness's timeout ends first, and a loaded machine
 * makes a good run slow, but not by minutes (20 s was too tight: the
 * debug kernel at 2 x 2 on a busy 2-core machine took 20.04 s once).
 */
TEST_F_TIMEOUT(runner, quick_program_ends_its_run_at_once, 280)
{
	char dir[] = "/tmp/gps-runner.XXXXXX", prog[64], slow[64], cmd[256];
	char line[512];
	int i, status;
	FILE *f;

	if (access(RUNNER, R_OK))
		SKIP(return, "no " RUNNER " (run from the tree's top)");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/quick", dir);
	snprintf(slow, sizeof(slow), "%s/setsid", dir);
	ASSERT_EQ(0, write_script(prog, "exit 0\n"));
	/* the real one: the rest of PATH, without this directory */
	ASSERT_EQ(0, write_script(slow, "[ \"$1\" != sh ] || sleep 0.3\n"
				  "PATH=${PATH#*:} exec setsid \"$@\"\n"));
	snprintf(cmd, sizeof(cmd),
		 "PATH=%s:$PATH sh " RUNNER " -t 600 -p inner %s 2>&1", dir,
		 prog);
	for (i = 0; i < 3; i++) {
		long long t0 = gps_now_ms(), ms;

		f = popen(cmd, "r");
		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f))
			;
		status = pclose(f);
		ms = gps_now_ms() - t0;
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		ASSERT_GT(120000, ms) TH_LOG("run %d took %lld ms", i, ms);
	}
	unlink(slow);
	unlink(prog);
	rmdir(dir);
}

TEST_HARNESS_MAIN

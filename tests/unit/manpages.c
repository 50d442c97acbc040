// SPDX-License-Identifier: MIT
/*
 * Description: every page of man/ renders without an error or a warning,
 * from the top of the tree and from man/: groff -man -ww (or mandoc
 * -Tlint) over all of them, and man -l over one alias (a symbolic link
 * in man/) per page it names, as a reader of the tree would run it. An
 * alias was once a ".so man3/gpsLaunch.3" line, which man -l resolved
 * against the current directory and could not open.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#define MAN_DIR	T_TOP "/man"

static int have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

static int is_page(const char *name)
{
	const char *dot = strrchr(name, '.');

	return name[0] != '.' && dot && dot[1] >= '1' && dot[1] <= '9' &&
	       !dot[2];
}

/*
 * Runs @cmd (in @dir) on each page of man/ chosen by @pick, named as
 * seen from @dir, all in one command line; returns its exit status, and
 * what it wrote on stderr (and on stdout with @with_stdout) in @out.
 */
static int run_pages(const char *dir, const char *cmd,
		     int (*pick)(const char *path, const char *name),
		     int with_stdout, char *out, size_t size, int *npages)
{
	static char line[65536];
	char path[PATH_MAX];
	struct dirent *de;
	size_t len, n = 0;
	DIR *d = opendir(MAN_DIR);
	FILE *p;

	if (!d)
		return -1;
	*npages = 0;
	len = snprintf(line, sizeof(line), "cd '%s' && %s", dir, cmd);
	while ((de = readdir(d))) {
		if (!is_page(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", MAN_DIR, de->d_name);
		if (pick && !pick(path, de->d_name))
			continue;
		len += snprintf(line + len, sizeof(line) - len, " %s%s",
				strcmp(dir, MAN_DIR) ? "man/" : "",
				de->d_name);
		if (len >= sizeof(line)) {
			closedir(d);
			return -1;
		}
		(*npages)++;
	}
	closedir(d);
	snprintf(line + len, sizeof(line) - len,
		 with_stdout ? " 2>&1" : " 2>&1 >/dev/null");
	p = popen(line, "r");
	if (!p)
		return -1;
	n = fread(out, 1, size - 1, p);
	out[n] = 0;
	return pclose(p);
}

/* groff (or mandoc) over every page, from the top and from man/ */
TEST(every_page_renders_clean)
{
	const char *dirs[] = { T_TOP, MAN_DIR };
	const char *cmd;
	char out[16384];
	unsigned int i;
	int n, rc;

	if (have("groff"))
		cmd = "groff -man -t -k -Tutf8 -ww -z";
	else if (have("mandoc"))
		cmd = "mandoc -Tlint -Wwarning";
	else
		SKIP(return, "neither groff nor mandoc");
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		rc = run_pages(dirs[i], cmd, NULL, 0, out, sizeof(out), &n);
		ASSERT_LT(50, n);
		EXPECT_EQ(0, rc);
		EXPECT_STREQ("", out) TH_LOG("%s, in %s", cmd, dirs[i]);
	}
}

/* the aliases, one per page they name: no .so, symbolic links into man/ */
static char seen[64][NAME_MAX + 1];
static int nseen;

static int first_alias(const char *path, const char *name)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int i;

	(void)name;
	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		return 0;
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0 || n > NAME_MAX)
		return 0;
	target[n] = 0;
	for (i = 0; i < nseen; i++)
		if (!strcmp(seen[i], target))
			return 0;
	if (nseen < 64)
		strcpy(seen[nseen++], target);
	return 1;
}

static int not_a_link(const char *path, const char *name)
{
	struct stat st;

	(void)name;
	return !lstat(path, &st) && !S_ISLNK(st.st_mode);
}

TEST(aliases_render_with_man_l)
{
	const char *dirs[] = { T_TOP, MAN_DIR };
	char out[16384];
	unsigned int i;
	int n, rc;

	/* man -l resolves a page's .so against the reader's directory:
	 * an alias is a symbolic link (the pages' own .so lines, if any) */
	rc = run_pages(T_TOP, "grep -H '^\\.so' /dev/null", not_a_link, 1,
		       out, sizeof(out), &n);
	ASSERT_LT(50, n);
	EXPECT_EQ(1, WEXITSTATUS(rc));	/* no match */
	EXPECT_STREQ("", out) TH_LOG("pages with .so: make them links");
	if (!have("man"))
		SKIP(return, "no man");
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		nseen = 0;
		rc = run_pages(dirs[i], "man --warnings -E UTF-8 -l",
			       first_alias, 0, out, sizeof(out), &n);
		ASSERT_LT(0, n);
		EXPECT_EQ(0, rc);
		EXPECT_STREQ("", out) TH_LOG("man -l, in %s", dirs[i]);
	}
}

TEST_HARNESS_MAIN

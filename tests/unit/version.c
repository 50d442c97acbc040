// SPDX-License-Identifier: MIT
/*
 * Description: one version of libgpsu. GPSU_VERSION_MAJOR/MINOR in
 * include/gpsu.h are its source: lib/Makefile derives the shared
 * library's file name and the pkg-config Version from them (it passes
 * what it derived as T_LIB_VERSION), libgpsu.pc.in takes @VERSION@, and
 * the .TH line of every libgpsu page in man/ names "libgpsu MAJOR.MINOR".
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"
#include "gpsu.h"

#define STR_(x)	#x
#define STR(x)	STR_(x)
#define HDR_VERSION	STR(GPSU_VERSION_MAJOR) "." STR(GPSU_VERSION_MINOR)

#ifndef T_LIB_VERSION
#error "lib/Makefile passes T_LIB_VERSION, the version it builds"
#endif

TEST(makefile_takes_the_header_version)
{
	ASSERT_STREQ(HDR_VERSION, T_LIB_VERSION);
}

TEST(pc_takes_the_makefile_version)
{
	char line[256];
	int found = 0;
	FILE *f = fopen(T_TOP "/lib/libgpsu.pc.in", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Version:", 8)) {
			found = 1;
			EXPECT_STREQ("Version: @VERSION@\n", line);
		}
	fclose(f);
	ASSERT_EQ(1, found);
}

/* .TH name section date "libgpsu X.Y" "libgpsu Manual" */
TEST(man_pages_name_the_header_version)
{
	char path[PATH_MAX], line[512];
	struct dirent *de;
	int pages = 0;
	DIR *d = opendir(T_TOP "/man");

	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		char *q;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), T_TOP "/man/%s", de->d_name);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, ".TH ", 4))
				break;
		fclose(f);
		q = strstr(line, "\"libgpsu ");
		if (strncmp(line, ".TH ", 4) || !q)
			continue;	/* gpsctl(8) is the driver's */
		pages++;
		EXPECT_EQ(0, strncmp(q, "\"libgpsu " HDR_VERSION "\"",
				     strlen("\"libgpsu " HDR_VERSION "\"")))
			TH_LOG("%s: %s", de->d_name, line);
	}
	closedir(d);
	ASSERT_LT(50, pages);
}

TEST_HARNESS_MAIN

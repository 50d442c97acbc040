// SPDX-License-Identifier: MIT
/*
 * Description: tools/gps-kernel unpacks exactly the kernel image asked
 * for. With stand-ins for dpkg-query (the installed headers' version) and
 * apt-get (a download from a local directory) on PATH and a cache that
 * already holds older images of the same ABI name, each "image 6.1" call
 * unpacks the .deb of the headers' version, never an older cached one;
 * a version already cached is taken without a download; a .deb whose
 * name is right but whose contents are another version is refused.
 * Needs dpkg-deb (Debian); skips without it.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"

#ifndef T_TOP
#define T_TOP "."
#endif

#define KVER	"6.1.0-99-amd64"
#define PKG	"linux-image-" KVER

FIXTURE(gk) {
	char dir[64];
	char cmd[PATH_MAX * 2];
};

/* Runs a shell command line; 0 when it exited with status 0. */
static int sh(const char *fmt, ...)
{
	char line[PATH_MAX * 4];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ret = system(line);
	return ret == 0 ? 0 : -1;
}

/* Builds <dir>/<where>/PKG_<v>_amd64.deb whose vmlinuz says "image <body>". */
static int make_deb(const char *dir, const char *where, const char *v,
		    const char *body)
{
	return sh("set -e; d=%s/pkg; rm -rf $d; mkdir -p $d/DEBIAN $d/boot; "
		  "printf 'Package: %s\\nVersion: %s\\nArchitecture: amd64\\n"
		  "Maintainer: gps tests <gps@localhost>\\n"
		  "Description: test image\\n' > $d/DEBIAN/control; "
		  "echo 'image %s' > $d/boot/vmlinuz-%s; "
		  "dpkg-deb --root-owner-group -Zgzip -b $d "
		  "%s/%s/%s_%s_amd64.deb >/dev/null",
		  dir, PKG, v, body, KVER, dir, where, PKG, v);
}

/* tools/gps-kernel image 6.1 with the headers at version @v; 0 if it
 * printed the vmlinuz path and that file says "image @want". */
static int image(const char *dir, const char *v, const char *want)
{
	char path[PATH_MAX], expect[PATH_MAX], line[256];
	FILE *f;
	int ok;

	if (sh("cd %s && GK_VERSION='%s' GK_REPO=%s/repo BUILD=%s/build "
	       "PATH=%s/bin:$PATH %s/tools/gps-kernel image 6.1 >%s/out "
	       "2>%s/err", dir, v, dir, dir, dir, T_TOP, dir, dir))
		return -1;
	snprintf(path, sizeof(path), "%s/out", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	snprintf(expect, sizeof(expect), "%s/build/6.1/image/boot/vmlinuz-%s",
		 dir, KVER);
	line[strcspn(line, "\n")] = '\0';
	if (!ok || strcmp(line, expect))
		return -1;
	f = fopen(expect, "r");
	if (!f)
		return -1;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	snprintf(expect, sizeof(expect), "image %s\n", want);
	return ok && !strcmp(line, expect) ? 0 : -1;
}

FIXTURE_SETUP(gk)
{
	char script[PATH_MAX];
	FILE *f;

	snprintf(self->dir, sizeof(self->dir), "/tmp/gps-kernel-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	if (sh("command -v dpkg-deb >/dev/null && command -v dpkg >/dev/null"))
		SKIP(return, "no dpkg-deb");
	ASSERT_EQ(0, sh("mkdir -p %s/bin %s/repo %s/build/cache", self->dir,
			self->dir, self->dir));
	/* the installed headers: one package, at $GK_VERSION */
	snprintf(script, sizeof(script), "%s/bin/dpkg-query", self->dir);
	f = fopen(script, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "#!/bin/sh\n"
		"echo \"linux-headers-%s $GK_VERSION installed\"\n", KVER);
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, chmod(script, 0755));
	/* apt-get download NAME=VERSION: copy from $GK_REPO, as apt names it */
	snprintf(script, sizeof(script), "%s/bin/apt-get", self->dir);
	f = fopen(script, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "#!/bin/sh\n"
		"[ \"$1\" = download ] || exit 0\n"
		"for a; do case $a in linux-*=*) ;; *) continue ;; esac\n"
		"  p=${a%%%%=*}; v=${a#*=}\n"
		"  cp \"$GK_REPO/${p}_${v}_amd64.deb\" . || exit 100\n"
		"done\n");
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, chmod(script, 0755));
}

FIXTURE_TEARDOWN(gk)
{
	if (self->dir[0] && strncmp(self->dir, "/tmp/gps-kernel-test.", 21) == 0)
		sh("rm -rf %s", self->dir);
}

/* A newer image of the same ABI name while older ones sit in the cache:
 * the one the headers name is downloaded and unpacked, round after
 * round (the cache keeps growing). */
TEST_F(gk, newest_over_cached)
{
	char v[32];
	int i;

	for (i = 0; i < 6; i++) {
		snprintf(v, sizeof(v), "6.1.%d-1", 90 + i);
		ASSERT_EQ(0, make_deb(self->dir, "build/cache", v, v));
	}
	for (i = 0; i < 5; i++) {
		snprintf(v, sizeof(v), "6.1.%d-1", 100 + i);
		ASSERT_EQ(0, make_deb(self->dir, "repo", v, v));
		ASSERT_EQ(0, image(self->dir, v, v)) {
			sh("cat %s/err >&2; ls %s/build/cache >&2", self->dir,
			   self->dir);
		}
	}
	/* tilde versions (backports) match exactly too */
	ASSERT_EQ(0, make_deb(self->dir, "repo", "6.1.105~bpo12+1",
			      "6.1.105~bpo12+1"));
	ASSERT_EQ(0, image(self->dir, "6.1.105~bpo12+1", "6.1.105~bpo12+1"));
}

/* A version already in the cache is unpacked without a download (the
 * repository is empty: a download would fail). */
TEST_F(gk, cached_exact)
{
	ASSERT_EQ(0, make_deb(self->dir, "build/cache", "6.1.90-1",
			      "6.1.90-1"));
	ASSERT_EQ(0, make_deb(self->dir, "build/cache", "6.1.91-1",
			      "6.1.91-1"));
	ASSERT_EQ(0, make_deb(self->dir, "build/cache", "6.1.92-1",
			      "6.1.92-1"));
	ASSERT_EQ(0, image(self->dir, "6.1.91-1", "6.1.91-1"));
	ASSERT_EQ(0, image(self->dir, "6.1.90-1", "6.1.90-1"));
}

/* A cached .deb named for the version asked but holding another one is
 * refused rather than unpacked. */
TEST_F(gk, mislabelled_deb_refused)
{
	ASSERT_EQ(0, make_deb(self->dir, "build/cache", "6.1.90-1",
			      "6.1.90-1"));
	ASSERT_EQ(0, sh("mv %s/build/cache/%s_6.1.90-1_amd64.deb "
			"%s/build/cache/%s_6.1.93-1_amd64.deb", self->dir, PKG,
			self->dir, PKG));
	ASSERT_NE(0, image(self->dir, "6.1.93-1", "6.1.90-1"));
}

TEST_HARNESS_MAIN

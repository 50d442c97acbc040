#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# install-deps.sh: install what gps needs to build and test on Debian 12,
# as root.  Idempotent and quiet: when everything is there it does nothing
# (not even apt-get update).
#
#   compilers and kbuild    build-essential bc kmod
#   kernels                 linux-headers-amd64 (6.1) and
#                           linux-headers-6.12-amd64 (6.12): the module is
#                           built against both; the images are unpacked
#                           into build/ by tools/gps-kernel, not installed
#   kselftest harness       linux-source-6.1, linux-source-6.12
#   test bed                qemu-system-x86 busybox-static cpio gzip xz-utils
#   library                 libnuma-dev liburing-dev
#   tools                   python3
#   DKMS                    dkms (make dkms-install; make check builds
#                           gps.ko through it for 6.1 and 6.12)
#   perf                    linux-perf (tools/gps-trace; the guests of
#                           make check that carry it)
#   the debug kernel        flex bison libelf-dev (tools/gps-debug-kernel)
#   make lint               shellcheck (every shell script of the tree)
#   make docs               python3-sphinx (Documentation/ with the
#                           kernel's kernel-doc extension, which
#                           tools/gps-kernel sphinx extracts from
#                           linux-source-6.12 into build/)
#   make figures            python3-matplotlib (tools/gps-plot's PNGs;
#                           without it, tables only)
set -euo pipefail

pkgs=(
	build-essential bc kmod
	linux-headers-amd64 linux-headers-6.12-amd64
	linux-source-6.1 linux-source-6.12
	qemu-system-x86 busybox-static cpio gzip xz-utils
	libnuma-dev liburing-dev
	python3
	dkms linux-perf
	flex bison libelf-dev
	shellcheck
	python3-sphinx
	python3-matplotlib
)

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps.sh: missing ${missing[*]}; run as root" >&2
	exit 1
fi
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q=2
apt-get install -y -q=2 --no-install-recommends "${missing[@]}" >/dev/null

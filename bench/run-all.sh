#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run-all.sh: the workload benchmarks of Documentation/benchmarks.rst, one
# after the other, as root in the VM (busybox sh is enough):
#
#   1. paradigms: every workload in every paradigm (Fig. 8-11)
#   2. link sweep: local:remote bandwidth ratios (Fig. 13): memcpy,
#      gps-auto, gps-all, rdl
#   3. queue sweep: write-queue capacity vs coalescing (Fig. 14)
#   4. threads: what a kernel thread costs against a plain C loop
#      (threads: key=value lines, which tools/gps-plot ignores)
#
#   bench/run-all.sh [-q] [-d devices] [-- extra paradigms options]
#
#   -q   quick mode: small sizes, 3 iterations, two sweep points each
#
# Output: key=value records on stdout (tools/gps-plot reads them from a
# saved console log).  Each step begins with "##### step i of 4, elapsed,
# ETA" when tools/gps-progress.sh is found (/gps/tools/ in the VM) and
# prints (GPS_PROGRESS=1, which tools/gps-vm sets when its console goes to
# a terminal), so that CI logs stay as they were.  Exit status: non-zero
# if any benchmark failed or any result differed from the single-device
# run.  Every knob a sweep changes is restored by paradigms itself.
#
# In the VM, from the host:
#   tools/gps-vm -k 6.12 -n 4 -t 1200 -o build/bench/vm-4.log -- \
#           build/bench/run-all.sh
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=$here/paradigms
quick=0
devs=
while getopts "qd:h" opt; do
	case $opt in
	q) quick=1 ;;
	d) devs="-d $OPTARG" ;;
	*) sed -n '4,/^set -u/{/^#/s/^# \{0,1\}//p}' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ "$quick" = 1 ]; then
	size=-q
	ratios=0,16
	caps=16,512
else
	size=
	ratios=0,3,8,32
	caps=8,64,512,4096
fi

# "step i of n, elapsed, ETA" lines: tools/gps-progress.sh, from
# build/bench/ or bench/ (in the VM: /gps/tools/); none without it
progress=
for f in "$here/../../tools/gps-progress.sh" "$here/../tools/gps-progress.sh"; do
	[ -r "$f" ] && { progress=$f; break; }
done
if [ -n "$progress" ]; then
	# shellcheck source=tools/gps-progress.sh disable=SC1091
	. "$progress"
else
	progress_init() { :; }
	progress_step() { :; }
	progress_done() { :; }
fi

rc=0
# step NAME [paradigms options]
step() {
	progress_step "$1"
	shift
	echo "# run-all: $*"
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$bin" $size $devs "$@" || rc=1
	echo "# run-all: $(($(date +%s) - start)) s"
	progress_done
}

nodes=0
for _ in /sys/devices/system/node/node[0-9]*; do nodes=$((nodes + 1)); done
echo "# run-all: $(uname -r), $nodes node(s), quick=$quick"
progress_init 4
step paradigms "$@"
step link-sweep -L "$ratios" "$@"
step queue-sweep -Q "$caps" "$@"
progress_step threads
echo "# run-all: threads"
if [ "$quick" = 1 ]; then
	"$here/threads" -n 1000000 -r 3 || rc=1
else
	"$here/threads" || rc=1
fi
progress_done
echo "# run-all: status $rc"
exit $rc

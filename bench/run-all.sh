#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run-all.sh: the workload benchmarks of Documentation/benchmarks.rst, one
# after the other, as root in the VM (busybox sh is enough):
#
#   1. paradigms: every workload in every paradigm, link unlimited
#      (Fig. 9-11)
#   2. links: every paradigm at the paper's link ratios, 56 (PCIe 3.0)
#      and 3 (NVLink-like): Fig. 8 (Fig. 12 in a 16-node guest, where the
#      paper's 7, PCIe 6.0, is added)
#   3. link sweep: local:remote bandwidth ratios (Fig. 13): memcpy,
#      gps-auto, gps-all, rdl
#   4. queue sweep: write-queue capacity vs coalescing (Fig. 14)
#   5. page sizes: gps-auto with 4 KiB, 64 KiB and 2 MiB GPS pages at
#      ratio 56 (the paper's page-size study)
#   6. threads: what a kernel thread costs against a plain C loop
#      (threads: key=value lines, which tools/gps-plot ignores)
#
#   bench/run-all.sh [-q] [-d devices] [-- extra paradigms options]
#
#   -q   quick mode: small sizes, 3 iterations, two sweep points each
#
# Output: key=value records on stdout (tools/gps-plot reads them from a
# saved console log).  Each step begins with "##### step i of 6, elapsed,
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
	links=56
	psizes=4096,65536
else
	size=
	ratios=0,3,8,32
	caps=8,64,512,4096
	links=56,3
	psizes=4096,65536,2097152
fi
all=memcpy,memcpy-needed,gps-auto,gps-paper,gps-all,um,um-fault,rdl,home,finepack,proact,carve

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
[ "$nodes" -ge 16 ] && [ "$quick" = 0 ] && links=7,$links
echo "# run-all: $(uname -r), $nodes node(s), quick=$quick"
progress_init 6
step paradigms "$@"
step links -L "$links" -p "$all" "$@"
step link-sweep -L "$ratios" "$@"
step queue-sweep -Q "$caps" "$@"
step page-sizes -L 56 -P "$psizes" -p gps-auto "$@"
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

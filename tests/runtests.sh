#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# runtests.sh: run test programs one by one, in the spirit of liburing's
# test/runtests.sh.  Runs in the gps-vm guest (busybox sh) and on the host.
#
#   tests/runtests.sh [-m MODULE.ko] [-K] [-t SECS] [-p PREFIX] TEST...
#
#   -m KO     insmod KO first (a test of its own) and rmmod it at the end
#             (another test: it must succeed)
#   -K        check the kernel log: a marker is written to /dev/kmsg before
#             each test, and the test fails if the log after it holds a
#             BUG, WARNING, Oops, lockdep, KASAN, kmemleak or GPF report;
#             with kmemleak (the debug kernel), a scan after the last test
#             and one after rmmod are tests of their own: any unreferenced
#             object fails them
#   -t SECS   per-test timeout (default: $GPS_TEST_TIMEOUT or 300)
#   -p PREFIX prefix of the names in result lines (e.g. "6.12/4n")
#
# A test program is a kselftest (KTAP output: every "ok"/"not ok" line is
# one result, "# SKIP" ones are skips) or a plain program (exit 0 passes,
# exit 4 skips, anything else fails).  A KTAP program exiting non-zero with
# no failed case, or killed by the timeout, adds one failure.
#
# Prints "GPS-RESULT: PASS|FAIL|SKIP name" per result, "GPS-TIME: name Ns"
# per program and, last,
# "GPS-SUMMARY: passed=P failed=F skipped=S"; exits 1 if F > 0.
#
# A program past its timeout gets "GPS-BLOCKED:" lines first: the kernel
# stacks of the tasks in D state (a deadlock names its waiters), and a
# sysrq-w report in the kernel log (runtests.sh --blocked prints them).
set -eu

self=$(cd "$(dirname "$0")" && pwd)/${0##*/}

if [ "${1:-}" = --blocked ]; then
	echo "GPS-BLOCKED: the tasks in D state, with their kernel stacks"
	for st in /proc/[0-9]*/status; do
		grep -q '^State:.D' "$st" 2>/dev/null || continue
		d=${st%/status}
		echo "GPS-BLOCKED: ${d#/proc/} $(cat "$d/comm" 2>/dev/null)"
		sed 's/^/GPS-BLOCKED:   /' "$d/stack" 2>/dev/null || true
	done
	# sysrq-w prints at KERN_INFO: above a quiet console's level
	if [ -w /proc/sysrq-trigger ]; then
		lvl=$(cut -f1 /proc/sys/kernel/printk)
		echo 7 >/proc/sys/kernel/printk
		echo w >/proc/sysrq-trigger
		echo "$lvl" >/proc/sys/kernel/printk
	fi
	exit 0
fi

module=
kcheck=0
tmo=${GPS_TEST_TIMEOUT:-300}
prefix=
while getopts "m:Kt:p:" opt; do
	case $opt in
	m) module=$OPTARG ;;
	K) kcheck=1 ;;
	t) tmo=$OPTARG ;;
	p) prefix="$OPTARG: " ;;
	*) echo "usage: $0 [-m KO] [-K] [-t SECS] [-p PREFIX] TEST..." >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))

passed=0
failed=0
skipped=0
seq=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/runtests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# What in the kernel log makes a test fail.
bad='BUG:|WARNING:|Oops|general protection|KASAN:|kmemleak|UBSAN:'
bad="$bad|possible circular locking|inconsistent lock state"
bad="$bad|possible recursive locking|suspicious RCU usage"
bad="$bad|lock held when returning|bad unlock balance|Kernel panic"
bad="$bad|soft lockup|hard LOCKUP|blocked for more than|list_(add|del) corruption"
bad="$bad|refcount_t:|Unable to handle|Call Trace:"

result() {	# result PASS|FAIL|SKIP name [why]
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	esac
	echo "GPS-RESULT: $1 $prefix$2${3:+ ($3)}"
}

# The driver's knobs (/sys/kernel/gps, the files of mode 644) as "name
# value" lines, in the order of the driver's table /sys/kernel/gps/knobs,
# in which saved values can be written back one by one (a new block size
# or capacity resets the watermark, never an earlier knob); by name for
# a driver without the table.  A program must leave them as it found
# them: one killed by a timeout skips its teardown, and its knobs would
# fail later programs for no reason of theirs (a block size of 4 KiB
# left by limits failed the queue test).
knobs_dump() {
	[ -d /sys/kernel/gps ] || return 0
	if [ -r /sys/kernel/gps/knobs ]; then
		names=$(cut -d' ' -f1 /sys/kernel/gps/knobs)
	else
		names=$(find /sys/kernel/gps -maxdepth 1 -type f -perm -u+w |
			sed 's|.*/||' | sort)
	fi
	# read, not cat: a fork per knob twice per program cost the debug
	# kernel's guest 3 to 5 s a program
	for k in $names; do
		v=
		{ read -r v <"/sys/kernel/gps/$k"; } 2>/dev/null || [ -n "$v" ] ||
			continue
		case $v in *"["*) v=${v#*[}; v=${v%%]*} ;; esac  # "[a] b": a
		echo "$k $v"
	done
}

# knobs_check name: fail @name if it changed a knob, and write them back
knobs_check() {
	[ -s "$tmp/knobs0" ] || return 0
	knobs_dump >"$tmp/knobs1"
	# gone (a test unloaded gps.ko): not this check's business
	[ -s "$tmp/knobs1" ] || return 0
	! cmp -s "$tmp/knobs0" "$tmp/knobs1" || return 0
	changed=$(awk 'NR == FNR { v[$1] = $2; next }
		v[$1] != $2 { printf "%s%s=%s (was %s)", s, $1, $2, v[$1]; s = ", " }' \
		"$tmp/knobs0" "$tmp/knobs1")
	while read -r k v; do
		echo "$v" >"/sys/kernel/gps/$k" 2>/dev/null || true
	done <"$tmp/knobs0"
	result FAIL "$1" "left knobs changed: $changed; written back"
}

marker() {	# marker name: start of a test in the kernel log
	seq=$((seq + 1))
	mark="gps-runtests: [$seq] start $1"
	[ "$kcheck" = 1 ] || return 0
	echo "$mark" >/dev/kmsg
}

klog_bad() {	# klog_bad name: true if the log after the marker has a report
	[ "$kcheck" = 1 ] || return 1
	dmesg | awk -v m="$mark" 'index($0, m) { on = 1; next } on' \
		>"$tmp/klog_all"
	grep -E "$bad" "$tmp/klog_all" >"$tmp/klog" || true
	[ -s "$tmp/klog" ] || return 1
	echo "--- kernel log after the start of $1:"
	head -n 100 "$tmp/klog_all"
	echo "---"
	kwhy="kernel log: $(head -n 1 "$tmp/klog")"
	return 0
}

# Run $1 in its own session and process group, so that on timeout the
# whole group (and whatever it forked) is killed, and leftovers too when it
# exits; output is streamed and kept in $tmp/out, the status in $tmp/rc.
run_timed() {
	rm -f "$tmp/timedout"
	{
		setsid "$1" 2>&1 &
		pid=$!
		setsid sh -c "sleep $tmo; touch '$tmp/timedout';
			'$self' --blocked;
			kill -TERM -$pid; sleep 5; kill -KILL -$pid" 2>/dev/null &
		wd=$!
		r=0
		wait "$pid" || r=$?
		# The watchdog itself, then its group: one not yet past its
		# setsid() has no group of its own, and would live on with
		# this pipe open, holding tee (and the run) for $tmo seconds.
		kill -KILL "$wd" 2>/dev/null || true
		kill -KILL -"$wd" 2>/dev/null || true
		kill -KILL -"$pid" 2>/dev/null || true
		echo "$r" >"$tmp/rc"
	} | tee "$tmp/out"
}

run_one() {	# run_one path
	t=$1
	name=${t##*/}
	marker "$name"
	echo "=== $prefix$name"
	start=$(date +%s)
	knobs_dump >"$tmp/knobs0"
	run_timed "$t"
	rc=$(cat "$tmp/rc")
	secs=$(($(date +%s) - start))
	echo "GPS-TIME: $prefix$name ${secs}s"
	timedout=0
	[ ! -e "$tmp/timedout" ] || timedout=1
	kbad=0
	! klog_bad "$name" || kbad=1
	nok=$(grep -c '^ok ' "$tmp/out" || true)
	nskip=$(grep -c '^ok .*# *[Ss][Kk][Ii][Pp]' "$tmp/out" || true)
	nfail=$(grep -c '^not ok ' "$tmp/out" || true)
	if [ $((nok + nfail)) -gt 0 ]; then
		# KTAP: one result per case, plus one failure for a bad end
		grep -E '^(not )?ok ' "$tmp/out" | while read -r line; do
			case $line in
			"not ok "*) st=FAIL; line=${line#not ok } ;;
			*) st=PASS; line=${line#ok } ;;
			esac
			line=${line#* }	# drop the case number
			case $line in
			*"# SKIP"* | *"# skip"*) st=SKIP ;;
			esac
			echo "GPS-RESULT: $st $prefix$name: ${line%% #*}"
		done
		passed=$((passed + nok - nskip))
		skipped=$((skipped + nskip))
		failed=$((failed + nfail))
		if [ "$timedout" = 1 ]; then
			result FAIL "$name" "timeout after ${tmo}s"
		elif [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$nfail" = 0 ]; then
			result FAIL "$name" "exit status $rc after ${secs}s"
		fi
		[ "$kbad" = 0 ] || result FAIL "$name" "$kwhy"
	elif [ "$timedout" = 1 ]; then
		result FAIL "$name" "timeout after ${tmo}s"
	elif [ "$kbad" = 1 ]; then
		result FAIL "$name" "$kwhy"
	else
		case $rc in
		0) result PASS "$name" ;;
		4) result SKIP "$name" ;;
		*) result FAIL "$name" "exit status $rc" ;;
		esac
	fi
	knobs_check "$name"
}

if [ -n "$module" ]; then
	marker "insmod"
	if [ -d /sys/module/gps ]; then
		result PASS "insmod gps" "already loaded"
	elif insmod "$module"; then
		if klog_bad "insmod gps"; then
			result FAIL "insmod gps" "$kwhy"
		else
			result PASS "insmod gps"
		fi
	else
		result FAIL "insmod gps" "insmod $module failed"
	fi
fi

for t in "$@"; do
	if [ ! -x "$t" ]; then
		result FAIL "${t##*/}" "not an executable"
		continue
	fi
	run_one "$t"
done

# kmemleak_check name: a kmemleak scan (two, 6 s apart: kmemleak skips
# objects younger than 5 s and objects changed since the previous scan);
# any unreferenced object is a failure, listed in full
kmemleak_check() {
	kml=/sys/kernel/debug/kmemleak
	[ "$kcheck" = 1 ] && [ -w "$kml" ] || return 0
	echo scan >"$kml"
	sleep 6
	echo scan >"$kml"
	cat "$kml" >"$tmp/kmemleak"
	n=$(grep -c '^unreferenced object' "$tmp/kmemleak" || true)
	if [ "$n" = 0 ]; then
		result PASS "$1"
		return
	fi
	echo "--- $1:"
	cat "$tmp/kmemleak"
	echo "---"
	echo clear >"$kml"	# the next scan reports only new leaks
	result FAIL "$1" "$n unreferenced object(s)"
}

kmemleak_check "kmemleak"

if [ -n "$module" ] && [ -d /sys/module/gps ]; then
	marker "rmmod"
	if rmmod gps; then
		if klog_bad "rmmod gps"; then
			result FAIL "rmmod gps" "$kwhy"
		else
			result PASS "rmmod gps"
		fi
	else
		result FAIL "rmmod gps" "rmmod failed"
	fi
	kmemleak_check "kmemleak after rmmod"
fi

echo "GPS-SUMMARY: passed=$passed failed=$failed skipped=$skipped"
[ "$failed" = 0 ]

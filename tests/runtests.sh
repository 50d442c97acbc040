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
#             BUG, WARNING, Oops, lockdep, KASAN, kmemleak or GPF report
#   -t SECS   per-test timeout (default: $GPS_TEST_TIMEOUT or 300)
#   -p PREFIX prefix of the names in result lines (e.g. "6.12/4n")
#
# A test program is a kselftest (KTAP output: every "ok"/"not ok" line is
# one result, "# SKIP" ones are skips) or a plain program (exit 0 passes,
# exit 4 skips, anything else fails).  A KTAP program exiting non-zero with
# no failed case, or killed by the timeout, adds one failure.
#
# Prints "GPS-RESULT: PASS|FAIL|SKIP name" per result and, last,
# "GPS-SUMMARY: passed=P failed=F skipped=S"; exits 1 if F > 0.
set -eu

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

marker() {	# marker name: start of a test in the kernel log
	seq=$((seq + 1))
	mark="gps-runtests: [$seq] start $1"
	[ "$kcheck" = 1 ] || return 0
	echo "$mark" >/dev/kmsg
}

kernel_log_ok() {	# kernel_log_ok name: no report after the marker
	[ "$kcheck" = 1 ] || return 0
	dmesg | awk -v m="$mark" 'index($0, m) { on = 1; next } on' |
		grep -E "$bad" >"$tmp/klog" || true
	[ -s "$tmp/klog" ] || return 0
	echo "--- kernel log after the start of $1:"
	dmesg | awk -v m="$mark" 'index($0, m) { on = 1; next } on' | head -n 80
	echo "---"
	result FAIL "$1" "kernel log: $(head -n 1 "$tmp/klog")"
	return 1
}

run_one() {	# run_one path
	t=$1
	name=${t##*/}
	marker "$name"
	echo "=== $prefix$name"
	start=$(date +%s)
	{
		r=0
		timeout -s TERM -k 10 "$tmo" "$t" 2>&1 || r=$?
		echo "$r" >"$tmp/rc"
	} |
		tee "$tmp/out"
	rc=$(cat "$tmp/rc")
	secs=$(($(date +%s) - start))
	nok=$(grep -c '^ok ' "$tmp/out" || true)
	nskip=$(grep -c '^ok .*# *[Ss][Kk][Ii][Pp]' "$tmp/out" || true)
	nfail=$(grep -c '^not ok ' "$tmp/out" || true)
	if [ $((nok + nfail)) -gt 0 ]; then
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
		if [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$nfail" = 0 ]; then
			result FAIL "$name" "exit status $rc after ${secs}s"
		fi
	else
		case $rc in
		0) result PASS "$name" ;;
		4) result SKIP "$name" ;;
		124 | 137 | 143) result FAIL "$name" "timeout after ${secs}s" ;;
		*) result FAIL "$name" "exit status $rc" ;;
		esac
	fi
	kernel_log_ok "$name" || true
}

if [ -n "$module" ]; then
	marker "insmod"
	if [ -d /sys/module/gps ]; then
		result PASS "insmod gps" "already loaded"
	elif insmod "$module"; then
		kernel_log_ok "insmod gps" && result PASS "insmod gps"
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

if [ -n "$module" ] && [ -d /sys/module/gps ]; then
	marker "rmmod"
	if rmmod gps; then
		kernel_log_ok "rmmod gps" && result PASS "rmmod gps"
	else
		result FAIL "rmmod gps" "rmmod failed"
	fi
fi

echo "GPS-SUMMARY: passed=$passed failed=$failed skipped=$skipped"
[ "$failed" = 0 ]

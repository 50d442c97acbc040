#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-check.sh: every test of gps, what `make check` runs after building.
#
#   tests/run-check.sh [-s "6.1 6.12"] [-n "1 2 4"] [-t SECS] [-U] [-V]
#
#   -s SERIES   kernel series to boot (default: "6.1 6.12")
#   -n NODES    node counts to boot each series with (default: "1 2 4")
#   -t SECS     timeout of one VM (default: 900)
#   -U          skip the host unit tests
#   -V          skip the VM tests
#
# 1. the host unit tests (build/tests/unit/*, ASan+UBSan) through
#    tests/runtests.sh, with GPSU_DEVICE=/nonexistent/gps so that they never
#    reach a real /dev/gps;
# 2. per series x node count, a gps-vm guest runs tests/runtests.sh -K with
#    gps.ko: insmod, build/tests/kmod/* then build/tests/lib/*, rmmod.
# Ends with one line "N passed, N failed, N skipped"; exits 1 on any failed
# test or any VM that did not complete.  Logs: build/check/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
series="6.1 6.12"
nodes="1 2 4"
timeout=900
unit=1
vm=1

while getopts "s:n:t:UV" opt; do
	case $opt in
	s) series=$OPTARG ;;
	n) nodes=$OPTARG ;;
	t) timeout=$OPTARG ;;
	U) unit=0 ;;
	V) vm=0 ;;
	*) sed -n '4,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
	esac
done

logs=$build/check
rm -rf "$logs"
mkdir -p "$logs"
passed=0
failed=0
skipped=0
failures=()

# account LOG NAME: add the GPS-SUMMARY of a run's log to the totals;
# a run without one (crash, timeout) is one failure.
account() {
	local log=$1 name=$2 summary lines
	[ -f "$log" ] || : >"$log"
	summary=$(grep -a '^GPS-SUMMARY: ' "$log" | tail -n 1 || true)
	mapfile -t lines < <(grep -a '^GPS-RESULT: FAIL ' "$log" |
		sed 's/^GPS-RESULT: FAIL //' || true)
	failures+=("${lines[@]}")
	if [ -z "$summary" ]; then
		failed=$((failed + 1))
		failures+=("$name: did not complete (see $log)")
		return
	fi
	if ! [[ $summary =~ passed=([0-9]+)\ failed=([0-9]+)\ skipped=([0-9]+) ]]; then
		failed=$((failed + 1))
		failures+=("$name: bad summary '$summary'")
		return
	fi
	passed=$((passed + BASH_REMATCH[1]))
	failed=$((failed + BASH_REMATCH[2]))
	skipped=$((skipped + BASH_REMATCH[3]))
}

start=$(date +%s)

if [ "$unit" = 1 ]; then
	mapfile -t bins < <(find "$build/tests/unit" -maxdepth 1 -type f \
		-perm -u+x 2>/dev/null | sort)
	if [ ${#bins[@]} -gt 0 ]; then
		echo "##### host unit tests"
		log=$logs/host-unit.log
		GPSU_DEVICE=${GPSU_DEVICE:-/nonexistent/gps} \
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
			"$top/tests/runtests.sh" -p host "${bins[@]}" 2>&1 |
			tee "$log" || true
		account "$log" "host unit tests"
	else
		echo "##### host unit tests: none (tests/unit/*.c)"
	fi
fi

if [ "$vm" = 1 ]; then
	mapfile -t bins < <(cd "$top" && find build/tests/kmod build/tests/lib \
		-maxdepth 1 -type f -perm -u+x 2>/dev/null | sort)
	for s in $series; do
		for n in $nodes; do
			echo "##### VM: kernel $s, $n node(s)"
			log=$logs/vm-$s-${n}n.log
			t0=$(date +%s)
			rc=0
			"$top/tools/gps-vm" -B -N -k "$s" -n "$n" -t "$timeout" \
				-o "$log" -- tests/runtests.sh -K \
				-m kmod/gps.ko -p "$s/${n}n" "${bins[@]}" || rc=$?
			account "$log" "VM $s/${n}n"
			echo "##### VM: kernel $s, $n node(s): status $rc, $(($(date +%s) - t0))s"
			if [ "$rc" != 0 ] && [ "$rc" != 1 ] &&
			   grep -aq '^GPS-SUMMARY: ' "$log"; then
				# the runner finished but the guest did not exit cleanly
				failed=$((failed + 1))
				failures+=("VM $s/${n}n: guest exit status $rc")
			fi
		done
	done
fi

echo "##### $(($(date +%s) - start))s, logs in ${logs#"$top"/}/"
if [ "$failed" -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
line="$passed passed, $failed failed"
[ "$skipped" = 0 ] || line="$line, $skipped skipped"
echo "$line"
[ "$failed" = 0 ]

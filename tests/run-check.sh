#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-check.sh: every test of gps, what `make check` runs after building.
#
#   tests/run-check.sh [-s "6.1 6.12"] [-n "1 2 4"] [-t SECS] [-j JOBS] [-U] [-V]
#
#   -s SERIES   kernel series to boot (default: "6.1 6.12")
#   -n NODES    node counts to boot each series with (default: "1 2 4")
#   -t SECS     timeout of one VM (default: 900)
#   -j JOBS     guests run at the same time (default: 1, consoles streamed;
#               more: consoles only in the logs, failures printed at the end)
#   -U          skip the host unit tests
#   -V          skip the VM tests
#
# 1. the host unit tests (build/tests/unit/*, ASan+UBSan) through
#    tests/runtests.sh, with GPSU_DEVICE=/nonexistent/gps so that they never
#    reach a real /dev/gps;
# 2. per series x node count, a gps-vm guest runs tests/runtests.sh -K with
#    gps.ko: insmod, build/tests/kmod/* then build/tests/lib/*, rmmod.
# Ends with one line "N passed, N failed, N skipped"; exits 1 on any failed
# test or any VM that did not complete.  Logs: build/check/last/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
series="6.1 6.12"
nodes="1 2 4"
timeout=900
unit=1
vm=1
jobs=1

while getopts "s:n:t:j:UV" opt; do
	case $opt in
	s) series=$OPTARG ;;
	n) nodes=$OPTARG ;;
	t) timeout=$OPTARG ;;
	j) jobs=$OPTARG ;;
	U) unit=0 ;;
	V) vm=0 ;;
	*) sed -n '4,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
	esac
done

[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-check.sh: bad -j '$jobs'" >&2; exit 2; }

# Logs of this run in their own directory (several runs may share a tree),
# build/check/last points at the newest; the 5 newest are kept.
mkdir -p "$build/check"
logs=$(mktemp -d "$build/check/$(date +%Y%m%d-%H%M%S).XXXX")
ln -sfn "$(basename "$logs")" "$build/check/last"
find "$build/check" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' |
	sort -rn | tail -n +6 | cut -d' ' -f2- | xargs -r rm -rf
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

# vm_run SERIES NODES QUIET: one guest running every VM test; its console
# log in $logs/vm-SERIES-NODESn.log, status and seconds in .rc
vm_run() {
	local s=$1 n=$2 q=$3 log=$logs/vm-$1-$2n.log t0 rc=0
	local opts=(-B -N -k "$s" -n "$n" -t "$timeout" -o "$log")
	[ "$q" = 0 ] || opts+=(-q)
	t0=$(date +%s)
	"$top/tools/gps-vm" "${opts[@]}" -- tests/runtests.sh -K \
		-m kmod/gps.ko -p "$s/${n}n" "${bins[@]}" || rc=$?
	echo "$rc $(($(date +%s) - t0))" >"$log.rc"
}

# vm_account SERIES NODES: add a finished guest's results to the totals
vm_account() {
	local s=$1 n=$2 log=$logs/vm-$1-$2n.log rc secs
	read -r rc secs <"$log.rc" || { rc=125; secs=0; }
	account "$log" "VM $s/${n}n"
	echo "##### VM: kernel $s, $n node(s): status $rc, ${secs}s"
	if [ "$rc" != 0 ] && [ "$rc" != 1 ] &&
	   grep -aq '^GPS-SUMMARY: ' "$log"; then
		# the runner finished but the guest did not exit cleanly
		failed=$((failed + 1))
		failures+=("VM $s/${n}n: guest exit status $rc")
	fi
}

if [ "$vm" = 1 ]; then
	mapfile -t bins < <(cd "$top" && find build/tests/kmod build/tests/lib \
		-maxdepth 1 -type f -perm -u+x 2>/dev/null | sort)
	if [ "$jobs" -le 1 ]; then
		for s in $series; do
			for n in $nodes; do
				echo "##### VM: kernel $s, $n node(s)"
				vm_run "$s" "$n" 0
				vm_account "$s" "$n"
			done
		done
	else
		# several guests at once, each console only in its log; the
		# biggest first so that the small ones fill the gaps
		echo "##### VMs: kernel(s) $series x node(s) $nodes, $jobs at a time"
		for n in $(tr ' ' '\n' <<<"$nodes" | sort -rn); do
			for s in $series; do
				while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
					wait -n || true
				done
				vm_run "$s" "$n" 1 &
			done
		done
		wait
		for s in $series; do
			for n in $nodes; do
				log=$logs/vm-$s-${n}n.log
				grep -a '^GPS-RESULT: FAIL\|^GPS-SUMMARY' "$log" || true
				vm_account "$s" "$n"
			done
		done
	fi
fi

echo "##### $(($(date +%s) - start))s, logs in ${logs#"$top"/}/ (build/check/last)"
if [ "$failed" -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
line="$passed passed, $failed failed"
[ "$skipped" = 0 ] || line="$line, $skipped skipped"
echo "$line"
[ "$failed" = 0 ]

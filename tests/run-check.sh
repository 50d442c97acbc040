#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-check.sh: every test of gps, what `make check` runs after building.
#
#   tests/run-check.sh [-s "6.1 6.12"] [-n "1 2 4"] [-g "6.12/2x2 6.1/4x2"]
#                      [-P "6.12/2"] [-k "6.12/1"] [-t SECS] [-j JOBS]
#                      [-U] [-E] [-D] [-V]
#
#   -s SERIES   kernel series to boot (default: "6.1 6.12")
#   -n NODES    guests to boot each series with: N (N nodes of one vCPU)
#               or NxC (N nodes of C vCPUs each) (default: "1 2 4")
#   -g GUESTS   more guests, each of one series: SERIES/N or SERIES/NxC
#               (default: none; make check: "6.12/2x2 6.1/4x2")
#   -P GUESTS   guests that carry perf (Debian's linux-perf, the host's
#               /usr/bin/perf and its libraries, gps-vm -a), so that
#               tests/kmod/trace records through it: SERIES/N or
#               SERIES/NxC among the guests above (default: none; make
#               check: PERF_GUESTS, "6.12/2x2")
#   -k GUESTS   guests that run the driver's tests (build/tests/kmod/*)
#               and of the library's the torture test only: SERIES/N or
#               SERIES/NxC among the guests above (default: none; make
#               check: KMOD_ONLY_GUESTS, "6.12/1 6.1/4x2 debug/2x2")
#   -t SECS     timeout of one VM (default: 900)
#   -j JOBS     guests run at the same time (default: 1, consoles streamed;
#               more: consoles only in the logs, failures printed at the end)
#   -U          skip the host unit tests
#   -E          skip the native engine's run of the library tests
#   -D          skip the DKMS build check
#   -V          skip the VM tests
#
# 1. the host unit tests (build/tests/unit/*, ASan+UBSan) through
#    tests/runtests.sh, with GPSU_DEVICE=/nonexistent/gps so that they never
#    reach a real /dev/gps;
# 1b. the library tests (tests/lib/*.c) on the host against the native
#    engine (GPSU_ENGINE=user, GPSU_DEVICES=4), built with ASan+UBSan
#    (build/tests/native/*) and again with TSan (build/tests/native-tsan/*);
# 2. tools/gps-dkms check: dkms build of gps.ko in a scratch DKMS tree
#    against the headers of each of the -s series 6.1 and 6.12 (one
#    result per series; about 5 s each);
# 3. per series x node count (and per -g guest), a gps-vm guest runs
#    tests/runtests.sh -K with gps.ko: insmod, build/tests/kmod/* then
#    build/tests/lib/*, rmmod.  A guest of N nodes x C vCPUs has N sockets
#    of C cores (gps-vm -n N -c C); its log is vm-SERIES-Nn.log when C is 1,
#    vm-SERIES-NxC.log otherwise, and its results are named likewise.
# On a terminal, each step (the unit tests, DKMS, each guest) begins with
# "##### step i of n, elapsed, ETA" (tools/gps-progress.sh; the ETA from
# the previous run's times, build/check/last/steps); not in CI logs.
# Ends with one line "N passed, N failed, N skipped"; exits 1 on any failed
# test or any VM that did not complete.  Logs: build/check/last/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
series="6.1 6.12"
nodes="1 2 4"
extra=
perf_guests=
kmod_only=
timeout=900
unit=1
native=1
dkms=1
vm=1
jobs=1

while getopts "s:n:g:P:k:t:j:UEDV" opt; do
	case $opt in
	s) series=$OPTARG ;;
	n) nodes=$OPTARG ;;
	g) extra=$OPTARG ;;
	P) perf_guests=$OPTARG ;;
	k) kmod_only=$OPTARG ;;
	t) timeout=$OPTARG ;;
	j) jobs=$OPTARG ;;
	U) unit=0 ;;
	E) native=0 ;;
	D) dkms=0 ;;
	V) vm=0 ;;
	*) sed -n '4,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
	esac
done

[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-check.sh: bad -j '$jobs'" >&2; exit 2; }

# The guests: "SERIES NODES CPUS NAME", NAME as in the logs and results
guests=()
guest() {	# guest SERIES N|NxC
	local n c
	if [[ $2 =~ ^([1-9][0-9]*)(x([1-9][0-9]*))?$ ]]; then
		n=${BASH_REMATCH[1]}
		c=${BASH_REMATCH[3]:-1}
	else
		echo "run-check.sh: bad guest '$2' (N or NxC)" >&2
		exit 2
	fi
	if [ "$c" = 1 ]; then
		guests+=("$1 $n 1 ${n}n")
	else
		guests+=("$1 $n $c ${n}x$c")
	fi
}
for s in $series; do
	for n in $nodes; do
		guest "$s" "$n"
	done
done
for g in $extra; do
	[[ $g == */* ]] || { echo "run-check.sh: bad -g guest '$g' (SERIES/N[xC])" >&2; exit 2; }
	guest "${g%%/*}" "${g#*/}"
done

# Logs of this run in their own directory (several runs may share a tree),
# build/check/last points at the newest; the 5 newest are kept.
mkdir -p "$build/check"
history=$build/check/last/steps
[ -f "$history" ] || history=
[ -z "$history" ] || history=$(readlink -f "$history")
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

# the steps, for "step i of n, elapsed, ETA" on a terminal
# shellcheck source=tools/gps-progress.sh disable=SC1091
. "$top/tools/gps-progress.sh"
# shellcheck disable=SC2034 # read by gps-progress.sh
progress_log=$logs/steps
# the DKMS build of each Debian series being checked (not "debug")
dkms_series=
for s in $series; do
	case $s in 6.1 | 6.12) dkms_series="$dkms_series $s" ;; esac
done
steps=0
[ "$unit" = 0 ] || steps=$((steps + 1))
[ "$native" = 0 ] || steps=$((steps + 2))
[ "$dkms" = 0 ] || [ -z "$dkms_series" ] || steps=$((steps + 1))
[ "$vm" = 0 ] || steps=$((steps + ${#guests[@]}))
progress_init "$steps" "$history"

# TSan sleeps a second as each process exits (atexit_sleep_ms, for races
# with the exit), and each test is a process of the harness's: 50 ms here
# (the native TSan run of the library's tests took 125 s on the 2-core
# host at the default, 50 s at 50 ms with 50 more tests).
tsan_options=halt_on_error=1:atexit_sleep_ms=50

if [ "$unit" = 1 ]; then
	mapfile -t bins < <(find "$build/tests/unit" -maxdepth 1 -type f \
		-perm -u+x 2>/dev/null | sort)
	progress_step host-unit 60
	if [ ${#bins[@]} -gt 0 ]; then
		echo "##### host unit tests"
		log=$logs/host-unit.log
		GPSU_DEVICE=${GPSU_DEVICE:-/nonexistent/gps} \
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		TSAN_OPTIONS=${TSAN_OPTIONS:-$tsan_options} \
			"$top/tests/runtests.sh" -p host "${bins[@]}" 2>&1 |
			tee "$log" || true
		account "$log" "host unit tests"
	else
		echo "##### host unit tests: none (tests/unit/*.c)"
	fi
	progress_done
fi

# native_run SAN: tests/lib against the native engine, built with SAN
native_run() {
	local v=$1 log=$logs/host-$1.log
	mapfile -t bins < <(find "$build/tests/$v" -maxdepth 1 -type f \
		-perm -u+x 2>/dev/null | sort)
	progress_step "host-$v" 60
	if [ ${#bins[@]} -eq 0 ]; then
		echo "##### $v: none built (make -C tests native)"
		failed=$((failed + 1))
		failures+=("$v: no tests built")
		progress_done
		return
	fi
	echo "##### the library tests on the native engine ($v)"
	GPSU_ENGINE=user GPSU_DEVICES=4 \
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	TSAN_OPTIONS=${TSAN_OPTIONS:-$tsan_options} \
		"$top/tests/runtests.sh" -p "$v" "${bins[@]}" 2>&1 |
		tee "$log" || true
	account "$log" "$v tests"
	progress_done
}
if [ "$native" = 1 ]; then
	native_run native
	native_run native-tsan
fi

if [ "$dkms" = 1 ] && [ -n "$dkms_series" ]; then
	progress_step dkms 10
	echo "##### DKMS:$dkms_series"
	log=$logs/dkms.log
	# shellcheck disable=SC2086 # one word per series
	BUILD=$build "$top/tools/gps-dkms" check $dkms_series >"$log" 2>&1 || true
	grep '^dkms .*: \(PASS\|FAIL\)' "$log" || true
	for s in $dkms_series; do
		if grep -q "^dkms $s .*: PASS$" "$log"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			failures+=("dkms build $s (see ${log#"$top"/})")
		fi
	done
	progress_done
fi

# describe NODES CPUS: "4 node(s)" or "4 nodes x 2 vCPUs"
describe() {
	if [ "$2" = 1 ]; then echo "$1 node(s)"; else echo "$1 nodes x $2 vCPUs"; fi
}

# What ends a guest by a defect of qemu 7.2's multi-threaded TCG, never
# the driver's: a kernel int3 trap (a vCPU ran patched kernel text from a
# stale translation after the patching was over: reproduced within seconds
# by switching the gps tracepoints on and off while their sites run), and
# a stall with a vCPU halted and an interrupt pending in its local APIC,
# twice 2 s apart (tools/gps-vcpus's "emulator" verdict: qemu lost the
# wakeup).  Two suites in about 30 stalled with one vCPU's timers stopped,
# both in the trace test as it switched tracepoints.
qemu_defect='(Oops: )?int3: [0-9a-f]{4} \[#[0-9]+\]|^GPS-VM-WEDGE: emulator'

# is_guest SERIES/N[xC] SERIES NODES CPUS: whether the name is this guest
is_guest() {
	if [ "$4" = 1 ]; then
		[ "$1" = "$2/$3" ]
	else
		[ "$1" = "$2/${3}x$4" ]
	fi
}

# vm_run SERIES NODES CPUS NAME QUIET: one guest running every VM test; its
# console log in $logs/vm-SERIES-NAME.log, status and seconds in .rc
vm_run() {
	local s=$1 n=$2 c=$3 name=$4 q=$5 log=$logs/vm-$1-$4.log t0 rc=0
	local opts=(-B -N -k "$s" -n "$n" -c "$c" -t "$timeout" -o "$log") g
	local run=("${bins[@]}")
	[ "$q" = 0 ] || opts+=(-q)
	for g in $perf_guests; do
		if is_guest "$g" "$s" "$n" "$c"; then
			opts+=(-a "$perf")
		fi
	done
	for g in $kmod_only; do
		if is_guest "$g" "$s" "$n" "$c"; then
			run=("${kmod_bins[@]}")
		fi
	done
	t0=$(date +%s)
	boot() {
		rc=0
		"$top/tools/gps-vm" "${opts[@]}" -- tests/runtests.sh -K \
			-m kmod/gps.ko -p "$s/$name" "${run[@]}" || rc=$?
	}
	boot
	# Two failures that are qemu's, not the driver's: the guest is
	# booted once more and the first log kept beside the second.
	if [ "$rc" = 125 ] && ! grep -aq '^GPS-RESULT: ' "$log"; then
		# died before runtests.sh loaded gps.ko (seen once in about
		# 40 boots of 4 nodes x 2 vCPUs: an int3 left by the kernel's
		# boot-time code patching, under multi-threaded TCG)
		mv "$log" "$log.boot1"
		echo "##### VM $s/$name: the guest died before gps.ko was loaded" \
		     "(${log#"$top"/}.boot1); booting it again"
		boot
	elif [ "$rc" = 125 ] && grep -aqE "$qemu_defect" "$log"; then
		# see qemu_defect
		mv "$log" "$log.qemu1"
		echo "##### VM $s/$name: $(grep -aoE -m1 "$qemu_defect" "$log.qemu1")" \
		     "(${log#"$top"/}.qemu1): qemu's defect; booting it again"
		boot
	fi
	echo "$rc $(($(date +%s) - t0))" >"$log.rc"
}

# vm_account SERIES NODES CPUS NAME: add a finished guest's results
vm_account() {
	local s=$1 n=$2 c=$3 name=$4 log=$logs/vm-$1-$4.log rc secs
	read -r rc secs <"$log.rc" || { rc=125; secs=0; }
	account "$log" "VM $s/$name"
	echo "##### VM: kernel $s, $(describe "$n" "$c"): status $rc, ${secs}s"
	if [ "$rc" != 0 ] && [ "$rc" != 1 ] &&
	   grep -aq '^GPS-SUMMARY: ' "$log"; then
		# the runner finished but the guest did not exit cleanly
		failed=$((failed + 1))
		failures+=("VM $s/$name: guest exit status $rc")
	fi
}

# the host's perf (Debian's linux-perf: an ELF /usr/bin/perf), for -P
perf=
if [ -n "$perf_guests" ]; then
	perf=$(command -v perf || true)
	[ -z "$perf" ] || perf=$(readlink -f "$perf")
	if [ -z "$perf" ] || [ "$(head -c 4 "$perf" | od -An -c | tr -d ' ')" != '177ELF' ]; then
		echo "##### -P $perf_guests: no perf program on this host" \
		     "(apt-get install linux-perf): the guests go without it"
		perf_guests=
	fi
fi

if [ "$vm" = 1 ]; then
	# the programs as the guest sees them: gps-vm mirrors $build under
	# /gps (build/... by default, the whole path for a BUILD elsewhere)
	case $build in
	"$top"/*) grel=${build#"$top"/} ;;
	*) grel=${build#/} ;;
	esac
	mapfile -t bins < <(find "$build/tests/kmod" "$build/tests/lib" \
		-maxdepth 1 -type f -perm -u+x 2>/dev/null | sort |
		sed "s|^$build/|$grel/|")
	kmod_bins=()
	for b in "${bins[@]}"; do
		[[ $b != */tests/kmod/* && $b != */tests/lib/torture ]] ||
			kmod_bins+=("$b")
	done
	if [ "$jobs" -le 1 ]; then
		for g in "${guests[@]}"; do
			read -r s n c name <<<"$g"
			progress_step "vm-$s-$name"
			echo "##### VM: kernel $s, $(describe "$n" "$c")"
			vm_run "$s" "$n" "$c" "$name" 0
			vm_account "$s" "$n" "$c" "$name"
			progress_done
		done
	else
		# several guests at once, each console only in its log; the
		# biggest (most vCPUs) first so that the small ones fill the gaps
		echo "##### VMs: ${#guests[@]} guests, $jobs at a time"
		while read -r _ s n c name; do
			while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
				wait -n || true
			done
			progress_step "vm-$s-$name (started)"
			vm_run "$s" "$n" "$c" "$name" 1 &
		done < <(for g in "${guests[@]}"; do
			read -r s n c _ <<<"$g"
			echo "$((n * c)) $g"
		done | sort -s -k1,1rn)
		wait
		for g in "${guests[@]}"; do
			read -r s n c name <<<"$g"
			log=$logs/vm-$s-$name.log
			grep -a '^GPS-RESULT: FAIL\|^GPS-SUMMARY' "$log" || true
			vm_account "$s" "$n" "$c" "$name"
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

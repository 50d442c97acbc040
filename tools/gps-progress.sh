# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# gps-progress.sh: "step i of n, elapsed, ETA" lines for the long runs
# (tests/run-check.sh, tools/gps-soak; `make figures` may use it too).
# Sourced, POSIX sh (bash and busybox sh alike):
#
#   . tools/gps-progress.sh
#   progress_init N [HISTORY]   N steps; HISTORY: a file of "NAME SECS"
#                               lines from an earlier run, for the ETA
#   progress_step NAME [SECS]   step NAME begins; SECS: its expected
#                               length when HISTORY does not know it
#   progress_done               the step ended; its "NAME SECS" line is
#                               appended to $progress_log (if set), the
#                               next run's HISTORY
#
# The lines go to stdout only on a terminal ([ -t 1 ]), so that CI logs
# stay as they were; GPS_PROGRESS=1 prints them anyway, GPS_PROGRESS=0
# never.  The ETA sums the expected length of the steps left: the
# history's time for the same NAME, else SECS, else the mean of the
# steps done so far; "ETA ?" until one of those is known.

progress_on=0
case ${GPS_PROGRESS:-} in
1) progress_on=1 ;;
0) progress_on=0 ;;
*) [ -t 1 ] && progress_on=1 ;;
esac
progress_n=0
progress_i=0
progress_t0=0
progress_hist=
progress_name=
progress_start=0
progress_sum=0		# seconds of the steps done
progress_log=${progress_log:-}

# progress_fmt SECS: 75 -> 1m15s
progress_fmt() {
	if [ "$1" -ge 3600 ]; then
		printf '%dh%02dm' $(($1 / 3600)) $(($1 % 3600 / 60))
	elif [ "$1" -ge 60 ]; then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

progress_init() {
	progress_n=$1
	progress_hist=${2:-}
	progress_i=0
	progress_sum=0
	progress_t0=$(date +%s)
	[ -z "$progress_hist" ] || [ -r "$progress_hist" ] || progress_hist=
}

# progress_expect NAME [SECS]: the step's expected seconds, or empty
progress_expect() {
	_pe=
	if [ -n "$progress_hist" ]; then
		_pe=$(awk -v n="$1" '$1 == n { s = $2 } END { print s }' \
			"$progress_hist")
	fi
	[ -n "$_pe" ] || _pe=${2:-}
	echo "$_pe"
}

# progress_step NAME [SECS]
progress_step() {
	progress_i=$((progress_i + 1))
	progress_name=$1
	progress_start=$(date +%s)
	[ "$progress_on" = 1 ] || return 0
	_now=$progress_start
	_el=$((_now - progress_t0))
	# this step and those after it: expected from the history, else
	# SECS for this one, else the mean of the steps done
	_exp=$(progress_expect "$1" "${2:-}")
	_mean=
	[ "$progress_i" -le 1 ] || _mean=$((progress_sum / (progress_i - 1)))
	[ -n "$_exp" ] || _exp=$_mean
	_eta='?'
	if [ -n "$_exp" ]; then
		_rest=$((progress_n - progress_i))
		_eta=$((_exp + _rest * ${_mean:-$_exp}))
		if [ -n "$progress_hist" ]; then
			# the history's own total of the steps left, when it
			# has one line per step
			_h=$(awk -v skip="$progress_i" 'NR > skip { s += $2; n++ }
				END { print n + 0, s + 0 }' "$progress_hist")
			if [ "${_h% *}" = "$_rest" ]; then
				_eta=$((_exp + ${_h#* }))
			fi
		fi
		_eta=$(progress_fmt "$_eta")
	fi
	echo "##### step $progress_i of $progress_n, $(progress_fmt "$_el") elapsed, ETA $_eta: $1"
}

progress_done() {
	_d=$(($(date +%s) - progress_start))
	progress_sum=$((progress_sum + _d))
	[ -z "$progress_log" ] || echo "$progress_name $_d" >>"$progress_log"
}

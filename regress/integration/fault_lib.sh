# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# Helpers for fault_test, on top of lib.sh: requests run in the
# background with their pid, exit code, status code and end time kept in
# files, clocks in milliseconds, and checks shared by every case.

# now_ms: the wall clock in milliseconds.
now_ms()
{
	date +%s%3N
}

# req_start NAME MODEL MAX_TOKENS STREAM MAXTIME: POST a chat completion
# in the background ("stream": STREAM, true or false), bounded by curl's
# --max-time MAXTIME.  Writes NAME.out (the answer as it arrives),
# NAME.pid (curl's pid), and once curl has ended NAME.code (HTTP status,
# 000 when none), NAME.rc (curl's exit code) and NAME.end (ms).
req_start()
{
	local name=$1 model=$2 max=$3 stream=$4 maxtime=$5
	rm -f "$name.out" "$name.pid" "$name.code" "$name.rc" "$name.end"
	(
		curl -sN --max-time "$maxtime" -o "$name.out" \
		    -w '%{http_code}' "$BASE/v1/chat/completions" \
		    -H 'Content-Type: application/json' \
		    -d "{\"model\":\"$model\",\"max_tokens\":$max,\"stream\":$stream,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}" \
		    > "$name.code.tmp" &
		echo $! > "$name.pid"
		wait $!
		rc=$?
		now_ms > "$name.end"
		mv "$name.code.tmp" "$name.code"
		echo $rc > "$name.rc"
	) &
	wait_for 2 test -s "$name.pid" || atf_fail "curl did not start"
}

# stream_start NAME MODEL MAX_TOKENS [MAXTIME]: a streamed request.
stream_start()
{
	req_start "$1" "$2" "$3" true "${4:-20}"
}

# req_pid NAME: curl's pid for request NAME.
req_pid()
{
	cat "$1.pid"
}

# req_ended NAME: whether curl has ended (its exit code is recorded).
req_ended()
{
	test -s "$1.rc"
}

# chunks NAME: the number of SSE data chunks (not [DONE]) received.
chunks()
{
	grep -c '^data: {' "$1.out" 2>/dev/null || true
}

# has_chunk NAME: at least one data chunk has arrived.
has_chunk()
{
	[ "$(chunks "$1")" -ge 1 ]
}

# req_kill NAME: the client leaves: SIGTERM to curl (our own child),
# then wait until its exit is recorded.
req_kill()
{
	kill -TERM "$(req_pid "$1")" 2>/dev/null
	wait_for 2 req_ended "$1" || atf_fail "curl $1 did not exit"
}

# in_progress MODEL: the model's requestsInProgress.
in_progress()
{
	field "$1" requestsInProgress
}

# in_progress_is MODEL N
in_progress_is()
{
	[ "$(in_progress "$1")" = "$2" ]
}

# ready_with_new_pid MODEL OLDPID: the model is ready with another pid.
ready_with_new_pid()
{
	local st
	st=$(status | jq -r --arg m "$1" \
	    '.models[] | select(.model == $m) | "\(.state) \(.pid)"')
	[ "${st%% *}" = ready ] && [ "${st#* }" != "$2" ] &&
	    [ "${st#* }" != null ]
}

# log_has ERE: agencyd's log has a line matching ERE.
log_has()
{
	grep -Eq -- "$1" agencyd.log
}

# The kernel's boot clock in centiseconds, as /proc/uptime gives it
# ("15656.69"), read into UP_CS with builtins alone (no fork: read it
# right before the event it times).
read_uptime()
{
	local up idle
	read -r up idle < /proc/uptime
	UP_CS=$((${up%.*} * 100 + 1${up#*.} - 100))
}

# started_cs PID: when PID was forked, on that clock: its start time
# (field 22 of /proc/PID/stat, in clock ticks since boot).
started_cs()
{
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	set -- ${st##*) }
	shift 19
	echo $(($1 * 100 / $(getconf CLK_TCK)))
}

# new_proxy OLD: the pid of a proxy of agencyd's other than OLD (by its
# command's name, so a fork of agencyd not yet become one is not it).
new_proxy()
{
	local p
	for p in $(pgrep -P "$(agency_pid)" -x agency-proxy); do
		[ "$p" != "$1" ] && alive "$p" && { echo "$p"; return 0; }
	done
	return 1
}

# proxy_restart OLD: SIGKILL the proxy OLD and wait until agencyd has
# started another; RESTART_MS is how long it took, by the kernel's
# clock: from right before the kill to the new process's fork (10 ms
# steps).  What agencyd promises is that it starts a new one; that it
# does so at once, not after the delay (PROXY_RESPAWN_WAIT, 1 s) kept
# for a proxy that keeps dying young, is what the caller bounds.  None
# of this test's own delays after the kill count, so the bound holds on
# a loaded machine; the new proxy's start to serving is the machine's
# speed, waited for (proxy_serves) but not timed.
proxy_restart()
{
	local old=$1 t0 new
	read_uptime
	t0=$UP_CS
	kill -KILL "$old"
	wait_for 20 new_proxy "$old" || fail_log "no new proxy 20 s after" \
	    "the kill"
	new=$(new_proxy "$old")
	RESTART_MS=$((($(started_cs "$new") - t0) * 10))
	echo "a new proxy, pid $new, was started ${RESTART_MS} ms after" \
	    "the kill (the kernel's clock)"
}

# proxy_serves OLD: a proxy other than OLD answers /health.
proxy_serves()
{
	local p
	p=$(proxy_pid)
	[ -n "$p" ] && [ "$p" != "$1" ] &&
	    curl -sf --max-time 5 -o /dev/null "$BASE/health"
}

# access_ms MODEL: how long each chat completion of MODEL took by the
# proxy's own clock (from its access log lines in agencyd.log, in ms,
# one a line in the order they ended): what the product did, without
# the delays of a client that the test started on a loaded machine.
access_ms()
{
	sed -n "s|^agencyd: proxy: POST /v1/chat/completions $1 [0-9]* \([0-9]*\)ms.*|\1|p" \
	    agencyd.log
}

# access_lines_are MODEL N: N such lines are in the log (they are
# written as the request ends, a moment after the client has its
# answer).
access_lines_are()
{
	[ "$(access_ms "$1" | wc -l)" -ge "$2" ]
}

# dead PID...: none of them is alive.
dead()
{
	! alive "$@"
}

# is_descendant PID: PID is one of the processes agencyd started (so the
# test may signal it).
is_descendant()
{
	descendants "$(agency_pid)" | grep -qx "$1"
}

# cancel MODEL: POST /v1/agency/cancel; prints the answer, writes
# ./cancel.code.
cancel()
{
	curl -s -o cancel.body -w '%{http_code}' "$BASE/v1/agency/cancel" \
	    -H "Host: 127.0.0.1:$PORT" -H 'Content-Type: application/json' \
	    -d "{\"model\":\"$1\"}" > cancel.code
	cat cancel.body
}

# uid_of PID: the four uids (real, effective, saved, fs) of a process.
uid_of()
{
	awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$1/status"
}

# check_healthy: every model's requestsInProgress gets back to 0 (holds
# are released asynchronously, so wait for it) and agencyd still answers
# status.  Every case ends with it.
check_healthy()
{
	if ! wait_for 5 in_progress_zero; then
		status >&2
		atf_fail "requestsInProgress did not return to 0"
	fi
	status > /dev/null || atf_fail "agencyd no longer answers status"
	[ "$(status | jq '.models | length')" -ge 1 ] ||
	    atf_fail "status lists no model"
}

# fail_log MESSAGE: fail, with agencyd's log on stderr.
fail_log()
{
	cat agencyd.log >&2
	atf_fail "$*"
}

# fault_cleanup: agency_cleanup, then end the test's own curl processes
# (recorded in *.pid) and any process this test recorded in
# recorded.pids (pids agencyd started, kept after agencyd itself died)
# that is still alive with the same command name.
fault_cleanup()
{
	local f p
	agency_cleanup
	for f in *.pid; do
		[ -f "$f" ] || continue
		[ "$f" = agencyd.pid ] && continue
		p=$(cat "$f")
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = curl ] &&
		    kill -KILL "$p" 2>/dev/null
	done
	if [ -f recorded.pids ]; then
		while read -r p comm; do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] &&
			    kill -KILL "$p" 2>/dev/null
		done < recorded.pids
	fi
	return 0
}

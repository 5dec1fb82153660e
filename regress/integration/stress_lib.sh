# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# Helpers for stress_test, on top of lib.sh and fault_lib.sh: the checks
# every stress case ends with (counts 0, no model process without its
# record, no fd leak in agencyd or the proxy, status still answers),
# background client loops, and memory figures.

TOOLS=$top/regress/tools

# model_port_range: "LO HI", the model ports of this agencyd's config.
model_port_range()
{
	awk '$1 == "ports" { print $2, $4; exit }' agency.conf
}

# upstream_fds PID: how many of PID's fds are TCP connections to a model
# port (the proxy's pooled keep-alive connections to the models, and
# those of requests in flight), found by matching the fds' socket inodes
# with /proc/net/tcp{,6}.
upstream_fds()
{
	local pid=$1 range
	range=$(model_port_range)
	{
		ls -l "/proc/$pid/fd" 2>/dev/null |
		    sed -n 's/.*socket:\[\([0-9]*\)\]$/inode \1/p'
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
	} | awk -v range="$range" '
		function hex(s,   i, v) {
			v = 0
			for (i = 1; i <= length(s); i++)
				v = v * 16 + index("0123456789ABCDEF",
				    toupper(substr(s, i, 1))) - 1
			return v
		}
		BEGIN { split(range, r, " ") }
		$1 == "inode" { mine[$2] = 1; next }
		$1 ~ /^[0-9]+:$/ {
			split($3, rem, ":")
			port = hex(rem[2])
			if (port >= r[1] && port <= r[2] && ($10 in mine))
				n++
		}
		END { print n + 0 }'
}

# proxy_fds PID: the proxy's fds less its upstream connections.  Those
# are pooled keep-alive connections (up to PROXY_POOL_MAX a model port)
# that stay open while their model runs, so their number depends on
# how many requests overlapped, not on a leak; every other fd (clients,
# listeners, the parent link, event loop) must come back exactly.
proxy_fds()
{
	echo $(($(fd_count "$1") - $(upstream_fds "$1")))
}

# fd_snapshot: record agencyd's fd count and the proxy's (less upstream
# connections) in ./fds.before; call it in a quiet state that the case
# returns to before stress_check.
fd_snapshot()
{
	local a p
	a=$(agency_pid)
	p=$(proxy_pid)
	[ -n "$p" ] || fail_log "no proxy found"
	echo "$(fd_count "$a") $(proxy_fds "$p")" > fds.before
	echo "fds before: agencyd $(fd_count "$a"), proxy $(proxy_fds "$p")" \
	    "(+$(upstream_fds "$p") upstream)"
}

fds_back()
{
	local a p
	a=$(agency_pid)
	p=$(proxy_pid)
	[ -n "$p" ] || return 1
	[ "$(fd_count "$a") $(proxy_fds "$p")" = "$(cat fds.before)" ]
}

# status_pids: the pids the status lists (loading or ready models).
status_pids()
{
	status | jq -r '.models[] | select(.pid != null) | .pid' | sort -n
}

# pids_match: every live model process is one a record names, and
# every pid a record names is alive.
pids_match()
{
	local s
	s=$(status_pids) || return 1
	[ "$(model_pids | sort -n)" = "$s" ]
}

# stress_check: every case ends with it (agencyd still running).
stress_check()
{
	local a p
	wait_for 10 in_progress_zero || fail_log "requestsInProgress did" \
	    "not return to 0: $(status | jq -c '[.models[] | [.model, .requestsInProgress]]')"
	wait_for 5 pids_match || fail_log "model processes" \
	    "'$(echo $(model_pids))' but status pids '$(echo $(status_pids))'"
	# A client connection the proxy still holds is closed at the latest
	# a header timeout (10 s) after its last answer: wait past that.
	if ! wait_for 15 fds_back; then
		a=$(agency_pid)
		p=$(proxy_pid)
		ls -l "/proc/$a/fd" "/proc/$p/fd" >&2
		cat /proc/net/tcp /proc/net/tcp6 >&2
		fail_log "fd leak: before (agencyd proxy) $(cat fds.before)," \
		    "after $(fd_count "$a") $(proxy_fds "$p")"
	fi
	echo "fds after: agencyd $(fd_count "$(agency_pid)"), proxy" \
	    "$(proxy_fds "$(proxy_pid)") (+$(upstream_fds "$(proxy_pid)") upstream)"
	status >/dev/null || fail_log "agencyd no longer answers status"
	[ "$(status | jq '.models | length')" -ge 1 ] ||
	    fail_log "status lists no model"
}

# kb PID FIELD: a field of /proc/PID/status in kB (VmRSS, VmHWM).
kb()
{
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# loop_clients N SECONDS MODEL MAXTIME: N background shell loops, each
# POSTing short chat completions one after another until SECONDS have
# passed or the file loops.stop is there (loops_stop), every curl
# bounded by --max-time MAXTIME.  Each request's outcome, "<http code>
# <curl exit> <start ms> <end ms>", is appended to loop.N.log; each
# loop's pid is in loop.N.pid.
loop_clients()
{
	local n=$1 secs=$2 model=$3 maxtime=$4 i
	rm -f loops.stop
	for i in $(seq 1 "$n"); do
		(
			end=$(($(now_ms) + secs * 1000))
			while [ "$(now_ms)" -lt "$end" ] &&
			    [ ! -e loops.stop ]; do
				t0=$(now_ms)
				c=$(curl -s -o /dev/null -w '%{http_code}' \
				    --max-time "$maxtime" \
				    "$BASE/v1/chat/completions" \
				    -H 'Content-Type: application/json' \
				    -d "{\"model\":\"$model\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
				rc=$?
				echo "$c $rc $t0 $(now_ms)" >> "loop.$i.log"
			done
		) &
		echo $! > "loop.$i.pid"
	done
}

# loops_stop: the loops end after the request each is making.
loops_stop()
{
	: > loops.stop
}

# loops_done: every loop_clients loop has ended.
loops_done()
{
	local f
	for f in loop.*.pid; do
		[ -f "$f" ] || continue
		kill -0 "$(cat "$f")" 2>/dev/null && return 1
	done
	return 0
}

# stress_cleanup: fault_cleanup, and the test's own loops and tools.
stress_cleanup()
{
	local f p
	for f in loop.*.pid tool.*.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		case $(cat "/proc/$p/comm" 2>/dev/null) in
		sh|bash|dash|atf-sh|slowloris|badreq|sockjunk)
			kill -KILL "$p" 2>/dev/null ;;
		esac
	done
	fault_cleanup
}

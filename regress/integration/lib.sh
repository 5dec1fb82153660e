# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# Shared by the atf-sh integration tests: start agencyd on a config made
# for the test (free ports, fakelm as every model), ask it things, wait
# for conditions with deadlines, and leave no process behind.
#
# A test calls agency_start CONF_BODY in its body and agency_cleanup in
# its cleanup part.  The config body may use @FAKELM@ and @PORTS@, which
# are replaced with fakelm's path and a free model port range.

top=$(cd "$(atf_get_srcdir)/../.." && pwd)
AGENCYD=$top/agencyd/agencyd
PROXY=$top/agency-proxy/agency-proxy
CTL=$top/agency-ctl/agency-ctl
FAKELM=$top/regress/fakelm/fakelm
FREEPORT=$top/regress/tools/freeport

# stage_bin PATH: a copy of the program at PATH in a directory anyone
# can reach, for the processes that do not run as root (model processes
# run as _agencym): a checkout under /root, say, is out of their reach.
# The directory is named by the program's checksum, so a new build gets
# a new copy and parallel tests share one; run-tests removes the copies
# no run has used for a day.
stage_bin()
{
	local src=$1 name dir sum
	name=$(basename "$src")
	sum=$(cksum < "$src" | cut -d' ' -f1)
	dir=/tmp/agency-regress-$(id -u)-$name-$sum
	if [ ! -x "$dir/$name" ]; then
		mkdir -p "$dir.$$" && cp "$src" "$dir.$$/$name" &&
		    chmod 0755 "$dir.$$" "$dir.$$/$name" &&
		    mv -T "$dir.$$" "$dir" 2>/dev/null
		rm -rf "$dir.$$"
	fi
	touch "$dir" 2>/dev/null	# in use: run-tests keeps it
	echo "$dir/$name"
}

if [ "$(id -u)" -eq 0 ]; then
	FAKELM=$(stage_bin "$FAKELM")
fi

# The users a root agencyd runs its proxy and models as, and the empty
# root-owned directory the proxy is chrooted to.
agency_users()
{
	[ "$(id -u)" -eq 0 ] || return 0
	mkdir -p /var/empty/agency
	chown root:root /var/empty/agency
	chmod 0755 /var/empty/agency
	for u in _agency _agencym; do
		id "$u" >/dev/null 2>&1 ||
		    useradd -r -M -d /var/empty/agency -s /usr/sbin/nologin \
		    "$u" 2>/dev/null || id "$u" >/dev/null 2>&1 ||
		    atf_fail "cannot create the user $u"
	done
}

# wait_for SECONDS COMMAND...: run COMMAND until it succeeds, at most
# SECONDS long, checking every 20 ms.
wait_for()
{
	local limit=$1 i=0
	shift
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le $((limit * 50)) ] || return 1
		sleep 0.02
	done
	return 0
}

# model_ports [PORT...]: a block of 20 ports for the models, all free a
# moment ago and below the ephemeral range (freeport -b: the suite's own
# client connections take their source ports from that range, and would
# now and then take a model's port), holding none of the PORTs (the
# front door's: a config with its listen port in the model range is
# refused).
model_ports()
{
	local p a tries=0 clash
	while :; do
		p=$($FREEPORT -b 20) || atf_fail "no block of 20 free ports"
		clash=0
		for a in "$@"; do
			if [ "$a" -ge "$p" ] && [ "$a" -le $((p + 19)) ]; then
				clash=1
			fi
		done
		[ "$clash" = 0 ] && break
		tries=$((tries + 1))
		[ "$tries" -lt 50 ] || atf_fail "no model ports apart from $*"
	done
	echo "$p to $((p + 19))"
}

# free_port: a free port outside the model range of ./agency.conf, for a
# second listener.
free_port()
{
	local p lo hi tries=0
	set -- $(sed -n 's/^ports \([0-9]*\) to \([0-9]*\)$/\1 \2/p' agency.conf)
	lo=${1:-0} hi=${2:-0}
	while :; do
		p=$($FREEPORT 1)
		if [ "$p" -lt "$lo" ] || [ "$p" -gt "$hi" ]; then
			echo "$p"
			return
		fi
		tries=$((tries + 1))
		[ "$tries" -lt 50 ] || atf_fail "no free port apart from $lo-$hi"
	done
}

# agency_start CONFIG [AGENCYD-ARGS...]: write agency.conf, start agencyd
# in the foreground mode in the background, wait until the front door
# answers.  Sets PORT, BASE, SOCK, and writes agencyd.pid.  The front
# door is on 127.0.0.1, or on the loopback address AGENCY_ADDR.
agency_start()
{
	local conf=$1 ports addr=${AGENCY_ADDR:-127.0.0.1}
	shift
	agency_users
	PORT=$($FREEPORT 1)
	ports=$(model_ports "$PORT")
	SOCK=$PWD/agency.sock
	BASE=http://$addr:$PORT
	{
		echo "listen on $addr port $PORT"
		echo "socket \"$SOCK\""
		echo "$conf"
	} | sed -e "s|@FAKELM@|$FAKELM|g" -e "s|@PORTS@|$ports|g" \
	    > agency.conf
	# A root agencyd refuses a file others may write (a test may run
	# agencyd under umask 0).
	chmod 0644 agency.conf
	echo "$PORT" > port
	# ./ctl: agency-ctl on this agencyd's socket, for atf_check too.
	printf '#!/bin/sh\nexec "%s" -s "%s" "$@"\n' "$CTL" "$SOCK" > ctl
	chmod +x ctl
	"$AGENCYD" -dv -f agency.conf -P "$PROXY" "$@" \
	    > agencyd.log 2>&1 &
	echo $! > agencyd.pid
	if ! wait_for 10 curl -sf "$BASE/health"; then
		cat agencyd.log >&2
		atf_fail "agencyd did not start"
	fi
}

agency_pid()
{
	cat agencyd.pid 2>/dev/null
}

# The proxy is agencyd's child whose command is agency-proxy.
proxy_pid()
{
	local p
	p=$(agency_pid) || return 1
	pgrep -P "$p" -f agency-proxy | head -n 1
}

# Every process agencyd started, recursively (the proxy, the models and
# their children), by walking /proc from agencyd's pid.
descendants()
{
	local p=$1 c
	for c in $(pgrep -P "$p"); do
		echo "$c"
		descendants "$c"
	done
}

# agency_cleanup: SIGTERM agencyd; SIGKILL what it started and what is
# left after the deadline.  Only pids that agencyd.pid leads to.
agency_cleanup()
{
	local p kids
	p=$(agency_pid) || return 0
	kill -0 "$p" 2>/dev/null || return 0
	kids=$(descendants "$p")
	kill -TERM "$p" 2>/dev/null
	wait_for 8 sh -c "! kill -0 $p" || kill -KILL "$p" 2>/dev/null
	for k in $kids; do
		kill -KILL "$k" 2>/dev/null
	done
	return 0
}

# status: the JSON of GET /v1/agency/status.
status()
{
	curl -sf -H "Host: 127.0.0.1:$PORT" "$BASE/v1/agency/status"
}

# field MODEL NAME: one field of a model's status ("null" when null).
field()
{
	status | jq -r --arg m "$1" ".models[] | select(.model == \$m) | .$2"
}

# state_is MODEL STATE
state_is()
{
	[ "$(field "$1" state)" = "$2" ]
}

# in_progress_zero: every model's requestsInProgress is 0.
in_progress_zero()
{
	[ "$(status | jq '[.models[].requestsInProgress] | add')" = 0 ]
}

# chat MODEL [MAX_TOKENS [EXTRA-JSON]]: POST a chat completion; prints
# the body and writes the status code to ./code.
chat()
{
	local model=$1 max=${2:-4} extra=${3:-}
	# bounded, so that a request that hangs fails its test (code 000)
	# with the logs rather than its case's timeout without them
	curl -s -m 90 -o body -w '%{http_code}' "$BASE/v1/chat/completions" \
	    -H 'Content-Type: application/json' \
	    -d "{\"model\":\"$model\",\"max_tokens\":$max,$extra\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}" \
	    > code
	cat body
}

# A runtime for fakelm with extra flags, named NAME.
fakelm_runtime()
{
	local name=$1 flags=$2 stops=${3:-always}
	cat <<EOR
runtime "$name" {
	command "@FAKELM@ --host 127.0.0.1 --port %p --model %m $flags"
	ready get "/health"
	stops on close $stops
}
EOR
}

# A model block: model NAME RUNTIME [lazy] [memory SIZE].
model_block()
{
	local name=$1 rt=$2
	shift 2
	echo "model \"$name\" {"
	echo "	runtime \"$rt\""
	echo "	upstream \"$name\""
	for opt in "$@"; do
		echo "	$opt"
	done
	echo "}"
}

# The number of open fds of a process.
fd_count()
{
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}

# The pids of the live model processes (fakelm) agencyd started.
model_pids()
{
	local p
	for p in $(descendants "$(agency_pid)"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = fakelm ] || continue
		grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && continue
		echo "$p"
	done
}

# alive PID...: whether any of them is still running (not a zombie).
alive()
{
	local p
	for p in "$@"; do
		[ -d "/proc/$p" ] || continue
		grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && continue
		return 0
	done
	return 1
}

# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# bench/large.sh: the large-body and rewrite tables of bench/run (issue
# 15), sourced by it; they run only when asked for (BODIES=1,
# REWRITE=1), as each takes minutes.
#
# Three front doors to the one upstream nginx of the main table (the
# model "nginx", which answers the same 321 bytes to any POST):
#   nginx    proxy_pass, 1 worker, upstream keep-alive, the body read
#            whole into memory first (client_body_buffer_size), as
#            agency reads it
#   haproxy  one thread, http-reuse always (it streams the body on as
#            it comes: its own way)
#   agency   agency-proxy
# and "direct" (wrk to the upstream) in the large-body table.  Rounds
# alternate the paths; the tables give medians, the spread of the
# rounds (min-max), and each front door's CPU a request: utime + stime
# of its process (/proc/PID/stat) over the run, divided by the requests
# wrk counted; agency's adds agencyd's, shown apart.
#
# The bodies are chat requests of many messages of English-like text
# with the usual escapes (\n, \", \\, \t, a \u escape now and then) and
# a little non-ASCII UTF-8 (2, 3 and 4-byte sequences), written by
# large_body to an exact size.  The rewrite table sends each body once
# as it passes through (model "nginx"), and once to a model whose rule
# changes it: "cap" (max tokens 8 under the body's 16), "named" (the
# body names an alias, the model's own name is sent), "moved" (a
# runtime that moves max_completion_tokens to max_tokens); "parts"
# (content as an array of text parts) is changed by nothing (the tree
# path before the scan read parts); "msgcap" is "cap" posted to
# Anthropic's /v1/messages; "resppass" and "respcap" are a Responses
# body (input items of input_text and output_text parts) to /v1/responses,
# passed through and capped (max_output_tokens 8 under its 16).
#
# Knobs: BODIES=1 the large-body table (100 KB and 1 MB, 8 and 32
# connections: about 4.5 minutes with the defaults) and the scan alone
# (bench/scanbench: each way of scanning, seconds), REWRITE=1 the
# rewrite table (285 bytes and 100 KB: about 4 minutes), BODIES_ONLY=1
# skips everything else of bench/run; LARGE_DURATION (5s) a run,
# LARGE_SIZES ("102400 1048576"), LARGE_CONNS ("8 32"), REWRITE_SIZES
# ("285 102400"), REWRITE_CONNS (32); rounds are ROUNDS.  LARGE_PERF=1
# records each front door's profile (perf, cpu-clock) over each run,
# reported into wrk-*.txt.report in the work directory (KEEP=1);
# LARGE_STRACE=1 counts its system calls (strace -c) into
# wrk-*.txt.strace instead.

LARGE_DURATION=${LARGE_DURATION:-5s}
LARGE_SIZES=${LARGE_SIZES:-102400 1048576}
LARGE_CONNS=${LARGE_CONNS:-8 32}
REWRITE_SIZES=${REWRITE_SIZES:-285 102400}
REWRITE_CONNS=${REWRITE_CONNS:-32}

# large_conf: what agency.conf gains for the rewrite table.
large_conf()
{
	cat <<EOF

runtime "nginxmv" {
	command "$NGINX -e stderr -p $UP -c $UP/nginx-%p.conf -g 'daemon off;'"
	ready get "/health"
	kind chat
	stops on close always
	move "max_completion_tokens" to "max_tokens"
}

model "cap" {
	runtime "nginx"
	upstream "cap"
	memory 16M
	max tokens 8
}

model "named" {
	runtime "nginx"
	upstream "nginx"
	memory 16M
	alias "renamed"
}

model "moved" {
	runtime "nginxmv"
	upstream "moved"
	memory 16M
}
EOF
}

# large_body SIZE MODEL TAIL PARTS: a chat request of exactly SIZE
# bytes on standard output.  TAIL is what follows the messages (",\"k\":v"
# members); PARTS=1 puts each content in an array of one text part.
large_body()
{
	LC_ALL=C awk -v size="$1" -v model="$2" -v tail="$3" -v parts="$4" '
	function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed }
	function word(  r) {
		r = rnd() % 1000
		if (r < 8) return u[1 + rnd() % nu]
		if (r < 20) return "\\n\\n"
		if (r < 70) return "\\n"
		if (r < 78) return "\\\"" w[1 + rnd() % nw] "\\\""
		if (r < 80) return "\\\\"
		if (r < 82) return "\\t"
		if (r < 83) return "\\u00e9"
		if (r < 90) return "{\\\"k\\\": [1, 2.5]}"
		return w[1 + rnd() % nw]
	}
	# text of exactly n bytes (n >= 0): words, then blanks
	function text(n,  t, x) {
		t = ""
		for (;;) {
			x = word()
			if (length(t) + 1 + length(x) > n)
				break
			t = t (t == "" ? "" : " ") x
		}
		while (length(t) < n)
			t = t " "
		return t
	}
	function msg(role, t) {
		if (parts == 2)
			return "{\"role\":\"" role "\",\"content\":[{\"type\":\"" (role == "assistant" ? "output_text" : "input_text") "\",\"text\":\"" t "\"}]}"
		if (parts)
			return "{\"role\":\"" role "\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"
		return "{\"role\":\"" role "\",\"content\":\"" t "\"}"
	}
	BEGIN {
		seed = 42
		nw = split("the of and to a in is that for it as was with be by on not this are or from at which but have an they you were their one all we can has there been if more when will would who so no function return value model request answer server memory token context agent tool file line code test", w, " ")
		nu = split("\303\251 \303\274 \342\200\224 \342\200\234 \342\200\235 \346\227\245\346\234\254 \360\237\230\200 \316\273", u, " ")
		head = "{\"model\":\"" model "\",\"" (parts == 2 ? "input" : "messages") "\":["
		end = "]" tail "}"
		role[0] = "user"; role[1] = "assistant"
		out = head
		over = length(msg("assistant", ""))
		for (i = 0; ; i++) {
			sep = i == 0 ? "" : ","
			left = size - length(out) - length(sep) - length(end)
			if (i == 0 && left < over + 8) {
				print "large_body: " size " bytes is too short" > "/dev/stderr"
				exit 1
			}
			r = i == 0 ? "system" : role[i % 2]
			o = length(msg(r, ""))
			# a last message takes what is left; else ~4 KB
			if (left - o <= 4096 + over + 8 + 1) {
				out = out sep msg(r, text(left - o))
				break
			}
			# ~4 KB more, unless it would leave too little for a
			# last one: then this one is the last
			n = 3000 + rnd() % 2000
			if (left - o - n - 1 < 2 * over + 8) {
				out = out sep msg(r, text(left - o))
				break
			}
			out = out sep msg(r, text(n))
		}
		printf "%s", out end
	}'
}

# cputicks PID: utime + stime of PID, in clock ticks.
cputicks()
{
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}

# large_check URL FILE: the path answers the body with the fixed answer.
large_check()
{
	local b
	b=$(curl -s -H 'Content-Type: application/json' --data-binary "@$2" \
	    "$1")
	[ "$b" = "$ANS" ] || die "$1 answered $(printf %.200s "$b") to $2"
}

# large_run PATH URL FILE CONNS OUT: one wrk run with the body in FILE;
# prints "rps p50_ms p99_ms cpu_us agencyd_us errors" (cpu_us of the
# path's front door a request, "-" for direct).
large_run()
{
	local pid="" c0=0 a0=0 c1 a1 n perfpid="" stracepid=""
	case $1 in
	nginx)		pid=$LPID_nginx ;;
	haproxy)	pid=$LPID_haproxy ;;
	direct)		;;
	*)		pid=$PROXY_PID ;;
	esac
	[ -n "$pid" ] && c0=$(cputicks "$pid")
	a0=$(cputicks "$AGENCYD_PID")
	# LARGE_PERF=1: a profile of the front door over the run
	if [ "${LARGE_PERF:-0}" = 1 ] && [ -n "$pid" ]; then
		perf record -q -e cpu-clock -F 1999 -g -p "$pid" \
		    -o "$5.perf" > /dev/null 2>&1 &
		perfpid=$!
	fi
	# LARGE_STRACE=1: the front door's system calls over the run,
	# counted (strace -c; it slows the process, so the run's other
	# figures are not its own)
	if [ "${LARGE_STRACE:-0}" = 1 ] && [ -n "$pid" ]; then
		strace -c -f -p "$pid" -o "$5.strace" > /dev/null 2>&1 &
		stracepid=$!
	fi
	BENCH_BODY_FILE=$3 wrk -t1 -c"$4" -d"$LARGE_DURATION" --latency \
	    -s "$top/bench/body.lua" "$2" > "$5" 2>&1
	if [ -n "$stracepid" ]; then
		kill -INT "$stracepid" 2>/dev/null
		wait "$stracepid"
	fi
	if [ -n "$perfpid" ]; then
		kill -INT "$perfpid" 2>/dev/null
		wait "$perfpid"
		perf report -i "$5.perf" --no-children --sort dso,symbol \
		    --stdio 2>/dev/null | grep -v '^#' | grep '%' |
		    head -n 40 > "$5.report"
	fi
	[ -n "$pid" ] && c1=$(cputicks "$pid")
	a1=$(cputicks "$AGENCYD_PID")
	n=$(awk '/ requests in / { print $1 }' "$5")
	awk -v c0="$c0" -v c1="${c1:-0}" -v a0="$a0" -v a1="$a1" \
	    -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" -v path="$1" '
	function ms(v) {
		if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
		if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
		if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 }
		return v
	}
	/^Requests\/sec:/ { rps = $2 }
	$1 == "50%" { p50 = ms($2) }
	$1 == "99%" { p99 = ms($2) }
	/Non-2xx|Socket errors/ { err = err $0 ";" }
	END {
		cpu = "-"; ad = "-"
		if (n > 0 && path != "direct")
			cpu = sprintf("%.1f", (c1 - c0) * 1e6 / hz / n)
		if (n > 0 && path != "direct" && path != "nginx" &&
		    path != "haproxy")
			ad = sprintf("%.1f", (a1 - a0) * 1e6 / hz / n)
		gsub(/ /, "_", err)
		printf "%.0f %.3f %.3f %s %s %s\n", rps, p50, p99, cpu, ad,
		    (err == "" ? "-" : err)
	}' "$5"
}

# large_start: the nginx proxy and HAProxy of these tables, to UPPORT.
large_start()
{
	local p
	command -v haproxy >/dev/null ||
	    die "haproxy is missing: scripts/deps bench"
	set -- $($FREEPORT 2)
	LNGX_PORT=$1 LHA_PORT=$2
	mkdir -p "$W/lpx/tmp"
	chmod 1777 "$W/lpx/tmp"
	cat > "$W/lpx/nginx.conf" <<EOF
worker_processes 1;
pid $W/lpx/nginx.pid;
error_log stderr warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
	access_log off;
	client_body_temp_path $W/lpx/tmp/body;
	proxy_temp_path $W/lpx/tmp/proxy;
	fastcgi_temp_path $W/lpx/tmp/fastcgi;
	uwsgi_temp_path $W/lpx/tmp/uwsgi;
	scgi_temp_path $W/lpx/tmp/scgi;
	keepalive_requests 10000000;
	client_max_body_size 4m;
	client_body_buffer_size 4m;
	upstream model {
		server 127.0.0.1:$UPPORT;
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$LNGX_PORT;
		location / {
			proxy_pass http://model;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
EOF
	"$NGINX" -e stderr -p "$W/lpx" -c "$W/lpx/nginx.conf" \
	    -g 'daemon off;' > "$W/lpx/nginx.log" 2>&1 &
	LPID_nginxmaster=$!
	pids+=("$LPID_nginxmaster")
	cat > "$W/lpx/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 4096
defaults
	mode http
	timeout connect 5s
	timeout client 60s
	timeout server 60s
	http-reuse always
frontend fe
	bind 127.0.0.1:$LHA_PORT
	default_backend be
backend be
	server up 127.0.0.1:$UPPORT
EOF
	haproxy -db -f "$W/lpx/haproxy.cfg" > "$W/lpx/haproxy.log" 2>&1 &
	LPID_haproxy=$!
	pids+=("$LPID_haproxy")
	LURL_direct=http://127.0.0.1:$UPPORT/v1/chat/completions
	LURL_nginx=http://127.0.0.1:$LNGX_PORT/v1/chat/completions
	LURL_haproxy=http://127.0.0.1:$LHA_PORT/v1/chat/completions
	LURL_agency=$URL_agency
	LURL_messages=${URL_agency%/v1/chat/completions}/v1/messages
	LURL_responses=${URL_agency%/v1/chat/completions}/v1/responses
	large_body 285 nginx ',"max_tokens":16' 0 > "$W/lb-probe.json"
	for p in nginx haproxy; do
		eval "wait_for 5 curl -sf -o /dev/null -H 'Content-Type: application/json' --data-binary @$W/lb-probe.json \$LURL_$p" ||
		    { cat "$W/lpx/"*.log >&2; die "the $p proxy did not start"; }
	done
	LPID_nginx=$(pgrep -P "$LPID_nginxmaster" | head -n 1)
	[ -n "$LPID_nginx" ] || die "no nginx worker"
}

# large_summary FILE: "median min-max" of the numbers in FILE.
large_summary()
{
	local m
	m=$(median < "$1")
	sort -g "$1" | awk -v m="$m" 'NR == 1 { lo = $1 } { hi = $1 }
	    END { printf "%s (%s-%s)\n", m, lo, hi }'
}

# large_record KEY LINE: keep a run's figures for the table.
large_record()
{
	local k=$1
	shift
	echo "$1" >> "$W/L-$k.rps"
	echo "$3" >> "$W/L-$k.p99"
	[ "$4" = - ] || echo "$4" >> "$W/L-$k.cpu"
	[ "$5" = - ] || echo "$5" >> "$W/L-$k.ad"
	[ "$6" = - ] || echo "$k: $6" >> "$W/errors"
}

# large_ratio KEY BASE: KEY's CPU a request over BASE's, and BASE's
# requests/s over KEY's (what the change costs, either way).
large_ratio()
{
	awk -v c="$(large_med $1 cpu)" -v cb="$(large_med $2 cpu)" \
	    -v r="$(large_med $1 rps)" -v rb="$(large_med $2 rps)" 'BEGIN {
		if (c == "-" || cb == "-" || r + 0 == 0) print "-"
		else printf "%.2fx CPU, %.2fx time\n", c / cb, rb / r }'
}

# large_cpu KEY: CPU a request, with agencyd's when there is one.
large_cpu()
{
	if [ -s "$W/L-$1.ad" ]; then
		echo "$(large_med $1 cpu) (+ $(large_med $1 ad))"
	else
		large_med $1 cpu
	fi
}

large_med() { [ -s "$W/L-$1.$2" ] && median < "$W/L-$1.$2" || echo -; }

# size in KB or MB, for the tables
large_size()
{
	if [ "$1" -ge 1048576 ]; then echo "$(($1 / 1048576)) MB"
	elif [ "$1" -ge 1024 ]; then echo "$(($1 / 1024)) KB"
	else echo "$1 B"; fi
}

bodies_table()
{
	local r s c path line
	say ""
	say "large bodies: wrk -t1 -d$LARGE_DURATION, sizes $LARGE_SIZES, connections $LARGE_CONNS, $ROUNDS rounds"
	for s in $LARGE_SIZES; do
		large_body "$s" nginx ',"max_tokens":16' 0 > "$W/lb-$s.json"
		[ "$(wc -c < "$W/lb-$s.json")" -eq "$s" ] ||
		    die "large_body $s wrote $(wc -c < "$W/lb-$s.json") bytes"
		jq -e . "$W/lb-$s.json" > /dev/null ||
		    die "large_body $s is not JSON"
		for path in direct nginx haproxy agency; do
			eval large_check \$LURL_$path "$W/lb-$s.json"
		done
	done
	for r in $(seq 1 "$ROUNDS"); do
		for s in $LARGE_SIZES; do
			for c in $LARGE_CONNS; do
				for path in direct nginx haproxy agency; do
					eval url=\$LURL_$path
					line=$(large_run $path "$url" \
					    "$W/lb-$s.json" "$c" \
					    "$W/wrk-lb-$path-$s-$c-$r.txt")
					say "round $r, $(large_size $s), $c conns, $path: $line"
					large_record "b-$s-$c-$path" $line
				done
			done
		done
	done
	local t1="" t2="" ra rh
	for s in $LARGE_SIZES; do
		for c in $LARGE_CONNS; do
			k=b-$s-$c
			ra=$(awk -v a="$(large_med $k-agency rps)" \
			    -v n="$(large_med $k-nginx rps)" \
			    'BEGIN { printf "%.2f", a / n }')
			rh=$(awk -v a="$(large_med $k-agency rps)" \
			    -v n="$(large_med $k-haproxy rps)" \
			    'BEGIN { printf "%.2f", a / n }')
			t1="$t1| $(large_size $s), $c | $(large_summary "$W/L-$k-direct.rps") | $(large_summary "$W/L-$k-nginx.rps") | $(large_summary "$W/L-$k-haproxy.rps") | $(large_summary "$W/L-$k-agency.rps") | $ra | $rh |
"
			t2="$t2| $(large_size $s), $c | $(large_med $k-direct p99) / $(large_med $k-nginx p99) / $(large_med $k-haproxy p99) / $(large_med $k-agency p99) | $(large_med $k-nginx cpu) / $(large_med $k-haproxy cpu) / $(large_cpu $k-agency) |
"
		done
	done
	say ""
	say "| body, connections | direct req/s | nginx req/s | HAProxy req/s | agency req/s | agency / nginx | agency / HAProxy |"
	say "|---|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$t1"
	say ""
	say "| body, connections | p99 ms direct / nginx / HAProxy / agency | CPU us a request: nginx / HAProxy / agency-proxy (+ agencyd) |"
	say "|---|---|---|"
	printf '%s' "$t2"
}

rewrite_table()
{
	local r s kind path line model tail parts url
	say ""
	say "rewrites: wrk -t1 -c$REWRITE_CONNS -d$LARGE_DURATION, sizes $REWRITE_SIZES, $ROUNDS rounds"
	for m in cap named moved; do
		wait_for 10 model_ready $m ||
		    { cat "$W/agencyd.log" >&2; die "the model $m did not load"; }
	done
	for s in $REWRITE_SIZES; do
		for kind in pass cap named moved parts passmv msgcap resppass \
		    respcap; do
			model=nginx tail=',"max_tokens":16' parts=0 url=$LURL_agency
			case $kind in
			cap)	model=cap ;;
			msgcap)	model=cap url=$LURL_messages ;;
			resppass) tail=',"max_output_tokens":16' parts=2
				url=$LURL_responses ;;
			respcap) model=cap tail=',"max_output_tokens":16' parts=2
				url=$LURL_responses ;;
			named)	model=renamed ;;
			moved)	model=moved tail=',"max_completion_tokens":16' ;;
			passmv)	tail=',"max_completion_tokens":16' ;;
			parts)	parts=1 ;;
			esac
			large_body "$s" $model "$tail" $parts > "$W/rw-$s-$kind.json"
			[ "$(wc -c < "$W/rw-$s-$kind.json")" -eq "$s" ] ||
			    die "large_body $s wrote $(wc -c < "$W/rw-$s-$kind.json") bytes"
			large_check "$url" "$W/rw-$s-$kind.json"
		done
		large_check "$LURL_nginx" "$W/rw-$s-pass.json"
		large_check "$LURL_haproxy" "$W/rw-$s-pass.json"
	done
	for r in $(seq 1 "$ROUNDS"); do
		for s in $REWRITE_SIZES; do
			for kind in nginx haproxy pass cap named passmv moved parts \
			    msgcap resppass respcap; do
				case $kind in
				nginx|haproxy)
					eval url=\$LURL_$kind
					path=$kind f=pass ;;
				msgcap)	url=$LURL_messages path=agency f=$kind ;;
				resp*)	url=$LURL_responses path=agency f=$kind ;;
				*)	url=$LURL_agency path=agency f=$kind ;;
				esac
				line=$(large_run $path "$url" "$W/rw-$s-$f.json" \
				    "$REWRITE_CONNS" "$W/wrk-rw-$kind-$s-$r.txt")
				say "round $r, $(large_size $s), $kind: $line"
				large_record "r-$s-$kind" $line
			done
		done
	done
	say ""
	say "| body | path | req/s median (min-max) | p99 ms | CPU us a request (+ agencyd) | / pass-through |"
	say "|---|---|---:|---:|---:|---:|"
	for s in $REWRITE_SIZES; do
		for kind in nginx haproxy pass cap named passmv moved parts \
		    msgcap resppass respcap; do
			k=r-$s-$kind
			case $kind in
			moved)	base=r-$s-passmv ;;
			respcap) base=r-$s-resppass ;;
			*)	base=r-$s-pass ;;
			esac
			say "| $(large_size $s) | $kind | $(large_summary "$W/L-$k.rps") | $(large_med $k p99) | $(large_cpu $k) | $(large_ratio $k $base) |"
		done
	done
}

# large_tables: the tables asked for, after the main table.
# scan_table: the strict scan alone (bench/scanbench), each way the
# proxy has, over the 1 MB body of the tables and scanbench's own plain
# ASCII and CJK bodies; seconds, no network.
scan_table()
{
	local f=$W/lb-1048576.json
	[ -s "$f" ] || large_body 1048576 nginx ',"max_tokens":16' 0 > "$f"
	say ""
	say "the scan alone: CPU a megabyte, the body read in 128 KB pieces into fresh memory, prescan and scan (bench/scanbench), median of 9 rounds"
	"$W/scanbench" english "$f" || die "scanbench failed"
}

large_tables()
{
	[ "${BODIES:-0}" = 1 ] || [ "${REWRITE:-0}" = 1 ] || return 0
	large_start
	[ "${BODIES:-0}" = 1 ] && bodies_table && scan_table
	[ "${REWRITE:-0}" = 1 ] && rewrite_table
	return 0
}

# large_only: BODIES_ONLY=1, the tables asked for and nothing else
# (errors_end is bench/run's).
large_only()
{
	large_tables
	errors_end
}

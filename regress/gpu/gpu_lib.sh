# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# Shared by the GPU tests: a directory the probe's user can read, with
# the probe, the lying probe and the stand-in libraries in it and the
# stand-ins' state beside them; gpuhost (agencyd's side of the probe)
# to run it; processes to stand for models; cleanup by pid.
#
# A test calls gpu_setup first and gpu_cleanup in its cleanup part.
# The integration tests' lib.sh gives top, FAKELM and wait_for.

. "$(atf_get_srcdir)/../integration/lib.sh"
GPUHOST=$top/regress/tools/gpuhost

GIB=1073741824

# gpu_setup: the directory ($G, kept in ./gdir), and as root the model
# user the probe runs as ($AS: "-u _agencym", or nothing as a user).
gpu_setup()
{
	G=$(mktemp -d /tmp/agency-gpu.XXXXXX) || atf_fail "mktemp"
	echo "$G" > gdir
	chmod 0755 "$G"
	cp "$top/agency-gpu/agency-gpu" "$top/regress/tools/gpuliar" \
	    "$top/regress/gpu/libnvidia-ml.so.1" \
	    "$top/regress/gpu/libcuda.so.1" "$G/" ||
	    atf_fail "cannot stage the probe and the stand-ins"
	AS=
	if [ "$(id -u)" -eq 0 ]; then
		id _agencym >/dev/null 2>&1 ||
		    useradd -r -M -d /var/empty/agency -s /usr/sbin/nologin \
		    _agencym 2>/dev/null || id _agencym >/dev/null 2>&1 ||
		    atf_fail "cannot create the user _agencym"
		AS="-u _agencym"
	fi
	: > pids
}

# state LINE...: the stand-ins' state file, one line an argument.
state()
{
	printf '%s\n' "$@" > "$G/gpu-state"
	chmod 0644 "$G/gpu-state"
}

# Two NVIDIA stand-ins, 24 GiB and 16 GiB, the driver using 300 and
# 200 MiB of them.
UUID0=GPU-11111111-2222-3333-4444-555555555555
UUID1=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
two_cards()
{
	state "device $UUID0 0000:01:00.0 24G 300M NVIDIA Stand-in 24G" \
	    "device $UUID1 0000:41:00.0 16G 200M NVIDIA Stand-in 16G" "$@"
}

# sleeper: a process standing for a model (or another program); its pid
# on standard output, and in ./pids for the cleanup.
sleeper()
{
	sleep 600 >/dev/null 2>&1 &
	echo $! >> pids
	echo $!
}

# host ARG...: gpuhost with the staged probe as the model user and the
# stand-in NVML, no sysfs; its lines in ./out, its log in ./err.  It
# ends within a minute whatever comes (a later -t wins).
host()
{
	"$GPUHOST" -p "$G/agency-gpu" $AS -L "$G/libnvidia-ml.so.1" \
	    -S "$G/nosys" -P /proc -t 60 "$@" > out 2> err
}

# liar MODE ARG...: gpuhost with gpuliar in the probe's place.
liar()
{
	local mode=$1
	shift
	"$GPUHOST" -p "$G/gpuliar" $AS -L "$mode" -t 60 "$@" > out 2> err
}

# snapshot: ./out's first snapshot without the start line (pids vary).
snapshot()
{
	sed -n '/^snapshot /,/^end$/p' out | sed '/^end$/q'
}

# expect FILE: ./got (made by the caller) is FILE's text, else fail
# showing both.
expect()
{
	if ! cmp -s "$1" got; then
		echo "--- expected" >&2; cat "$1" >&2
		echo "--- got" >&2; cat got >&2
		echo "--- err" >&2; cat err >&2
		atf_fail "not the expected lines"
	fi
}

# gone PID: true once PID has exited (a zombie has).
gone()
{
	local st
	st=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

gpu_cleanup()
{
	local p
	if [ -f pids ]; then
		for p in $(cat pids); do
			kill -KILL "$p" 2>/dev/null
		done
	fi
	[ -f gdir ] && rm -rf "$(cat gdir)"
	return 0
}

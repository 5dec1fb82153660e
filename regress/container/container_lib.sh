# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# For the tests that run containers with podman (regress/container):
# podman or a skip with the reason, podman's configuration for these
# machines, the image of this tree (scripts/image, built once and kept
# while the tree is the same), and containers that are removed whatever
# happens.  Sourced after ../integration/lib.sh.
#
# Only loopback: the containers share the host's network (--network
# host) or have none, so no test traffic leaves 127.0.0.0/8.

IMAGE=${AGENCY_IMAGE:-localhost/agency:latest}

# need_podman: skip unless podman can run a container here.  Sets
# CONTAINERS_CONF to a file of the case's own: runc, since crun refuses
# the hybrid cgroup layout of these machines, and default ulimits that
# these machines allow (podman's own are higher than the hard limits,
# and a container cannot raise a hard limit): open files at this
# process's hard limit, processes at 32768 (not this process's limit:
# kyua's test processes have 8, and runc was refused 96362, the
# shell's hard limit, with EPERM).
need_podman()
{
	local n p
	# (dash has no -u for ulimit; the process limit is fixed below.)
	[ "$(id -u)" -eq 0 ] ||
	    atf_skip "podman runs here as root (rootful for the image, runuser for the model user)"
	command -v podman >/dev/null 2>&1 ||
	    atf_skip "podman is not installed (scripts/deps check installs it)"
	command -v runc >/dev/null 2>&1 ||
	    atf_skip "runc is not installed (scripts/deps check installs it)"
	n=$(ulimit -Hn) p=32768
	[ "$n" = unlimited ] && n=1048576
	cat > "$PWD/containers.conf" <<EOC
[containers]
default_ulimits = ["nofile=$n:$n", "nproc=$p:$p"]
[engine]
runtime = "runc"
EOC
	export CONTAINERS_CONF=$PWD/containers.conf
	podman info > podman-info.txt 2>&1 ||
	    atf_skip "podman cannot run here: $(tail -n 1 podman-info.txt)"
}

# need_image: the image of this tree, built by scripts/image unless it
# is there already (minutes the first time: the package, a root file
# system from the mirror).  A failed build fails the case.
need_image()
{
	if [ -n "${AGENCY_IMAGE:-}" ]; then
		podman image exists "$IMAGE" ||
		    atf_fail "AGENCY_IMAGE=$IMAGE is not an image here"
		return 0
	fi
	"$top/scripts/image" > image.out 2> image.log || {
		tail -n 40 image.log >&2
		atf_fail "scripts/image failed (log above)"
	}
	cat image.out
}

# ctr_name WHAT: a container name of this case, removed by ctr_cleanup.
ctr_name()
{
	local n=agency-regress-$$-$1
	echo "$n" >> containers
	echo "$n"
}

# ctr_cleanup: every container this case named, stopped and removed.
ctr_cleanup()
{
	local n
	[ -f containers ] || return 0
	while read -r n; do
		podman rm -f -t 2 "$n" >/dev/null 2>&1
	done < containers
	return 0
}

# ctr_hpids NAME: the host pids of the processes of a running container.
ctr_hpids()
{
	podman top "$1" hpid 2>/dev/null | sed 1d | tr -d ' '
}

# ctr_state NAME: its state (running, exited, ...), or nothing.
ctr_state()
{
	podman inspect --format '{{.State.Status}}' "$1" 2>/dev/null
}

# now_ms: the time, in milliseconds.
now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

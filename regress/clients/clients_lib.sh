# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# For the tests that run the official clients for Node (the npm packages
# of package.json, pinned in package-lock.json) against an agencyd:
# node and npm or a skip, the packages installed once, and a run of one
# of the .test.mjs files here with node --test.  Sourced after
# ../integration/lib.sh.
#
# The packages are installed with "npm ci" into node_modules beside this
# file, once: a later run whose node_modules matches package-lock.json
# does not touch the network.  npm's cache is .npm-cache beside it, so
# nothing is written outside regress/clients.

clients=$top/regress/clients

# node and npm, or skip with the reason.
need_node()
{
	command -v node >/dev/null 2>&1 ||
	    atf_skip "node is not installed (Debian: apt-get install nodejs)"
	command -v npm >/dev/null 2>&1 ||
	    atf_skip "npm is not installed (Debian: apt-get install npm)"
	# node --test and --test-concurrency need node 20.10 or later.
	node -e '
	    const [a, b] = process.versions.node.split(".").map(Number);
	    process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1);' ||
	    atf_skip "node $(node -v) is older than 20.10"
}

# npm_install [DIR]: npm ci into DIR/node_modules (DIR: $clients by
# default) unless it already holds what DIR/package-lock.json says (a
# stamp of the lock's checksum, written after a successful install, and
# every dependency of package.json there).  npm's cache is DIR/.npm-cache.
# Serialized with flock against parallel runs.
npm_install()
{
	local sum dir=${1:-$clients}
	sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
	(
		flock 9
		if [ -f "$dir/node_modules/.agency-lock-sum" ] &&
		    [ "$(cat "$dir/node_modules/.agency-lock-sum")" = "$sum" ] &&
		    jq -r '.dependencies | keys[]' "$dir/package.json" |
		    while read -r p; do
			[ -f "$dir/node_modules/$p/package.json" ] || exit 1
		    done; then
			exit 0
		fi
		cd "$dir" &&
		npm_config_cache="$dir/.npm-cache" \
		npm_config_update_notifier=false \
		    npm ci --no-audit --no-fund --prefer-offline \
		    > "$OLDPWD/npm.log" 2>&1 || exit 1
		echo "$sum" > "$dir/node_modules/.agency-lock-sum"
	) 9> "$dir/.npm-lock" || {
		cat npm.log >&2
		atf_fail "npm ci failed (see npm.log above)"
	}
}

# node_test FILE: the cases of FILE (here), one after another, against
# the front door at $BASE; fails the atf case unless all passed.
node_test()
{
	local rc pass fail
	# A spec reporter for the person reading the log, and TAP in a file
	# for the count of failures.
	if BASE_URL=$BASE node --test --test-concurrency=1 \
	    --test-reporter=spec --test-reporter-destination=stdout \
	    --test-reporter=tap --test-reporter-destination=node.tap \
	    "$clients/$1" > node.out 2>&1; then
		rc=0
	else
		rc=$?
	fi
	cat node.out
	pass=$(sed -n 's/^# pass //p' node.tap)
	fail=$(sed -n 's/^# fail //p' node.tap)
	echo "node --test: ${pass:-?} passed, ${fail:-?} failed (exit $rc)"
	[ "$rc" -eq 0 ] || atf_fail "node --test failed: ${fail:-?} failed, ${pass:-?} passed"
	[ "${pass:-0}" -gt 0 ] || atf_fail "node --test ran no test"
}

# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# Node and the official "openai" npm package for the tests that run it
# (openai_test here, and regress/real): sourced after
# ../integration/lib.sh.  The package is installed with "npm ci" into
# node_modules in this directory, once: a later run whose node_modules
# matches package-lock.json does not touch the network.

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

# npm ci into $clients/node_modules unless it already holds what
# package-lock.json says (a stamp of the lock's checksum, written after a
# successful install).  Serialized with flock against parallel runs.
npm_install()
{
	local sum
	sum=$(sha256sum "$clients/package-lock.json" | cut -d' ' -f1)
	(
		flock 9
		if [ -f "$clients/node_modules/.agency-lock-sum" ] &&
		    [ "$(cat "$clients/node_modules/.agency-lock-sum")" = "$sum" ] &&
		    [ -f "$clients/node_modules/openai/package.json" ]; then
			exit 0
		fi
		cd "$clients" &&
		npm_config_cache="$clients/.npm-cache" \
		npm_config_update_notifier=false \
		    npm ci --no-audit --no-fund --prefer-offline \
		    > "$OLDPWD/npm.log" 2>&1 || exit 1
		echo "$sum" > "$clients/node_modules/.agency-lock-sum"
	) 9> "$clients/.npm-lock" || {
		cat npm.log >&2
		atf_fail "npm ci failed (see npm.log above)"
	}
}


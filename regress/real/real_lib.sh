# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
#
# For the tests against a real llama.cpp llama-server: where it is, a
# copy of it and of the tiny models that the model user can read, and
# runtimes for agency.conf.  Sourced after ../integration/lib.sh.
#
# The server and its models come from ../shared/realserver beside the
# checkout (AGENCY_REALSERVER overrides); where it is absent every case
# is skipped with a line saying so.

REAL=${AGENCY_REALSERVER:-$top/../shared/realserver}

# real_require: skip the case unless the real server is there.
real_require()
{
	[ -r "$REAL/bin/llama-server" ] && [ -r "$REAL/tiny-a.gguf" ] ||
	    atf_skip "no real llama-server at $REAL (../shared/realserver is absent)"
}

# real_stage: a copy of bin/ and the tiny models in a directory every
# user can read (model servers run as _agencym when agencyd is root);
# prints its path.  The folder keeps each shared library's links as
# small files naming their target, so they are made links again here.
# Named by a checksum of the server, so parallel cases share one copy.
real_stage()
{
	local sum dir tmp f b t
	sum=$(cksum < "$REAL/bin/llama-server" | cut -d' ' -f1)
	dir=/tmp/agency-regress-$(id -u)-llama-$sum
	if [ ! -x "$dir/bin/llama-server" ]; then
		tmp=$dir.$$
		mkdir -p "$tmp/bin" || atf_fail "cannot make $tmp"
		for f in "$REAL"/bin/*; do
			b=$(basename "$f")
			t=
			[ "$(stat -c %s "$f")" -lt 256 ] && t=$(cat "$f")
			if [ -n "$t" ] && [ -f "$REAL/bin/$t" ]; then
				ln -s "$t" "$tmp/bin/$b"
			else
				cp "$f" "$tmp/bin/$b"
			fi
		done
		cp "$REAL"/tiny-a.gguf "$REAL"/tiny-b.gguf "$tmp/"
		chmod -R a+rX "$tmp"
		mv -T "$tmp" "$dir" 2>/dev/null
		rm -rf "$tmp"
	fi
	[ -x "$dir/bin/llama-server" ] || atf_fail "staging $dir failed"
	touch "$dir" 2>/dev/null	# in use: run-tests keeps it
	echo "$dir"
}

# real_gen_model OUT SEED ARGS...: make OUT with make-tiny-gguf.py once
# (byte for byte the same each time, see the folder's README); skips the
# case where the generator cannot run (it needs Debian's python3-numpy
# and python3-yaml).
real_gen_model()
{
	local out=$1 seed=$2
	shift 2
	if [ ! -r "$out" ]; then
		/usr/bin/python3 -c 'import numpy, yaml' 2>/dev/null ||
		    atf_skip "python3-numpy and python3-yaml are needed to make $(basename "$out")"
		PYTHONPATH=$REAL/gguf-py /usr/bin/python3 \
		    "$REAL/make-tiny-gguf.py" \
		    --vocab "$REAL/ggml-vocab-llama-spm.gguf" \
		    --out "$out.$$" --seed "$seed" "$@" >/dev/null 2>&1 ||
		    { rm -f "$out.$$"; atf_fail "make-tiny-gguf.py failed"; }
		chmod a+r "$out.$$"
		mv "$out.$$" "$out"
	fi
}

# real_slow_model DIR: make DIR/tiny-c.gguf (230 MB, 7-18 ms a token)
# once, for the cases that must catch a stream in the middle; prints its
# path.
real_slow_model()
{
	real_gen_model "$1/tiny-c.gguf" 3 --n-embd 512 --n-head 8 \
	    --n-layer 8 --n-ff 1536 --n-ctx 4096
	echo "$1/tiny-c.gguf"
}

# real_big_model DIR: make DIR/big.gguf (1.29 GB: 1024 wide, 20 layers,
# 8192 tokens of context) once; prints its path.
real_big_model()
{
	real_gen_model "$1/big.gguf" 4 --n-embd 1024 --n-head 16 \
	    --n-layer 20 --n-ff 2816 --n-ctx 8192
	echo "$1/big.gguf"
}

# llama_runtime NAME DIR [EXTRA-FLAGS [KIND]]: a runtime for the staged
# server in DIR.
llama_runtime()
{
	local name=$1 dir=$2 flags=${3:-} kind=${4:-chat}
	cat <<EOR
runtime "$name" {
	command "$dir/bin/llama-server --host 127.0.0.1 --port %p -m %u --alias %m -c 512 -t 1 $flags"
	ready get "/health"
	kind $kind
	stops on close always
}
EOR
}

# real_model NAME RUNTIME FILE [OPTION...]: a model block whose upstream
# is a model file.
real_model()
{
	local name=$1 rt=$2 file=$3
	shift 3
	echo "model \"$name\" {"
	echo "	runtime \"$rt\""
	echo "	upstream \"$file\""
	for opt in "$@"; do
		echo "	$opt"
	done
	echo "}"
}

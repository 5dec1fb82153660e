# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# agency: GNU make.  "make check" and "make demo" install the Debian
# packages they need first (scripts/deps), then build.

PREFIX ?=	/usr/local
BINDIR ?=	$(PREFIX)/bin
SBINDIR ?=	$(PREFIX)/sbin
LIBEXECDIR ?=	$(PREFIX)/libexec
MANDIR ?=	$(PREFIX)/share/man
# /etc by default and for PREFIX=/usr (a package); under any other
# PREFIX given, its own etc/, so that nothing is written outside it.
ifeq ($(origin PREFIX)$(PREFIX),file/usr/local)
SYSCONFDIR ?=	/etc
else ifeq ($(PREFIX),/usr)
SYSCONFDIR ?=	/etc
else
SYSCONFDIR ?=	$(PREFIX)/etc
endif
# systemd reads these under /usr/local/lib as well as /usr/lib.
UNITDIR ?=	$(PREFIX)/lib/systemd/system
SYSUSERSDIR ?=	$(PREFIX)/lib/sysusers.d
TMPFILESDIR ?=	$(PREFIX)/lib/tmpfiles.d
DESTDIR ?=

CC ?=		cc
# Compilers run at once: one a CPU (JOBS=1 for one at a time).
JOBS ?=		$(shell nproc 2>/dev/null || echo 1)
YACC =		byacc
PKGS =		libbsd-overlay libevent json-c libseccomp libsystemd libtls \
		libcrypto
# libyaml reads llama-swap's configuration for agency-ctl import
# (agency-ctl/yamlread.c): agency-ctl links it, agencyd and the proxy
# never do.
CTL_LIBS =	$(shell pkg-config --libs yaml-0.1 2>/dev/null)

# The path agencyd runs the proxy from (tests point it elsewhere with
# -P), and the configuration it reads without -f.
PROXY_PATH ?=	$(LIBEXECDIR)/agency-proxy
CONF_PATH ?=	$(SYSCONFDIR)/agency.conf

WARN =		-Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes \
		-Wshadow -Wpointer-arith -Wcast-qual -Wsign-compare -Werror
CFLAGS ?=	-O2 -g
CFLAGS +=	$(WARN) -std=gnu11 -D_GNU_SOURCE -Icommon \
		$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS +=	$(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

ifeq ($(SANITIZE),1)
# gcc's null-pointer checks under UBSan make -Wformat-overflow see nulls
# that cannot happen; the warning stays on in the ordinary build.
CFLAGS +=	-fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined -Wno-format-overflow
LDFLAGS +=	-fsanitize=address,undefined
endif

COMMON_SRCS =	$(wildcard common/*.c)
AGENCYD_SRCS =	$(filter-out agencyd/agencyd.c agencyd/parse.c, \
		    $(wildcard agencyd/*.c)) \
		$(patsubst %.y,%.c,$(wildcard agencyd/parse.y))
# console_assets.c is generated (below), so a fresh checkout has none.
PROXY_SRCS =	$(sort $(filter-out agency-proxy/proxy.c, \
		    $(wildcard agency-proxy/*.c)) $(CONSOLE_C))
CTL_SRCS =	$(filter-out agency-ctl/agency-ctl.c, \
		    $(wildcard agency-ctl/*.c))
GPU_SRCS =	$(filter-out agency-gpu/gpu.c, $(wildcard agency-gpu/*.c))
FAKELM_SRCS =	$(wildcard regress/fakelm/*.c)
UNIT_SRCS =	$(wildcard regress/unit/*_test.c)
TOOL_SRCS =	$(wildcard regress/tools/*.c)
PRELOAD_SRCS =	$(wildcard regress/preload/*.c)

COMMON_LIB =	common/libcommon.a
AGENCYD_LIB =	agencyd/libagencyd.a
PROXY_LIB =	agency-proxy/libproxy.a
CTL_LIB =	agency-ctl/libctl.a
GPU_LIB =	agency-gpu/libgpu.a

PROGS =		agencyd/agencyd agency-proxy/agency-proxy \
		agency-ctl/agency-ctl agency-gpu/agency-gpu
# The operator console (console/), served by the proxy from the C file
# tools/embed writes: URL path=file, one a file.
CONSOLE_C =	agency-proxy/console_assets.c
CONSOLE_FILES =	/=console/index.html \
		/console/console.css=console/console.css \
		/console/console.js=console/console.js \
		/console/icon.svg=console/icon.svg
EMBED =		tools/embed

# The GPU stand-ins (regress/gpu): NVML and the CUDA driver API.
STANDINS =	regress/gpu/libnvidia-ml.so.1 regress/gpu/libcuda.so.1

TEST_PROGS =	regress/fakelm/fakelm $(UNIT_SRCS:.c=) $(TOOL_SRCS:.c=) \
		$(PRELOAD_SRCS:.c=.so) $(STANDINS) bench/placebench

all: $(PROGS) $(TEST_PROGS)

deps:
	@scripts/deps build

# agencyd.o has the paths compiled in.  The stamp holds them and is
# written again only when they change, so that "make install
# PREFIX=/opt/agency" after a plain "make" builds agencyd again with
# the paths it is installed to.
PATHS_STAMP =	agencyd/paths.stamp
$(PATHS_STAMP): FORCE
	@echo '$(PROXY_PATH) $(CONF_PATH)' > $@.new; \
	    if cmp -s $@.new $@; then rm -f $@.new; else mv -f $@.new $@; fi
agencyd/agencyd.o: $(PATHS_STAMP)
agencyd/agencyd.o: CFLAGS += -DPROXY_PATH=\"$(PROXY_PATH)\" \
		    -DCONF_PATH=\"$(CONF_PATH)\"
FORCE:

# Built and run on the build machine; the file is built, never edited.
$(EMBED): tools/embed.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)
$(CONSOLE_C): $(EMBED) $(foreach f,$(CONSOLE_FILES),$(lastword $(subst =, ,$(f))))
	$(EMBED) -o $@ $(CONSOLE_FILES)

agencyd/parse.c: agencyd/parse.y
	$(YACC) -o $@ $<

# The generated parser is not held to our warnings.
agencyd/parse.o: agencyd/parse.c agencyd/*.h common/*.h
	$(CC) $(CFLAGS) -Wno-unused-but-set-variable -Iagencyd -c -o $@ $<

$(COMMON_LIB): $(COMMON_SRCS:.c=.o)
	rm -f $@ && ar rcs $@ $^
$(AGENCYD_LIB): $(AGENCYD_SRCS:.c=.o)
	rm -f $@ && ar rcs $@ $^
$(PROXY_LIB): $(PROXY_SRCS:.c=.o)
	rm -f $@ && ar rcs $@ $^
$(CTL_LIB): $(CTL_SRCS:.c=.o)
	rm -f $@ && ar rcs $@ $^
$(GPU_LIB): $(GPU_SRCS:.c=.o)
	rm -f $@ && ar rcs $@ $^

# libbsd-ctor: setproctitle(3) names each model's reaper.
agencyd/agencyd: agencyd/agencyd.o $(AGENCYD_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ \
	    $(shell pkg-config --libs libbsd-ctor 2>/dev/null) $(LDLIBS)
agency-proxy/agency-proxy: agency-proxy/proxy.o $(PROXY_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
agency-ctl/agency-ctl: agency-ctl/agency-ctl.o $(CTL_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CTL_LIBS)
agency-gpu/agency-gpu: agency-gpu/gpu.o $(GPU_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
regress/fakelm/fakelm: $(FAKELM_SRCS:.c=.o) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Small programs the integration tests use, one a source file.
regress/tools/%: regress/tools/%.c regress/tools/*.h $(COMMON_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(COMMON_LIB) $(LDLIBS)
# gpuhost runs agencyd's side of the GPU probe (agencyd/gpulink.c).
regress/tools/gpuhost: regress/tools/gpuhost.c regress/tools/*.h \
    agencyd/*.h $(AGENCYD_LIB) $(COMMON_LIB)
	$(CC) $(CFLAGS) -Iagencyd $(LDFLAGS) -o $@ $< $(AGENCYD_LIB) \
	    $(COMMON_LIB) $(LDLIBS)

# The stand-ins a test loads in place of NVIDIA's libraries; like the
# preload shims, never built with sanitizers.
STANDIN_CC =	$(CC) $(WARN) -std=gnu11 -D_GNU_SOURCE -O2 -g -fPIC -shared
regress/gpu/libnvidia-ml.so.1: regress/gpu/nvml.c regress/gpu/state.c \
    regress/gpu/state.h
	$(STANDIN_CC) -Wl,-soname,libnvidia-ml.so.1 -o $@ \
	    regress/gpu/nvml.c regress/gpu/state.c
regress/gpu/libcuda.so.1: regress/gpu/cuda.c regress/gpu/state.c \
    regress/gpu/state.h
	$(STANDIN_CC) -Wl,-soname,libcuda.so.1 -o $@ \
	    regress/gpu/cuda.c regress/gpu/state.c

# The placement decision's benchmark (make bench runs it first).
bench/placebench: bench/placebench.c agencyd/*.h common/*.h $(AGENCYD_LIB) \
    $(COMMON_LIB)
	$(CC) $(CFLAGS) -Iagencyd $(LDFLAGS) -o $@ $< $(AGENCYD_LIB) \
	    $(COMMON_LIB) $(LDLIBS)

# sizes reads model files with agencyd's own readers.
regress/tools/sizes: regress/tools/sizes.c regress/tools/*.h $(AGENCYD_LIB) \
    $(COMMON_LIB)
	$(CC) $(CFLAGS) -Iagencyd $(LDFLAGS) -o $@ $< $(AGENCYD_LIB) \
	    $(COMMON_LIB) $(LDLIBS)

# formname reads form fields with the front door's own parser.
regress/tools/formname: regress/tools/formname.c agency-proxy/*.h \
    $(PROXY_LIB) $(COMMON_LIB)
	$(CC) $(CFLAGS) -Iagency-proxy $(LDFLAGS) -o $@ $< $(PROXY_LIB) \
	    $(COMMON_LIB) $(LDLIBS)

# Shims a test preloads into a program, never built with sanitizers
# (they would have to come before the sanitizer's own runtime).
regress/preload/%.so: regress/preload/%.c
	$(CC) $(WARN) -O2 -g -fPIC -shared -o $@ $< -ldl

# Unit tests link the libraries; the linker takes only what they use.
regress/unit/import_test: LDLIBS += $(CTL_LIBS)
regress/unit/%_test: regress/unit/%_test.o $(AGENCYD_LIB) $(PROXY_LIB) \
    $(CTL_LIB) $(GPU_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs atf-c)
regress/unit/%_test.o: regress/unit/%_test.c agencyd/*.h agency-proxy/*.h \
    agency-ctl/*.h agency-gpu/*.h common/*.h $(wildcard regress/unit/*.h)
	$(CC) $(CFLAGS) -Iagencyd -Iagency-proxy -Iagency-ctl -Iagency-gpu \
	    $(shell pkg-config --cflags atf-c) -c -o $@ $<

agencyd/%.o: agencyd/%.c agencyd/*.h common/*.h
	$(CC) $(CFLAGS) -Iagencyd -c -o $@ $<
agency-proxy/%.o: agency-proxy/%.c agency-proxy/*.h common/*.h
	$(CC) $(CFLAGS) -Iagency-proxy -c -o $@ $<
agency-ctl/%.o: agency-ctl/%.c agency-ctl/*.h common/*.h
	$(CC) $(CFLAGS) -Iagency-ctl -c -o $@ $<
agency-gpu/%.o: agency-gpu/%.c agency-gpu/*.h common/*.h
	$(CC) $(CFLAGS) -Iagency-gpu -c -o $@ $<
common/%.o: common/%.c common/*.h
	$(CC) $(CFLAGS) -c -o $@ $<
regress/fakelm/%.o: regress/fakelm/%.c regress/fakelm/*.h common/*.h
	$(CC) $(CFLAGS) -c -o $@ $<

check:
	@scripts/deps check
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@regress/run-tests

# The GPU check (scripts/check-gpu): against the real NVML and CUDA
# driver where /dev/nvidiactl and libnvidia-ml.so.1 are, else it says
# why it skips.  "make check" runs it against the stand-ins.
check-gpu:
	@scripts/deps check
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@scripts/check-gpu

demo:
	@scripts/deps check
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@scripts/demo

# An OCI image from Debian packages only (scripts/image): agency's .deb
# in a Debian 12 root file system, in podman's storage as
# localhost/agency.  IMAGE_ARGS: -f, -n NAME, -o FILE (scripts/image).
IMAGE_ARGS ?=
image:
	@scripts/image $(IMAGE_ARGS)

# libFuzzer harnesses (regress/fuzz), each run FUZZ_SECONDS.
FUZZ_SECONDS ?=	60
fuzz:
	@scripts/deps fuzz
	@$(MAKE) -C regress/fuzz -j$(JOBS) all
	@$(MAKE) -C regress/fuzz run FUZZ_SECONDS=$(FUZZ_SECONDS)

# The soak test (regress/soak/run), SOAK_SECONDS long; CI runs 30.
SOAK_SECONDS ?=	600
soak:
	@scripts/deps check
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@SOAK_SECONDS=$(SOAK_SECONDS) regress/soak/run

# Mutation testing (scripts/mutate): each slip of regress/mutants/ in a
# scratch copy, against the tests it names; minutes, so not in CI.
# MUTANTS="name ..." runs only those.
mutate:
	@scripts/deps check
	@scripts/mutate $(MUTANTS)

bench:
	@scripts/deps bench
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@bench/placebench
	@bench/run

# The placement decision alone: seconds, no root.
bench-place:
	@$(MAKE) --no-print-directory -j$(JOBS) bench/placebench
	@bench/placebench

install: $(PROGS)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8
	install -m 0755 agencyd/agencyd $(DESTDIR)$(SBINDIR)/agencyd
	install -m 0755 agency-proxy/agency-proxy \
	    $(DESTDIR)$(LIBEXECDIR)/agency-proxy
	install -m 0755 agency-gpu/agency-gpu \
	    $(DESTDIR)$(LIBEXECDIR)/agency-gpu
	install -m 0755 agency-ctl/agency-ctl $(DESTDIR)$(BINDIR)/agency-ctl
	for m in man/*.[58]; do [ -f "$$m" ] || continue; \
	    sed -e 's|/usr/local/libexec/|$(LIBEXECDIR)/|g' \
	    -e 's|/etc/agency.conf|$(CONF_PATH)|g' "$$m" \
	    > $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} && \
	    chmod 0644 $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit 1; \
	    done
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
	    $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSCONFDIR)
	sed -e 's|/usr/sbin/agencyd|$(SBINDIR)/agencyd|' \
	    -e 's|/usr/bin/agency-ctl|$(BINDIR)/agency-ctl|' \
	    -e 's|/etc/agency.conf|$(CONF_PATH)|' \
	    systemd/agencyd.service > $(DESTDIR)$(UNITDIR)/agencyd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/agencyd.service
	install -m 0644 systemd/agency.sysusers \
	    $(DESTDIR)$(SYSUSERSDIR)/agency.conf
	install -m 0644 systemd/agency.tmpfiles \
	    $(DESTDIR)$(TMPFILESDIR)/agency.conf
	# The operator's configuration is never overwritten.
	[ -e $(DESTDIR)$(CONF_PATH) ] || \
	    install -m 0644 examples/agency.conf $(DESTDIR)$(CONF_PATH)

# What install put, with the same variables; the configuration only as
# install left it, never with the operator's changes.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/agencyd \
	    $(DESTDIR)$(LIBEXECDIR)/agency-proxy \
	    $(DESTDIR)$(LIBEXECDIR)/agency-gpu \
	    $(DESTDIR)$(BINDIR)/agency-ctl \
	    $(DESTDIR)$(UNITDIR)/agencyd.service \
	    $(DESTDIR)$(SYSUSERSDIR)/agency.conf \
	    $(DESTDIR)$(TMPFILESDIR)/agency.conf
	for m in man/*.[58]; do [ -f "$$m" ] || continue; \
	    rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit 1; \
	    done
	if cmp -s examples/agency.conf $(DESTDIR)$(CONF_PATH); then \
	    rm -f $(DESTDIR)$(CONF_PATH); \
	elif [ -e $(DESTDIR)$(CONF_PATH) ]; then \
	    echo "$(DESTDIR)$(CONF_PATH) was changed: kept"; fi

clean:
	rm -f common/*.o agencyd/*.o agency-proxy/*.o agency-ctl/*.o \
	    agency-gpu/*.o regress/fakelm/*.o regress/unit/*.o \
	    agencyd/parse.c \
	    $(CONSOLE_C) $(CONSOLE_C).tmp $(EMBED) \
	    $(PATHS_STAMP) $(PATHS_STAMP).new \
	    $(COMMON_LIB) $(AGENCYD_LIB) $(PROXY_LIB) $(CTL_LIB) \
	    $(GPU_LIB) $(PROGS) $(TEST_PROGS)
	rm -rf regress/.kyua

.PHONY: all deps check check-gpu demo bench bench-place fuzz install \
	uninstall clean soak mutate image
.SUFFIXES:

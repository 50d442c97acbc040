# SPDX-License-Identifier: GPL-2.0
#
# gps: top-level build.
#
#   make            gps.ko for every kernel series (build/<series>/kmod/),
#                   the library (lib/), bench/, the tests (build/tests/),
#                   gpsctl (build/tools/)
#   make check      install dependencies (skip: NO_DEPS=1), build, build the
#                   debug kernel (tools/gps-debug-kernel: KASAN, lockdep,
#                   kmemleak, ...; cached in build/debug-kernel), run the
#                   host unit tests, then the VM tests for every kernel
#                   series (6.1, 6.12) x node count (NODES), in the more
#                   guests of MULTI_GUESTS (several vCPUs per node)
#                   and in the debug kernel's guests of
#                   DEBUG_GUESTS; ends with "N passed, N failed".
#                   DEBUG_KERNEL=0 leaves the debug kernel out (a quicker
#                   run while developing)
#   make check-debug  only the debug kernel's VM tests, at DEBUG_NODES
#                   nodes; any KASAN, lockdep, WARN, BUG or kmemleak
#                   report fails
#   make run        the main job: RUN_CMD in a RUN_NODES-node RUN_SERIES VM
#                   with RUN_CPUS vCPUs per node (default: as many as the
#                   host's cores allow, nproc / RUN_NODES, at least 1)
#   make run-native the same RUN_CMD on the host's kernel with the native
#                   engine (Linux 6.7+; no VM, no module), RUN_NODES devices
#   make soak       torture, fuzz and kill for DURATION seconds per kernel
#                   series (SOAK_SERIES) in a SOAK_NODES-node guest of
#                   SOAK_CPUS vCPUs per node (tools/gps-soak); one line of
#                   figures per guest
#   make figures    the paper-counterpart figures: bench/run-all.sh
#                   (paradigms of every workload, link sweep, queue sweep)
#                   in a FIGURES_SERIES guest of each of FIGURES_NODES
#                   nodes x FIGURES_CPUS vCPUs, console logs in
#                   build/figures/vm-N.log, then tools/gps-plot: tables
#                   printed and in build/figures/tables.txt, PNGs there
#                   with python3-matplotlib.  FIGURES_QUICK=1: run-all.sh
#                   -q (small sizes: about 3 min instead of 70 on 2 cores)
#   make bundle BUNDLE=DIR  a self-contained test bed folder (qemu, its
#                   libraries and firmware, the kernels, the payload, DIR/run)
#                   for a many-core machine without qemu (tools/gps-bundle)
#   make install    the library (PREFIX, DESTDIR), delegated to lib/,
#                   and gpsctl with its man page
#   make dkms-install   as root: gps.ko through DKMS for the running
#                   kernel (KVER=... for another), rebuilt by DKMS for
#                   every kernel installed later (tools/gps-dkms)
#   make dkms-uninstall  as root: every DKMS build of gps removed
#   make dkms-check  dkms build against each series' headers in a scratch
#                   DKMS tree (make check does it too)
#   make docs       Documentation/ as HTML in build/docs/html (Sphinx and
#                   the kernel's kernel-doc extension; a warning fails)
#   make lint       shellcheck every shell script, kernel-doc -Wall the
#                   driver and the uapi header, make docs: a warning fails
#
# Variables: SERIES (kernel series, default "6.1 6.12"), NODES (node counts
# for check, default "4"; NODES_6.1 for 6.1, default none), MULTI_GUESTS
# (check's more guests, SERIES/NODES or SERIES/NODESxCPUS, default
# "6.12/2x2 6.1/4x2"), DEBUG_GUESTS (check's guests of the debug kernel,
# default "debug/2x2": the debug kernel runs the suite about 3x slower),
# PERF_GUESTS (check's guests that carry perf, default "6.12/2x2"),
# KMOD_ONLY_GUESTS (check's guests that run tests/kmod and tests/lib/torture
# only, default "6.12/1 6.1/4x2 debug/2x2"),
# GPS_DEBUG=1 (build with CONFIG_GPS_DEBUG),
# VM_TIMEOUT (seconds per VM), NO_DEPS=1; for check-debug DEBUG_NODES
# (default "2 4") and DEBUG_VM_TIMEOUT; for figures FIGURES_SERIES (default
# 6.12), FIGURES_NODES (default "4 2"), FIGURES_CPUS (default 1),
# FIGURES_QUICK=1, FIGURES_TIMEOUT (seconds per guest).

SERIES ?= 6.1 6.12
NODES ?= 4
# a series' own node counts, where they differ from NODES: 6.1 runs only
# as 6.1/4x2 (MULTI_GUESTS), which keeps CI under 45 minutes
NODES_6.1 ?=
# make check's more guests: several vCPUs per node (one node, 6.12/1,
# left make check on 2026-12-02 for CI's 45 minutes: tests/run-check.sh
# boots it by default)
MULTI_GUESTS ?= 6.12/2x2 6.1/4x2
# make check's guests of the debug kernel: two nodes of two vCPUs, the
# paths between devices and the races; make check-debug boots 2 and 4
DEBUG_GUESTS ?= debug/2x2
# make check's guests that carry perf (tests/kmod/trace records through
# it): SERIES/NODES or SERIES/NODESxCPUS
PERF_GUESTS ?= 6.12/2x2
# make check's guests that run the driver's tests and of the library's
# only the torture test (the others run against gps.ko in the 6.12 guests
# of 4 and 2 x 2, and natively on the host)
KMOD_ONLY_GUESTS ?= 6.12/1 6.1/4x2 debug/2x2
VM_TIMEOUT ?= 900
# guests booted at the same time by make check (1: consoles streamed)
JOBS ?= 1
DEBUG_NODES ?= 2 4
DEBUG_KERNEL ?= 1
CHECK_SERIES := $(SERIES)
# each series at its node counts (NODES_<series>, else NODES)
CHECK_BASE := $(foreach s,$(CHECK_SERIES),$(foreach n,$(if $(filter undefined,$(origin NODES_$(s))),$(NODES),$(NODES_$(s))),$(s)/$(n)))
# the MULTI_GUESTS of the series being checked, then the debug guests
CHECK_MULTI := $(foreach g,$(MULTI_GUESTS),$(if $(filter $(firstword $(subst /, ,$(g))),$(CHECK_SERIES)),$(g))) \
	$(if $(filter 1,$(DEBUG_KERNEL)),$(DEBUG_GUESTS))
DEBUG_VM_TIMEOUT ?= 2400
BUILD := $(CURDIR)/build

RUN_SERIES ?= 6.12
RUN_NODES ?= 4
# vCPUs per node: as many as the host has cores for (empty: nproc/RUN_NODES)
RUN_CPUS ?=
# make soak: seconds per guest, series, nodes, vCPUs per node (empty:
# nproc/SOAK_NODES, at least 2)
DURATION ?= 600
SOAK_SERIES ?= 6.1 6.12
SOAK_NODES ?= 4
SOAK_CPUS ?=
BUNDLE ?= build/bed
# make figures: bench/run-all.sh in a guest of each node count, then
# tools/gps-plot, into FIGURES; FIGURES_QUICK=1 is run-all.sh -q
FIGURES_SERIES ?= 6.12
FIGURES_NODES ?= 4 2
FIGURES_CPUS ?= 1
FIGURES_QUICK ?= 0
# seconds per guest (empty: 1800 quick, 7200 full)
FIGURES_TIMEOUT ?=
FIGURES := $(BUILD)/figures
FIGURES_Q := $(if $(filter 1,$(FIGURES_QUICK)),-q)
FIGURES_T := $(or $(FIGURES_TIMEOUT),$(if $(FIGURES_Q),1800,7200))
# The main workload (a path relative to the repo, run in the VM's /gps)
RUN_CMD ?= build/examples/mvmul

PREFIX ?= /usr/local
DESTDIR ?=

# the sources kernel-doc checks in make lint
KDOC_SRCS := $(filter-out %.mod.c,$(wildcard kmod/*.[ch])) $(wildcard core/*.[ch]) \
	include/uapi/linux/gps.h

KMOD_FLAGS := GPS_INCLUDE=$(CURDIR)/include KCFLAGS=-Werror
ifeq ($(GPS_DEBUG),1)
KMOD_FLAGS += CONFIG_GPS_DEBUG=y
endif

ifeq ($(NO_DEPS),1)
DEPS := @true
else
DEPS := tools/install-deps.sh
endif

all: modules lib bench tests tools

# gps.ko per kernel series: the kmod/ sources are copied to
# build/<series>/kmod/ so that the two builds never clobber each other.
# module-debug builds it against the debug kernel's tree (built if needed).
modules: $(addprefix module-,$(SERIES))

# the debug kernel's module has the debug checks and fault injection
module-debug: KMOD_FLAGS += CONFIG_GPS_DEBUG=y

# A source that left kmod/ or core/ leaves the copy too: a quoted
# #include finds the including file's folder first, so a stale header
# there would be built instead of core/'s.
module-%: FORCE
	@kdir=$$(if [ "$*" = debug ]; then tools/gps-debug-kernel kdir; \
		else tools/gps-kernel headers $*; fi) || exit 1; \
	mkdir -p $(BUILD)/$*/kmod $(BUILD)/$*/core && \
	for d in kmod core; do \
		(cd $(BUILD)/$*/$$d && find . -type f -name '*.[ch]' \
			! -name '*.mod.c') | while read -r f; do \
			[ -e "$$d/$$f" ] || rm -f "$(BUILD)/$*/$$d/$$f"; \
		done; \
	done && \
	(cd kmod && find . -type f \( -name '*.[ch]' -o -name Kbuild \
		-o -name Makefile \) ! -name '*.mod.c' \
		-exec cp -p --parents {} $(BUILD)/$*/kmod/ \;) && \
	cp -p core/*.[ch] $(BUILD)/$*/core/ && \
	echo "  KMOD    $* ($$kdir)" && \
	$(MAKE) -s -C $(BUILD)/$*/kmod KDIR=$$kdir $(KMOD_FLAGS)

lib: FORCE
	$(MAKE) -C lib

bench: lib FORCE
	$(MAKE) -C bench

tests: lib FORCE
	$(MAKE) -C tests

# Documentation/ into build/docs/html, every page read again (-E), so that
# a warning is never hidden by a previous build; the kernel's kernel-doc
# extension and script are extracted first from linux-source-6.12 into
# build/sphinx (Documentation/conf.py)
docs: FORCE
	$(DEPS)
	@tools/gps-kernel sphinx >/dev/null
	sphinx-build -q -E -W --keep-going -b html -d $(BUILD)/docs/doctrees \
		Documentation $(BUILD)/docs/html

# Any warning fails: shellcheck of every shell script of the tree (*.sh,
# and every file whose first line runs sh or bash; build/ aside),
# kernel-doc -Wall of the driver and the uapi header, and make docs.
lint: docs FORCE
	@scripts=$$(find . \( -path ./build -o -path ./.git \) -prune -o \
		-type f -print | LC_ALL=C sort | xargs awk 'FNR == 1 { \
		if (FILENAME ~ /\.sh$$/ || /^#!.*[\/ ](ba|da)?sh([ \t]|$$)/) \
			print substr(FILENAME, 3); \
		nextfile }') && \
	echo "  SHELLCHECK" $$scripts && shellcheck $$scripts
	@echo "  KERNEL-DOC $(KDOC_SRCS)" && \
	$(BUILD)/sphinx/kernel-doc -Wall -Werror -none $(KDOC_SRCS)

# gpsctl (build/tools/gpsctl); the scripts of tools/ are used in place
tools: FORCE
	@test -x tools/gps-vm && test -x tools/gps-kernel
	$(MAKE) -C tools/gpsctl

# the modules one series at a time (each may fetch its headers with
# apt-get), the rest with a job per core
check: FORCE
	$(DEPS)
	$(MAKE) modules
	$(MAKE) -j$$(nproc) lib bench tests tools
ifeq ($(DEBUG_KERNEL),1)
	tools/gps-debug-kernel build
	$(MAKE) module-debug
endif
	tests/run-check.sh -s "$(CHECK_SERIES)" -n "" -g "$(CHECK_BASE) $(CHECK_MULTI)" \
		-P "$(PERF_GUESTS)" -k "$(KMOD_ONLY_GUESTS)" -t $(VM_TIMEOUT) -j $(JOBS)

check-debug: FORCE
	$(DEPS)
	tools/gps-debug-kernel build
	$(MAKE) lib tests module-debug
	tests/run-check.sh -U -s debug -n "$(DEBUG_NODES)" -t $(DEBUG_VM_TIMEOUT)

run: FORCE
	$(DEPS)
	$(MAKE) all
	@host=$$(nproc); cpus=$(RUN_CPUS); \
	[ -n "$$cpus" ] || cpus=$$((host / $(RUN_NODES))); \
	[ "$$cpus" -ge 1 ] || cpus=1; \
	echo "make run: kernel $(RUN_SERIES), $(RUN_NODES) nodes x $$cpus vCPU(s) per node (host: $$host cores): $(RUN_CMD)"; \
	tools/gps-vm -B -k $(RUN_SERIES) -n $(RUN_NODES) -c $$cpus -t $(VM_TIMEOUT) -- $(RUN_CMD)

# The same job on the host's own kernel with the native engine (Linux
# 6.7+, no VM, no module): RUN_NODES devices sharing the host's CPUs.
run-native: FORCE
	$(DEPS)
	$(MAKE) all
	@echo "make run-native: kernel $$(uname -r), native engine, $(RUN_NODES) devices (host: $$(nproc) cores): $(RUN_CMD)"
	GPSU_ENGINE=user GPSU_DEVICES=$(RUN_NODES) $(RUN_CMD)

soak: FORCE
	$(DEPS)
	$(MAKE) all
	tools/gps-soak -B -k "$(SOAK_SERIES)" -n $(SOAK_NODES) \
		$(if $(SOAK_CPUS),-C $(SOAK_CPUS)) -d $(DURATION)

# One guest at a time, each console streamed and kept in FIGURES/vm-N.log;
# on a terminal "step i of n, elapsed, ETA" per guest (tools/gps-progress.sh,
# the ETA from the last run of the same shape: FIGURES/steps) and, inside,
# per run-all.sh step (GPS_PROGRESS passed on, as make's progress decided).
# A guest that fails (a result that differs from one device's, a
# timeout) stops neither the others nor the tables; make fails at the end.
# gps-plot runs under Debian's python3 (install-deps.sh's matplotlib) when
# the python3 of PATH has no matplotlib (a pyenv, a venv).
figures: FORCE
	$(DEPS)
	$(MAKE) module-$(FIGURES_SERIES) lib bench
	@out=$(FIGURES); mkdir -p $$out && \
	rm -f $$out/vm-*.log $$out/tables.txt $$out/*.png || exit 1; \
	what="$(FIGURES_SERIES) $(FIGURES_NODES) $(FIGURES_CPUS) $(FIGURES_Q)"; \
	hist=; \
	if [ -f $$out/steps ] && [ "$$(cat $$out/steps.what 2>/dev/null)" = "$$what" ]; then \
		mv $$out/steps $$out/steps.last && hist=$$out/steps.last; \
	fi; \
	echo "$$what" >$$out/steps.what; : >$$out/steps; \
	progress_log=$$out/steps; . tools/gps-progress.sh; \
	set -- $(FIGURES_NODES); progress_init $$# "$$hist"; \
	t0=$$(date +%s); rc=0; logs=; \
	for n in $(FIGURES_NODES); do \
		log=$$out/vm-$$n.log; logs="$$logs $$log"; \
		progress_step vm-$$n; \
		echo "make figures: kernel $(FIGURES_SERIES), $$n nodes x $(FIGURES_CPUS) vCPU(s) per node (host: $$(nproc) cores): build/bench/run-all.sh $(FIGURES_Q) > $${log#$(CURDIR)/}"; \
		GPS_PROGRESS=$$progress_on tools/gps-vm -B -k $(FIGURES_SERIES) \
			-n $$n -c $(FIGURES_CPUS) \
			-t $(FIGURES_T) -o $$log -- build/bench/run-all.sh $(FIGURES_Q) || \
			{ echo "make figures: the $$n-node guest exited $$?"; rc=1; }; \
		progress_done; \
	done; \
	py=python3; python3 -c 'import matplotlib' 2>/dev/null || \
		! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || \
		py=/usr/bin/python3; \
	$$py tools/gps-plot -o $$out $$logs >$$out/tables.txt || rc=1; \
	cat $$out/tables.txt; \
	echo "make figures: $$(progress_fmt $$(($$(date +%s) - t0))) for the guests and the tables; in $${out#$(CURDIR)/}/:" \
		$$(cd $$out && ls vm-*.log tables.txt *.png 2>/dev/null); \
	exit $$rc

bundle: FORCE
	$(DEPS)
	$(MAKE) all
	tools/gps-bundle -B -k "$(SERIES)" $(BUNDLE)

install: FORCE
	$(MAKE) -C lib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools/gpsctl install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

dkms-install: FORCE
	$(DEPS)
	tools/gps-dkms install

dkms-uninstall: FORCE
	tools/gps-dkms uninstall

dkms-check: FORCE
	$(DEPS)
	tools/gps-dkms check $(SERIES)

clean: FORCE
	rm -rf $(BUILD)/tests $(BUILD)/docs \
		$(foreach s,$(SERIES),$(BUILD)/$(s)/kmod)
	$(MAKE) -C lib clean
	$(MAKE) -C bench clean
	$(MAKE) -C tools/gpsctl clean

# also drops the cached kernel images, the kselftest harness and the
# kernel-doc extension
distclean: clean
	rm -rf $(BUILD)

FORCE:

.PHONY: all modules lib bench tests docs lint tools check check-debug run run-native soak figures bundle install dkms-install dkms-uninstall dkms-check clean distclean FORCE

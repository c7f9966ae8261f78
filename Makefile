# dolsot - a stateful Python REPL for LLM agents, in one binary.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man

PYTHON_CONFIG ?= /usr/bin/python3.11-config
PY_INCLUDES := $(shell $(PYTHON_CONFIG) --includes)
PY_CONFIGDIR := $(shell $(PYTHON_CONFIG) --configdir)
PY_PREFIX := $(shell $(PYTHON_CONFIG) --prefix)
PY_STATIC := $(PY_CONFIGDIR)/libpython3.11-pic.a
# libpython is linked whole and its symbols exported, so that extension
# modules (numpy, _ctypes, _ssl, ...) loaded later find them in the binary.
PY_LDLIBS := -Wl,--whole-archive $(PY_STATIC) -Wl,--no-whole-archive \
	-ldl -lm -Wl,-Bstatic -lz -lexpat -Wl,-Bdynamic -lpthread -lutil
# libseccomp (the sandbox's system call filter) is linked in too.
SECCOMP_LIBS := -Wl,-Bstatic -lseccomp -Wl,-Bdynamic
# jansson (the --json output, the warm type checker's LSP and dmypy
# messages) is linked in too.
JANSSON_LIBS := -Wl,-Bstatic -ljansson -Wl,-Bdynamic
# hiredis (the Redis store) too, when Debian's static library is there.
HIREDIS_STATIC := -Wl,-Bstatic -lhiredis -Wl,-Bdynamic
HIREDIS_LIBS := $(if $(wildcard /usr/lib/*/libhiredis.a /usr/lib/libhiredis.a),\
	$(HIREDIS_STATIC),-lhiredis)
# libcrypto (SHA-256 for the sessions' signatures, sign.c) is linked in too.
CRYPTO_LIBS := -Wl,-Bstatic -lcrypto -Wl,-Bdynamic -ldl -lpthread
# libmicrohttpd (dolsot mcp --http) is not linked: mcp/mhd.c loads it
# when that command starts (mhd.h says why).

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Werror=shadow -Werror=missing-prototypes \
	-Werror=format=2 -Werror=switch-default
ALL_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DPY_PREFIX='"$(PY_PREFIX)"' $(CFLAGS)
LDFLAGS ?=
VERSION := 0.3.0

# The spine sits at the top (the design card's files); every other room
# lives in its subsystem's folder, each with a README naming its door.
SPINE := main.c repl.c worker.c store_file.c store_mem.c typegate.c output.c
SUBSYSTEMS := base store sandbox typegate worker server call mcp
INCLUDES := -I. $(SUBSYSTEMS:%=-I%)
ALL_CFLAGS += $(INCLUDES)
# The worker's Python half, and the mypy daemon's, compiled into the binary.
EMBEDDED_PY := $(wildcard worker/py/*.py) typegate/checkd_mypy.py
SRCS := $(SPINE) $(foreach d,$(SUBSYSTEMS),$(wildcard $(d)/*.c))
HEADERS := $(wildcard *.h $(SUBSYSTEMS:%=%/*.h))
# Everything the build makes goes under build/, in the tree's own folders
# (objects, dependency files, the generated *_py.c, libdolsot.a, test
# programs, sanitizer and fuzz builds); only the binary itself is ./dolsot,
# where the README's commands run it.
B := build
PY_OBJS := $(EMBEDDED_PY:%.py=$(B)/%_py.o)
LIB_OBJS := $(filter-out $(B)/main.o,$(SRCS:%.c=$(B)/%.o)) $(PY_OBJS) $(B)/result_schema.o
OBJS := $(B)/main.o $(LIB_OBJS)

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null) $(CRYPTO_LIBS)
# A suite is tests/TIER/check_NAME.c: unit (no binary runs), cli (the
# binary, cold and again warm), server (the warm server's own), slow (the
# real binary once: sandbox, containment, type checkers).  Every suite is
# linked against libdolsot.a (all of the program but main.o), so a suite
# takes what it calls; the shared helpers come from tests/lib.
UNIT_TESTS := $(basename $(wildcard tests/unit/check_*.c))
CLI_TESTS := $(basename $(wildcard tests/cli/check_*.c))
SERVER_TESTS := $(basename $(wildcard tests/server/check_*.c))
SLOW_TESTS := $(filter-out tests/slow/check_valgrind,$(basename $(wildcard tests/slow/check_*.c)))
TESTS := $(UNIT_TESTS) $(CLI_TESTS) $(SERVER_TESTS) $(SLOW_TESTS)
TEST_LIB_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard tests/lib/*.c))
# libpython as an ordinary archive here: a suite that calls nothing of
# Python's links none of it.
TEST_LIBS := $(PY_STATIC) -ldl -lm -lz -lexpat -lpthread -lutil $(SECCOMP_LIBS) \
	$(JANSSON_LIBS) $(HIREDIS_LIBS) $(CHECK_LIBS)

all: dolsot

# Not a PIE: libpython's tables of pointers would need ~39,000 relocations
# at every start, about 0.9 ms of each call (bench/RESULTS.md).
dolsot: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -no-pie -Wl,-E -Wl,--build-id=sha1 -o $@ $(OBJS) $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS) $(HIREDIS_LIBS) $(CRYPTO_LIBS)

$(B)/worker.o $(B)/worker/dolsotmod.o $(B)/worker/unitmap.o $(B)/worker/flat.o: ALL_CFLAGS += $(PY_INCLUDES)
$(B)/main.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'

# The worker's Python half (worker/py/worker.py and the modules it imports
# through _dolsot) is compiled into the binary, as source and as bytecode
# made by the same Python version: DIR/NAME.py becomes build/DIR/NAME_py.c.
PYTHON ?= /usr/bin/python3.11
$(B)/%_py.c: %.py tools/embed.py
	@mkdir -p $(@D)
	$(PYTHON) tools/embed.py $(notdir $*) $< $@
.PRECIOUS: $(B)/%_py.c

# schema/result.schema.json, for the MCP tools' output schemas (mcp_tools.c).
$(B)/result_schema.c: schema/result.schema.json
	@mkdir -p $(@D)
	$(PYTHON) -c 'import json, sys; t = open(sys.argv[1]).read(); json.loads(t); \
		print("/* made from " + sys.argv[1] + " by the Makefile */"); \
		print("#include \"result_schema.h\""); \
		print("const char result_schema_json[] = " + json.dumps(t, ensure_ascii=False) + ";")' $< > $@
$(B)/result_schema.o: $(B)/result_schema.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
$(B)/result_schema.asan.o: $(B)/result_schema.c
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c -o $@ $<

$(B)/%_py.o: ALL_CFLAGS += -Wno-missing-prototypes -Wno-missing-variable-declarations

$(B)/%_py.o: $(B)/%_py.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -Itests/lib -MMD -MP -c -o $@ $<

$(B)/libdolsot.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^
$(B)/tests/libtest.a: $(TEST_LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# check_sandbox_enter embeds Python, as a warm zygote does.
$(B)/tests/unit/check_sandbox_enter.o $(B)/tests/unit/check_sandbox_enter.asan.o: \
	ALL_CFLAGS += $(PY_INCLUDES)
$(B)/tests/unit/check_sandbox_enter $(B)/tests/unit/check_sandbox_enter-asan: \
	TEST_LIBS := -Wl,-E $(PY_LDLIBS) $(TEST_LIBS)

$(TESTS:%=$(B)/%) $(B)/tests/slow/check_valgrind: $(B)/%: $(B)/%.o $(B)/tests/libtest.a $(B)/libdolsot.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(TEST_LIBS)

deps:
	@sh tools/deps.sh build

# One per fuzz harness (see fuzz/fuzz.mk), so recursively expanded.
REGRESS_TESTS = $(FUZZ_HARNESSES:%=tests/regress/check_regress_%)

# The tiers (HACKING.md, "Tests in tiers").  tests/run.py runs TEST_JOBS
# suites at once (most of a suite's time is waiting on the processes it
# starts), each with its output kept apart and printed whole, and ends with
# a table of every suite's seconds.  A suite whose TCases are long and
# independent runs as one job per TCase (SUITE@TCASE).  The CLI suites run
# twice, with identical expectations: cold, and with the warm server already
# up for every test.
TEST_JOBS ?= 4
RUN_TESTS = $(PYTHON) tests/run.py -j $(TEST_JOBS)
# The ways of running a suite of cli_modes_add (tests/lib/cli_helpers.h).
# The jobs that run dolsot as the test user run one at a time (!user):
# their processes count against each other's --max-procs; so do the
# sandbox's as root, whose cells run as one host uid (!sandbox-root).
ROOT_TCASES := root-cold root-warm
USER_TCASES := user-cold user-warm
SPLIT_SLOW := tests/slow/check_typegate tests/slow/check_contain tests/slow/check_sandbox \
	tests/slow/check_trust tests/slow/check_crash
TYPEGATE_TCASES := warm-pyright corpus-cold-pyright corpus-warm-mypy corpus-warm-pyright \
	warm-checker corpus-cold-mypy gate hints fail-open runner parse
# check_crash's stores, one job each (the longest first).
CRASH_TCASES := cmd cmd-2 cmd-client cmd-client-2 redis memory-server file memory
# Started in this order, the longest first.
CHECK_JOBS = $(CRASH_TCASES:%=tests/slow/check_crash@%) warm:tests/pi \
	$(TYPEGATE_TCASES:%=tests/slow/check_typegate@%) \
	$(USER_TCASES:%=tests/slow/check_sandbox@%!user) \
	$(ROOT_TCASES:%=tests/slow/check_sandbox@%!sandbox-root) \
	tests/slow/check_trust!user $(USER_TCASES:%=tests/slow/check_contain@%!user) \
	$(ROOT_TCASES:%=tests/slow/check_contain@%) \
	cold:tests/python warm:tests/python \
	$(CLI_TESTS:%=warm:%) $(CLI_TESTS:%=cold:%) \
	$(SERVER_TESTS) $(filter-out $(SPLIT_SLOW),$(SLOW_TESTS)) \
	$(filter-out tests/unit/check_sandbox_enter,$(UNIT_TESTS)) \
	tests/unit/check_sandbox_enter!user $(REGRESS_TESTS)
# The fast cases of each CLI suite (tests/quick.txt), cold and warm.
QUICK_JOBS = cold:tests/python $(CLI_TESTS:%=warm:%) $(CLI_TESTS:%=cold:%) \
	$(UNIT_TESTS) $(REGRESS_TESTS)

check: layers
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) dolsot $(TESTS:%=$(B)/%) $(REGRESS_TESTS:%=$(B)/%)
	$(RUN_TESTS) --whole $(CHECK_JOBS)

# For developers between edits, from a built tree: a few minutes.
quick: layers
	$(MAKE) dolsot $(UNIT_TESTS:%=$(B)/%) $(CLI_TESTS:%=$(B)/%) $(REGRESS_TESTS:%=$(B)/%)
	$(RUN_TESTS) --quick $(QUICK_JOBS)

# The signal stream of tests/cli/check_callid at the issue's length: 300 calls,
# each stopped by SIGTERM, SIGINT or SIGHUP at random moments and retried
# with its --call-id until it ends cleanly; the counter must come out exact.
# Cold and warm, on a 16 MiB session; about 10 minutes in all.  Then dolsot
# mcp --http's 1,000 idle connections (tests/cli/check_mcp_http).  Not part of
# `make check`.
SOAK_CALLS ?= 300
soak: dolsot $(B)/tests/cli/check_callid $(B)/tests/cli/check_mcp_http
	DOLSOT_SERVER=off DOLSOT_TEST_STREAM=$(SOAK_CALLS) CK_RUN_CASE=stream \
		sh tests/run.sh tests/cli/check_callid
	DOLSOT_SERVER=auto DOLSOT_TEST_WARM=1 DOLSOT_TEST_STREAM=$(SOAK_CALLS) \
		CK_RUN_CASE=stream sh tests/run.sh tests/cli/check_callid
	DOLSOT_TEST_HTTP_IDLE=1 DOLSOT_TEST_ONLY=slow_and_idle_connections_are_dropped \
		sh tests/run.sh tests/cli/check_mcp_http

# The Python package (python/dolsot) against the built binary, cold and
# warm, with Debian's interpreter; see tests/python/.
check-python: dolsot
	$(RUN_TESTS) cold:tests/python warm:tests/python

# Real sessions side by side (S1, S3, S6, a 36-cell notebook): dolsot warm and
# cold, a Jupyter kernel, a live interpreter, Monty; see bench/README.md.
# DOLSOT_BIN, DOLSOT_BIN_B, DOLSOT_FLAGS, BENCH_ROUNDS... pass through.
bench-notebook: dolsot
	sh tools/deps.sh bench
	$(PYTHON) bench/notebook.py

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, built
# beside the normal objects (*.asan.o) so both builds can coexist.
# float-cast-overflow is not part of "undefined": a double too large for
# the int it is cast to (a timeout in milliseconds, say) is undefined too.
SAN_FLAGS := -O1 -g -fsanitize=address,undefined,float-cast-overflow \
	-fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_TESTS := $(TESTS:=-asan)

$(B)/%.asan.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c -o $@ $<

$(B)/%_py.asan.o: $(B)/%_py.c
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c -o $@ $<

$(B)/worker.asan.o $(B)/worker/dolsotmod.asan.o $(B)/worker/unitmap.asan.o $(B)/worker/flat.asan.o: ALL_CFLAGS += $(PY_INCLUDES)
$(B)/main.asan.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'
$(B)/%_py.asan.o: ALL_CFLAGS += -Wno-missing-prototypes -Wno-missing-variable-declarations

$(B)/tests/%.asan.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -Itests/lib -MMD -MP -c -o $@ $<

$(B)/libdolsot-asan.a: $(LIB_OBJS:.o=.asan.o)
	rm -f $@
	$(AR) rcs $@ $^
$(B)/tests/libtest-asan.a: $(TEST_LIB_OBJS:.o=.asan.o)
	rm -f $@
	$(AR) rcs $@ $^

$(B)/dolsot-asan: $(OBJS:.o=.asan.o)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -Wl,-E -Wl,--build-id=sha1 -o $@ $^ $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS) $(HIREDIS_LIBS) $(CRYPTO_LIBS)

$(ASAN_TESTS:%=$(B)/%): $(B)/%-asan: $(B)/%.asan.o $(B)/tests/libtest-asan.a $(B)/libdolsot-asan.a
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(TEST_LIBS)

asan:
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) $(B)/dolsot-asan $(ASAN_TESTS:%=$(B)/%) $(REGRESS_TESTS:%=$(B)/%-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=$(B)/dolsot-asan sh tests/run.sh $(ASAN_TESTS) $(REGRESS_TESTS:=-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=$(B)/dolsot-asan DOLSOT_SERVER=off sh tests/run.sh $(CLI_TESTS:=-asan)

# valgrind memcheck on real calls, cold and warm; see tests/slow/check_valgrind.c
# and, for what is suppressed and why, tests/lib/valgrind.supp.
valgrind:
	@sh tools/deps.sh valgrind
	$(MAKE) dolsot $(B)/tests/slow/check_valgrind
	sh tests/run.sh tests/slow/check_valgrind

demo:
	@sh tools/deps.sh demo
	$(MAKE) dolsot
	cd examples && ../dolsot --reset demo >/dev/null && \
	../dolsot --toolbox mytools:mt --session demo "orders = mt.load('orders'); len(orders)" && \
	../dolsot --toolbox mytools:mt --session demo "mt.add(sum(orders), 1)"

# No file includes a header from its own layer or one above (tools/layers.txt).
layers:
	$(PYTHON) tools/layers.py

lint: layers
	@sh tools/deps.sh lint
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr -D_GNU_SOURCE --std=c11 $(SRCS)
	clang-tidy --quiet $(SRCS) -- -std=gnu11 -D_GNU_SOURCE $(INCLUDES) \
		-DPY_PREFIX='"$(PY_PREFIX)"' -DDOLSOT_VERSION='"$(VERSION)"' $(PY_INCLUDES)
	mandoc -Tlint -Wwarning man/dolsot.1

include fuzz/fuzz.mk
$(eval $(call fuzz_harness,wire,base/wire.c))

# `make tests/check_X` builds build/tests/check_X; tests/run.sh runs
# either name (build/ first).
ALIASES := $(TESTS) $(TESTS:=-asan) tests/slow/check_valgrind $(REGRESS_TESTS) \
	$(REGRESS_TESTS:=-asan)
$(ALIASES): %: $(B)/% ; @:
.PHONY: $(ALIASES)

install: dolsot
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 dolsot $(DESTDIR)$(BINDIR)/dolsot
	install -m 644 man/dolsot.1 $(DESTDIR)$(MANDIR)/man1/dolsot.1

# The Python package, for Debian's python3.11 (its dist-packages under
# PREFIX); `pip install ./python` is the other way.
PYLIBDIR ?= $(PREFIX)/lib/python3.11/dist-packages
install-python:
	install -d $(DESTDIR)$(PYLIBDIR)/dolsot
	install -m 644 python/dolsot/*.py $(DESTDIR)$(PYLIBDIR)/dolsot/

clean:
	rm -rf $(B)
	rm -f dolsot

.PHONY: all deps check quick check-python soak bench-notebook asan valgrind demo layers lint install install-python clean

# The sanitizer objects track their headers too, or a changed struct would
# leave them stale.
-include $(shell find $(B) -name '*.d' 2>/dev/null)

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
# jansson (the --json output) is linked in too.
JANSSON_LIBS := -Wl,-Bstatic -ljansson -Wl,-Bdynamic

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Werror=shadow -Werror=missing-prototypes \
	-Werror=format=2 -Werror=switch-default
ALL_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DPY_PREFIX='"$(PY_PREFIX)"' $(CFLAGS)
LDFLAGS ?=
VERSION := 0.3.0

CORE_SRCS := frame.c fdio.c store_id.c store_name.c store_file.c store_mem.c store_blob.c \
	output.c output_json.c display_files.c opts.c repl.c proc.c wire.c warm.c server.c server_key.c server_mem.c zygote.c peer.c \
	store_remote.c mem_list.c typegate.c typegate_parse.c rlimits.c pidcg.c \
	sandbox_plan.c mount_guard.c
WORKER_SRCS := worker.c worker_py.c dolsotmod.c files_py.c gate_py.c hints_py.c session_py.c state_py.c \
	rich_py.c describe_py.c \
	isolate.c sandbox.c sandbox_fs.c sandbox_ids.c sandbox_filter.c
SRCS := main.c $(CORE_SRCS) $(WORKER_SRCS)
OBJS := $(SRCS:.c=.o)

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
TESTS := tests/check_frame tests/check_store tests/check_opts \
	tests/check_output tests/check_wire tests/check_cli tests/check_server \
	tests/check_typegate tests/check_hostile tests/check_faults \
	tests/check_carry tests/check_kept tests/check_sandbox tests/check_sandbox_enter \
	tests/check_trust \
	tests/check_json

all: dolsot

# Not a PIE: libpython's tables of pointers would need ~39,000 relocations
# at every start, about 0.9 ms of each call (bench/RESULTS.md).
dolsot: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -no-pie -Wl,-E -o $@ $(OBJS) $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS)

worker.o dolsotmod.o: ALL_CFLAGS += $(PY_INCLUDES)
main.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'

# The worker's Python half (worker.py, and files.py, gate.py, hints.py, session.py and
# state.py it imports through _dolsot) is compiled into the binary, as source
# and as bytecode made by the same Python version: NAME.py becomes NAME_py.c.
PYTHON ?= /usr/bin/python3.11
%_py.c: %.py tools/embed.py
	$(PYTHON) tools/embed.py $* $< $@

%_py.o: ALL_CFLAGS += -Wno-missing-prototypes -Wno-missing-variable-declarations

%.o: %.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

tests/%.o: tests/%.c
	$(CC) $(ALL_CFLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -I. -MMD -MP -c -o $@ $<

T_FRAME := tests/check_frame.o frame.o
T_STORE := tests/check_store.o fdio.o store_id.o store_name.o store_file.o store_mem.o \
	store_blob.o
T_OPTS := tests/check_opts.o opts.o store_id.o rlimits.o
T_OUTPUT := tests/check_output.o output.o
T_WIRE := tests/check_wire.o wire.o
T_CLI := tests/check_cli.o tests/cli_helpers.o
T_SERVER := tests/check_server.o tests/cli_helpers.o
T_TYPEGATE := tests/check_typegate.o tests/cli_helpers.o typegate.o typegate_parse.o
T_HOSTILE := tests/check_hostile.o tests/cli_helpers.o
T_FAULTS := tests/check_faults.o tests/cli_helpers.o
T_CARRY := tests/check_carry.o tests/cli_helpers.o
T_KEPT := tests/check_kept.o tests/cli_helpers.o
T_SANDBOX := tests/check_sandbox.o tests/cli_helpers.o
T_JSON := tests/check_json.o tests/cli_helpers.o
T_TRUST := tests/check_trust.o tests/cli_helpers.o
T_SBX_ENTER := tests/check_sandbox_enter.o sandbox.o sandbox_fs.o sandbox_ids.o sandbox_filter.o

tests/check_frame: $(T_FRAME)
tests/check_store: $(T_STORE)
tests/check_opts: $(T_OPTS)
tests/check_output: $(T_OUTPUT)
tests/check_wire: $(T_WIRE)
tests/check_cli: $(T_CLI)
tests/check_server: $(T_SERVER)
tests/check_typegate: $(T_TYPEGATE)
tests/check_hostile: $(T_HOSTILE)
tests/check_faults: $(T_FAULTS)
tests/check_carry: $(T_CARRY)
tests/check_kept: $(T_KEPT)
tests/check_sandbox: $(T_SANDBOX)
tests/check_trust: $(T_TRUST)
tests/check_json: $(T_JSON)
tests/check_sandbox_enter: $(T_SBX_ENTER)
tests/check_frame-asan: $(T_FRAME:.o=.asan.o)
tests/check_store-asan: $(T_STORE:.o=.asan.o)
tests/check_opts-asan: $(T_OPTS:.o=.asan.o)
tests/check_output-asan: $(T_OUTPUT:.o=.asan.o)
tests/check_wire-asan: $(T_WIRE:.o=.asan.o)
tests/check_cli-asan: $(T_CLI:.o=.asan.o)
tests/check_server-asan: $(T_SERVER:.o=.asan.o)
tests/check_typegate-asan: $(T_TYPEGATE:.o=.asan.o)
tests/check_hostile-asan: $(T_HOSTILE:.o=.asan.o)
tests/check_faults-asan: $(T_FAULTS:.o=.asan.o)
tests/check_carry-asan: $(T_CARRY:.o=.asan.o)
tests/check_kept-asan: $(T_KEPT:.o=.asan.o)
tests/check_sandbox-asan: $(T_SANDBOX:.o=.asan.o)
tests/check_trust-asan: $(T_TRUST:.o=.asan.o)
tests/check_json-asan: $(T_JSON:.o=.asan.o)
tests/check_json tests/check_json-asan: CHECK_LIBS += -ljansson
tests/check_sandbox_enter-asan: $(T_SBX_ENTER:.o=.asan.o)

# check_sandbox_enter embeds Python, as a warm zygote does.
tests/check_sandbox_enter.o tests/check_sandbox_enter.asan.o: ALL_CFLAGS += $(PY_INCLUDES)
tests/check_sandbox_enter tests/check_sandbox_enter-asan: \
	CHECK_LIBS += -Wl,-E $(PY_LDLIBS) $(SECCOMP_LIBS)

$(TESTS):
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

deps:
	@sh tools/deps.sh build

CLI_TESTS := tests/check_cli tests/check_hostile tests/check_faults tests/check_carry \
	tests/check_kept \
	tests/check_json
UNIT_TESTS := $(filter-out $(CLI_TESTS) tests/check_server,$(TESTS))
# One per fuzz harness (see fuzz/fuzz.mk), so recursively expanded.
REGRESS_TESTS = $(FUZZ_HARNESSES:%=tests/check_regress_%)

# The CLI suites run twice, with identical expectations: cold, and with the
# warm server already up for every test.
check:
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) dolsot $(TESTS) $(REGRESS_TESTS)
	sh tests/run.sh $(UNIT_TESTS) $(REGRESS_TESTS)
	DOLSOT_SERVER=off sh tests/run.sh $(CLI_TESTS)
	DOLSOT_SERVER=auto DOLSOT_TEST_WARM=1 sh tests/run.sh $(CLI_TESTS)
	sh tests/run.sh tests/check_server

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, built
# beside the normal objects (*.asan.o) so both builds can coexist.
# float-cast-overflow is not part of "undefined": a double too large for
# the int it is cast to (a timeout in milliseconds, say) is undefined too.
SAN_FLAGS := -O1 -g -fsanitize=address,undefined,float-cast-overflow \
	-fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_TESTS := $(TESTS:=-asan)

%.asan.o: %.c
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c -o $@ $<

worker.asan.o dolsotmod.asan.o: ALL_CFLAGS += $(PY_INCLUDES)
main.asan.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'
%_py.asan.o: ALL_CFLAGS += -Wno-missing-prototypes

tests/%.asan.o: tests/%.c
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -I. -MMD -MP -c -o $@ $<

dolsot-asan: $(SRCS:.c=.asan.o)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -Wl,-E -o $@ $^ $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS)

$(ASAN_TESTS):
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(CHECK_LIBS)

asan:
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) dolsot-asan $(ASAN_TESTS) $(REGRESS_TESTS:=-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=./dolsot-asan sh tests/run.sh $(ASAN_TESTS) $(REGRESS_TESTS:=-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=./dolsot-asan DOLSOT_SERVER=off sh tests/run.sh $(CLI_TESTS:=-asan)

# valgrind memcheck on real calls, cold and warm; see tests/check_valgrind.c
# and, for what is suppressed and why, tests/valgrind.supp.
tests/check_valgrind: tests/check_valgrind.o tests/cli_helpers.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

valgrind:
	@sh tools/deps.sh valgrind
	$(MAKE) dolsot tests/check_valgrind
	sh tests/run.sh tests/check_valgrind

demo:
	@sh tools/deps.sh demo
	$(MAKE) dolsot
	cd examples && ../dolsot --reset demo >/dev/null && \
	../dolsot --toolbox mytools:mt --session demo "orders = mt.load('orders'); len(orders)" && \
	../dolsot --toolbox mytools:mt --session demo "mt.add(sum(orders), 1)"

lint:
	@sh tools/deps.sh lint
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr -D_GNU_SOURCE --std=c11 $(filter-out %_py.c,$(SRCS))
	clang-tidy --quiet $(filter-out %_py.c,$(SRCS)) -- -std=gnu11 -D_GNU_SOURCE \
		-DPY_PREFIX='"$(PY_PREFIX)"' -DDOLSOT_VERSION='"$(VERSION)"' $(PY_INCLUDES)
	mandoc -Tlint -Wwarning man/dolsot.1

include fuzz/fuzz.mk
$(eval $(call fuzz_harness,wire,wire.c))

install: dolsot
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 dolsot $(DESTDIR)$(BINDIR)/dolsot
	install -m 644 man/dolsot.1 $(DESTDIR)$(MANDIR)/man1/dolsot.1

clean:
	rm -f dolsot dolsot-asan *.o *.d *_py.c *_py.c.tmp \
		$(TESTS) $(ASAN_TESTS) tests/*.o tests/*.d
	rm -f dolsot dolsot-asan *.o *.d worker_py.c worker_py.c.tmp \
		$(TESTS) $(ASAN_TESTS) $(REGRESS_TESTS) $(REGRESS_TESTS:=-asan) tests/check_valgrind \
		tests/*.o tests/*.d

.PHONY: all deps check asan valgrind demo lint install clean

# The sanitizer objects track their headers too, or a changed struct would
# leave them stale.
-include $(OBJS:.o=.d) $(wildcard *.asan.d) $(wildcard tests/*.d)

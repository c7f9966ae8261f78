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

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Werror=shadow -Werror=missing-prototypes \
	-Werror=format=2 -Werror=switch-default
ALL_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -DPY_PREFIX='"$(PY_PREFIX)"' $(CFLAGS)
LDFLAGS ?=
VERSION := 0.3.0

CORE_SRCS := frame.c fdio.c deadline.c call.c cold.c proc_child.c store.c sign.c store_name.c store_file.c store_spec.c store_redis.c store_cmd.c store_cmd_parse.c mem_store.c \
	output.c output_json.c display_files.c opts.c repl.c proc.c wire.c warm.c warm_proto.c modrec.c server.c server_diag.c mem_server.c zygote.c live.c \
	mem_client.c mem_list.c typegate.c typegate_parse.c checkd.c checkd_drv.c checkd_mypy_py.c lsp.c rlimits.c pidcg.c \
	sandbox_plan.c peer.c mount_guard.c jsonrpc.c mcp.c mcp_config.c stopsig.c callrec.c recall.c
WORKER_SRCS := worker.c worker_py.c dolsotmod.c files_py.c gate_py.c hints_py.c session_py.c state_py.c \
	rich_py.c describe_py.c \
	isolate.c guard.c sandbox.c sandbox_fs.c sandbox_ids.c sandbox_filter.c sandbox_init.c
SRCS := main.c $(CORE_SRCS) $(WORKER_SRCS)
# Everything the build makes goes under build/ (objects, dependency files,
# the generated *_py.c, test programs, sanitizer and fuzz builds); only the
# binary itself is ./dolsot, where the README's commands run it.
B := build
OBJS := $(SRCS:%.c=$(B)/%.o) $(B)/result_schema.o

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null) $(CRYPTO_LIBS)
TESTS := tests/check_frame tests/check_store tests/check_sign tests/check_opts \
	tests/check_output tests/check_wire tests/check_proc tests/check_cli tests/check_server \
	tests/check_typegate tests/check_hostile tests/check_faults tests/check_storefaults \
	tests/check_warm_faults tests/check_live \
	tests/check_carry tests/check_kept tests/check_sandbox tests/check_sandbox_enter \
	tests/check_trust tests/check_signed tests/check_contain \
	tests/check_json tests/check_mcp tests/check_stores tests/check_callid tests/check_modrec tests/check_preload

all: dolsot

# Not a PIE: libpython's tables of pointers would need ~39,000 relocations
# at every start, about 0.9 ms of each call (bench/RESULTS.md).
dolsot: $(OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -no-pie -Wl,-E -Wl,--build-id=sha1 -o $@ $(OBJS) $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS) $(HIREDIS_LIBS) $(CRYPTO_LIBS)

$(B)/worker.o $(B)/dolsotmod.o: ALL_CFLAGS += $(PY_INCLUDES)
$(B)/main.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'

# The worker's Python half (worker.py, and files.py, gate.py, hints.py, session.py and
# state.py it imports through _dolsot) is compiled into the binary, as source
# and as bytecode made by the same Python version: NAME.py becomes
# build/NAME_py.c.
PYTHON ?= /usr/bin/python3.11
$(B)/%_py.c: %.py tools/embed.py
	@mkdir -p $(@D)
	$(PYTHON) tools/embed.py $* $< $@
.PRECIOUS: $(B)/%_py.c

# schema/result.schema.json, for the MCP tools' output schemas (mcp.c).
$(B)/result_schema.c: schema/result.schema.json
	@mkdir -p $(@D)
	$(PYTHON) -c 'import json, sys; t = open(sys.argv[1]).read(); json.loads(t); \
		print("/* made from " + sys.argv[1] + " by the Makefile */"); \
		print("#include \"result_schema.h\""); \
		print("const char result_schema_json[] = " + json.dumps(t, ensure_ascii=False) + ";")' $< > $@
$(B)/result_schema.o: $(B)/result_schema.c
	$(CC) $(ALL_CFLAGS) -I. -MMD -MP -c -o $@ $<
$(B)/result_schema.asan.o: $(B)/result_schema.c
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -I. -MMD -MP -c -o $@ $<

$(B)/%_py.o: ALL_CFLAGS += -Wno-missing-prototypes -Wno-missing-variable-declarations

$(B)/%_py.o: $(B)/%_py.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -I. -MMD -MP -c -o $@ $<

T_FRAME := tests/check_frame.o frame.o rlimits.o
T_STORE := tests/check_store.o fdio.o deadline.o store.o callrec.o sign.o store_name.o store_file.o mem_store.o \
	mem_client.o warm_proto.o wire.o mem_list.o mem_server.o store_spec.o store_redis.o \
	store_cmd.o store_cmd_parse.o proc.o proc_child.o output.o
T_OPTS := tests/check_opts.o opts.o store_name.o rlimits.o store_spec.o
T_OUTPUT := tests/check_output.o output.o
T_WIRE := tests/check_wire.o wire.o warm_proto.o
T_PROC := tests/check_proc.o proc.o deadline.o fdio.o output.o
T_CLI := tests/check_cli.o tests/cli_helpers.o tests/redis_helper.o sign.o fdio.o
T_SERVER := tests/check_server.o tests/cli_helpers.o sign.o fdio.o
T_TYPEGATE := tests/check_typegate.o tests/cli_helpers.o sign.o typegate.o typegate_parse.o deadline.o fdio.o proc.o output.o
T_HOSTILE := tests/check_hostile.o tests/cli_helpers.o sign.o fdio.o
T_FAULTS := tests/check_faults.o tests/cli_helpers.o sign.o fdio.o
T_STOREFAULTS := tests/check_storefaults.o tests/cli_helpers.o sign.o fdio.o
T_WARM_FAULTS := tests/check_warm_faults.o tests/cli_helpers.o sign.o fdio.o
T_LIVE := tests/check_live.o tests/cli_helpers.o sign.o fdio.o
T_CARRY := tests/check_carry.o tests/cli_helpers.o sign.o fdio.o
T_KEPT := tests/check_kept.o tests/cli_helpers.o sign.o fdio.o
T_SANDBOX := tests/check_sandbox.o tests/cli_helpers.o sign.o fdio.o
T_TRUST := tests/check_trust.o tests/cli_helpers.o sign.o fdio.o
T_CONTAIN := tests/check_contain.o tests/cli_helpers.o sign.o fdio.o
T_JSON := tests/check_json.o tests/cli_helpers.o sign.o fdio.o
T_MCP := tests/check_mcp.o tests/cli_helpers.o sign.o fdio.o
T_CALLID := tests/check_callid.o tests/cli_helpers.o sign.o fdio.o
T_MODREC := tests/check_modrec.o tests/cli_helpers.o sign.o fdio.o modrec.o
T_PRELOAD := tests/check_preload.o tests/cli_helpers.o sign.o fdio.o
T_STORES := tests/check_stores.o tests/cli_helpers.o tests/redis_helper.o sign.o fdio.o
T_SIGN := tests/check_sign.o sign.o fdio.o
T_SIGNED := tests/check_signed.o tests/cli_helpers.o tests/redis_helper.o sign.o fdio.o deadline.o store.o callrec.o \
	store_name.o store_file.o mem_store.o mem_client.o warm_proto.o wire.o mem_list.o \
	mem_server.o store_spec.o store_redis.o store_cmd.o store_cmd_parse.o proc.o \
	proc_child.o output.o
T_SBX_ENTER := tests/check_sandbox_enter.o sandbox.o sandbox_fs.o sandbox_ids.o sandbox_filter.o \
	sandbox_init.o proc.o deadline.o fdio.o output.o proc_child.o wire.o

$(B)/tests/check_frame: $(addprefix $(B)/,$(T_FRAME))
$(B)/tests/check_store: $(addprefix $(B)/,$(T_STORE))
$(B)/tests/check_opts: $(addprefix $(B)/,$(T_OPTS))
$(B)/tests/check_output: $(addprefix $(B)/,$(T_OUTPUT))
$(B)/tests/check_wire: $(addprefix $(B)/,$(T_WIRE))
$(B)/tests/check_proc: $(addprefix $(B)/,$(T_PROC))
$(B)/tests/check_cli: $(addprefix $(B)/,$(T_CLI))
$(B)/tests/check_server: $(addprefix $(B)/,$(T_SERVER))
$(B)/tests/check_typegate: $(addprefix $(B)/,$(T_TYPEGATE))
$(B)/tests/check_hostile: $(addprefix $(B)/,$(T_HOSTILE))
$(B)/tests/check_faults: $(addprefix $(B)/,$(T_FAULTS))
$(B)/tests/check_storefaults: $(addprefix $(B)/,$(T_STOREFAULTS))
$(B)/tests/check_warm_faults: $(addprefix $(B)/,$(T_WARM_FAULTS))
$(B)/tests/check_live: $(addprefix $(B)/,$(T_LIVE))
$(B)/tests/check_carry: $(addprefix $(B)/,$(T_CARRY))
$(B)/tests/check_kept: $(addprefix $(B)/,$(T_KEPT))
$(B)/tests/check_sandbox: $(addprefix $(B)/,$(T_SANDBOX))
$(B)/tests/check_trust: $(addprefix $(B)/,$(T_TRUST))
$(B)/tests/check_contain: $(addprefix $(B)/,$(T_CONTAIN))
$(B)/tests/check_json: $(addprefix $(B)/,$(T_JSON))
$(B)/tests/check_mcp: $(addprefix $(B)/,$(T_MCP))
$(B)/tests/check_callid: $(addprefix $(B)/,$(T_CALLID))
$(B)/tests/check_modrec: $(addprefix $(B)/,$(T_MODREC))
$(B)/tests/check_preload: $(addprefix $(B)/,$(T_PRELOAD))
$(B)/tests/check_stores: $(addprefix $(B)/,$(T_STORES))
$(B)/tests/check_sandbox_enter: $(addprefix $(B)/,$(T_SBX_ENTER))
$(B)/tests/check_sign: $(addprefix $(B)/,$(T_SIGN))
$(B)/tests/check_signed: $(addprefix $(B)/,$(T_SIGNED))
$(B)/tests/check_signed-asan: $(addprefix $(B)/,$(T_SIGNED:.o=.asan.o))
$(B)/tests/check_sign-asan: $(addprefix $(B)/,$(T_SIGN:.o=.asan.o))
$(B)/tests/check_frame-asan: $(addprefix $(B)/,$(T_FRAME:.o=.asan.o))
$(B)/tests/check_store-asan: $(addprefix $(B)/,$(T_STORE:.o=.asan.o))
$(B)/tests/check_opts-asan: $(addprefix $(B)/,$(T_OPTS:.o=.asan.o))
$(B)/tests/check_output-asan: $(addprefix $(B)/,$(T_OUTPUT:.o=.asan.o))
$(B)/tests/check_wire-asan: $(addprefix $(B)/,$(T_WIRE:.o=.asan.o))
$(B)/tests/check_proc-asan: $(addprefix $(B)/,$(T_PROC:.o=.asan.o))
$(B)/tests/check_cli-asan: $(addprefix $(B)/,$(T_CLI:.o=.asan.o))
$(B)/tests/check_server-asan: $(addprefix $(B)/,$(T_SERVER:.o=.asan.o))
$(B)/tests/check_typegate-asan: $(addprefix $(B)/,$(T_TYPEGATE:.o=.asan.o))
$(B)/tests/check_hostile-asan: $(addprefix $(B)/,$(T_HOSTILE:.o=.asan.o))
$(B)/tests/check_faults-asan: $(addprefix $(B)/,$(T_FAULTS:.o=.asan.o))
$(B)/tests/check_storefaults-asan: $(addprefix $(B)/,$(T_STOREFAULTS:.o=.asan.o))
$(B)/tests/check_warm_faults-asan: $(addprefix $(B)/,$(T_WARM_FAULTS:.o=.asan.o))
$(B)/tests/check_live-asan: $(addprefix $(B)/,$(T_LIVE:.o=.asan.o))
$(B)/tests/check_carry-asan: $(addprefix $(B)/,$(T_CARRY:.o=.asan.o))
$(B)/tests/check_kept-asan: $(addprefix $(B)/,$(T_KEPT:.o=.asan.o))
$(B)/tests/check_sandbox-asan: $(addprefix $(B)/,$(T_SANDBOX:.o=.asan.o))
$(B)/tests/check_trust-asan: $(addprefix $(B)/,$(T_TRUST:.o=.asan.o))
$(B)/tests/check_contain-asan: $(addprefix $(B)/,$(T_CONTAIN:.o=.asan.o))
$(B)/tests/check_json-asan: $(addprefix $(B)/,$(T_JSON:.o=.asan.o))
$(B)/tests/check_json $(B)/tests/check_json-asan: CHECK_LIBS += -ljansson
$(B)/tests/check_store $(B)/tests/check_store-asan: CHECK_LIBS += $(HIREDIS_LIBS) -lpthread
$(B)/tests/check_mcp-asan: $(addprefix $(B)/,$(T_MCP:.o=.asan.o))
$(B)/tests/check_stores-asan: $(addprefix $(B)/,$(T_STORES:.o=.asan.o))
$(B)/tests/check_callid-asan: $(addprefix $(B)/,$(T_CALLID:.o=.asan.o))
$(B)/tests/check_modrec-asan: $(addprefix $(B)/,$(T_MODREC:.o=.asan.o))
$(B)/tests/check_preload-asan: $(addprefix $(B)/,$(T_PRELOAD:.o=.asan.o))
$(B)/tests/check_stores $(B)/tests/check_stores-asan $(B)/tests/check_cli \
	$(B)/tests/check_cli-asan: CHECK_LIBS += $(HIREDIS_LIBS)
$(B)/tests/check_signed $(B)/tests/check_signed-asan: CHECK_LIBS += $(HIREDIS_LIBS) -lpthread
$(B)/tests/check_mcp $(B)/tests/check_mcp-asan: CHECK_LIBS += -ljansson
$(B)/tests/check_sandbox_enter-asan: $(addprefix $(B)/,$(T_SBX_ENTER:.o=.asan.o))

# check_sandbox_enter embeds Python, as a warm zygote does.
$(B)/tests/check_sandbox_enter.o $(B)/tests/check_sandbox_enter.asan.o: \
	ALL_CFLAGS += $(PY_INCLUDES)
$(B)/tests/check_sandbox_enter $(B)/tests/check_sandbox_enter-asan: \
	CHECK_LIBS += -Wl,-E $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS) $(HIREDIS_LIBS) $(CRYPTO_LIBS)

$(TESTS:%=$(B)/%):
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)


deps:
	@sh tools/deps.sh build

CLI_TESTS := tests/check_cli tests/check_hostile tests/check_faults tests/check_storefaults \
	tests/check_carry tests/check_kept tests/check_json tests/check_mcp tests/check_stores \
	tests/check_signed tests/check_callid tests/check_modrec
SERVER_TESTS := tests/check_server tests/check_warm_faults tests/check_live tests/check_preload
UNIT_TESTS := $(filter-out $(CLI_TESTS) $(SERVER_TESTS),$(TESTS))
# One per fuzz harness (see fuzz/fuzz.mk), so recursively expanded.
REGRESS_TESTS = $(FUZZ_HARNESSES:%=tests/check_regress_%)

# The CLI suites run twice, with identical expectations: cold, and with the
# warm server already up for every test.
check: layers
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) dolsot $(TESTS:%=$(B)/%) $(REGRESS_TESTS:%=$(B)/%)
	sh tests/run.sh $(UNIT_TESTS) $(REGRESS_TESTS)
	DOLSOT_SERVER=off sh tests/run.sh $(CLI_TESTS)
	DOLSOT_SERVER=auto DOLSOT_TEST_WARM=1 sh tests/run.sh $(CLI_TESTS)
	sh tests/run.sh $(SERVER_TESTS)
	$(MAKE) check-python

# The signal stream of tests/check_callid at the issue's length: 300 calls,
# each stopped by SIGTERM, SIGINT or SIGHUP at random moments and retried
# with its --call-id until it ends cleanly; the counter must come out exact.
# Cold and warm, on a 16 MiB session; about 10 minutes in all.  Not part of
# `make check`.
SOAK_CALLS ?= 300
soak: dolsot $(B)/tests/check_callid
	DOLSOT_SERVER=off DOLSOT_TEST_STREAM=$(SOAK_CALLS) CK_RUN_CASE=stream \
		sh tests/run.sh tests/check_callid
	DOLSOT_SERVER=auto DOLSOT_TEST_WARM=1 DOLSOT_TEST_STREAM=$(SOAK_CALLS) \
		CK_RUN_CASE=stream sh tests/run.sh tests/check_callid

# The Python package (python/dolsot) against the built binary, cold and
# warm, with Debian's interpreter; see tests/python/.
PY_TESTS := $(PYTHON) -m unittest discover -s tests/python -t tests/python
check-python: dolsot
	DOLSOT_SERVER=off $(PY_TESTS)
	DOLSOT_SERVER=auto $(PY_TESTS)

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

$(B)/worker.asan.o $(B)/dolsotmod.asan.o: ALL_CFLAGS += $(PY_INCLUDES)
$(B)/main.asan.o: ALL_CFLAGS += -DDOLSOT_VERSION='"$(VERSION)"'
$(B)/%_py.asan.o: ALL_CFLAGS += -Wno-missing-prototypes -Wno-missing-variable-declarations

$(B)/tests/%.asan.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Wno-format-truncation $(CHECK_CFLAGS) -I. -MMD -MP -c -o $@ $<

$(B)/dolsot-asan: $(SRCS:%.c=$(B)/%.asan.o) $(B)/result_schema.asan.o
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -Wl,-E -Wl,--build-id=sha1 -o $@ $^ $(PY_LDLIBS) $(SECCOMP_LIBS) $(JANSSON_LIBS) $(HIREDIS_LIBS) $(CRYPTO_LIBS)

$(ASAN_TESTS:%=$(B)/%):
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(CHECK_LIBS)

asan:
	@sh tools/deps.sh check
	@sh tools/npm-deps.sh
	$(MAKE) $(B)/dolsot-asan $(ASAN_TESTS:%=$(B)/%) $(REGRESS_TESTS:%=$(B)/%-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=$(B)/dolsot-asan sh tests/run.sh $(ASAN_TESTS) $(REGRESS_TESTS:=-asan)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		DOLSOT_BIN=$(B)/dolsot-asan DOLSOT_SERVER=off sh tests/run.sh $(CLI_TESTS:=-asan)

# valgrind memcheck on real calls, cold and warm; see tests/check_valgrind.c
# and, for what is suppressed and why, tests/valgrind.supp.
$(B)/tests/check_valgrind: $(B)/tests/check_valgrind.o $(B)/tests/cli_helpers.o $(B)/sign.o $(B)/fdio.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

valgrind:
	@sh tools/deps.sh valgrind
	$(MAKE) dolsot $(B)/tests/check_valgrind
	sh tests/run.sh tests/check_valgrind

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
		--inline-suppr -D_GNU_SOURCE --std=c11 $(filter-out %_py.c,$(SRCS))
	clang-tidy --quiet $(filter-out %_py.c,$(SRCS)) -- -std=gnu11 -D_GNU_SOURCE \
		-DPY_PREFIX='"$(PY_PREFIX)"' -DDOLSOT_VERSION='"$(VERSION)"' $(PY_INCLUDES)
	mandoc -Tlint -Wwarning man/dolsot.1

include fuzz/fuzz.mk
$(eval $(call fuzz_harness,wire,wire.c))

# `make tests/check_X` builds build/tests/check_X; tests/run.sh runs
# either name (build/ first).
ALIASES := $(TESTS) $(TESTS:=-asan) tests/check_valgrind $(REGRESS_TESTS) \
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

.PHONY: all deps check check-python soak bench-notebook asan valgrind demo layers lint install install-python clean

# The sanitizer objects track their headers too, or a changed struct would
# leave them stale.
-include $(wildcard $(B)/*.d $(B)/tests/*.d)

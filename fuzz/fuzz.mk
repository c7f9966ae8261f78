# fuzz.mk - libFuzzer harnesses; included from the top Makefile.
#
# A harness is fuzz/fuzz_NAME.c with its seeds in fuzz/corpus/NAME/, added
# with one line at the bottom:
#
#   $(eval $(call fuzz_harness,NAME,the .c files it links[,libraries]))
#
# `make fuzz` runs every harness for FUZZ_SECONDS each; `make fuzz-NAME` runs
# one.  The seeds are copied into fuzz/out/NAME/, which holds the growing
# working corpus, so the committed seed directory is never written.  A crash
# fails the target and leaves its input in fuzz/out/NAME-crash-*; keep it
# under tests/regress/NAME/.
#
# Each harness is also a unit test, tests/regress/check_regress_NAME (and its
# -asan twin; both built under build/tests/regress/, like the fuzzers under
# build/fuzz/): built with the test compiler and tests/regress/check_regress.c
# as main, it
# replays the seeds and tests/regress/NAME/ through the harness's checks.
#
# ALL_CFLAGS is not used: it carries the gcc build's -O2 and Python defines,
# while a fuzz build wants clang, -O1 and the sanitizers.

FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -g -O1 -fsanitize=fuzzer,address,undefined,float-cast-overflow \
	-std=gnu11 -D_GNU_SOURCE $(INCLUDES)
# UBSan only prints by default; halting turns undefined behavior into a crash.
FUZZ_ENV ?= UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

FUZZ_HARNESSES :=

define fuzz_harness
FUZZ_HARNESSES += $(1)
$(B)/fuzz/fuzz_$(1): fuzz/fuzz_$(1).c $(2) $$(HEADERS)
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(FUZZ_CFLAGS) -o $$@ $$(filter %.c,$$^) $(3)

$(B)/tests/regress/check_regress_$(1): tests/regress/check_regress.c fuzz/fuzz_$(1).c $(2) $$(HEADERS)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) -Wno-format-truncation $$(CHECK_CFLAGS) -Itests/lib \
		-DHARNESS='"$(1)"' -o $$@ $$(filter %.c,$$^) $$(CHECK_LIBS) -lm $(3)

$(B)/tests/regress/check_regress_$(1)-asan: tests/regress/check_regress.c fuzz/fuzz_$(1).c $(2) $$(HEADERS)
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_CFLAGS) $$(SAN_FLAGS) -Wno-format-truncation $$(CHECK_CFLAGS) -Itests/lib \
		-DHARNESS='"$(1)"' -o $$@ $$(filter %.c,$$^) $$(CHECK_LIBS) -lm $(3)

fuzz-$(1): $(B)/fuzz/fuzz_$(1)
	mkdir -p fuzz/out/$(1)
	cp fuzz/corpus/$(1)/* fuzz/out/$(1)/
	$$(FUZZ_ENV) ./$(B)/fuzz/fuzz_$(1) -max_total_time=$$(FUZZ_SECONDS) \
		-print_final_stats=1 -artifact_prefix=fuzz/out/$(1)- \
		fuzz/out/$(1)

fuzz: fuzz-$(1)
.PHONY: fuzz-$(1)
endef

.PHONY: fuzz

$(eval $(call fuzz_harness,frame,base/frame.c base/rlimits.c))
$(eval $(call fuzz_harness,typegate,typegate/typegate_parse.c))
$(eval $(call fuzz_harness,lsp,typegate/lsp.c typegate/typegate_parse.c,-ljansson))
$(eval $(call fuzz_harness,opts,call/opts.c call/options.c store/store_name.c base/rlimits.c store/store_spec.c))
$(eval $(call fuzz_harness,store,store/store_name.c store/user_dir.c store_file.c store/pending.c store/objects.c store/stamp.c store/units.c base/fdio.c base/deadline.c base/sha256.c,-lcrypto))
$(eval $(call fuzz_harness,warm_key,base/warm_proto.c base/wire.c))
$(eval $(call fuzz_harness,mem_list,store/mem_list.c store/store_name.c))
$(eval $(call fuzz_harness,output,output.c))
$(eval $(call fuzz_harness,json,call/output_json.c output.c call/display_files.c store/store_name.c store/user_dir.c base/frame.c base/fdio.c base/rlimits.c base/utc.c,-ljansson))
$(eval $(call fuzz_harness,jsonrpc,mcp/jsonrpc.c,-ljansson))
$(eval $(call fuzz_harness,store_spec,store/store_spec.c base/rlimits.c))
$(eval $(call fuzz_harness,store_cmd,store/store_cmd_parse.c store/store_name.c store/units.c))
$(eval $(call fuzz_harness,callrec,store/callrec.c))
$(eval $(call fuzz_harness,histrec,store/histrec.c store/units.c))
$(eval $(call fuzz_harness,modrec,store/modrec.c base/fdio.c))
$(eval $(call fuzz_harness,sign,store/sign.c store/store_name.c base/fdio.c,-lcrypto))
$(eval $(call fuzz_harness,redis_health,store/redis_health.c base/fdio.c,-lhiredis))
$(eval $(call fuzz_harness,units,store/units.c,))
$(eval $(call fuzz_harness,toolchan,call/toolchan.c mcp/jsonrpc.c,-ljansson))
$(eval $(call fuzz_harness,http,mcp/http_route.c mcp/auth.c base/sha256.c base/fdio.c,-lcrypto))

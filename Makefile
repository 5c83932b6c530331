# ember build.  Layout (see README.md):
#   every .c under common/ symbolizer/ analyzer/ exporter/ collector/ cli/ that is
#   not a program entry point goes into build/libember.a; programs are
#   <dir>/main.c; tests/unit/test_*.c are cmocka programs; tests/fuzz/fuzz_*.c are
#   libFuzzer targets; tests/progs/*.c are test workloads; bench/bench_*.c benchmarks.
# Adding a module = adding its files: nothing here needs to change.

BUILD    ?= build
SAN      ?= 0
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wmissing-field-initializers
# CFLAGS is the user's (e.g. CFLAGS="-O1 -g -fsanitize=fuzzer-no-link"); the rest is always added.
CFLAGS   ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer -I. -I$(BUILD)/gen $(SAN_CFLAGS)
LDLIBS   := -lbpf -lelf -lz -luring -lzmq -lprotobuf-c -lyaml -lcap -lpcap -ljson-c -lmicrohttpd -lpthread -lm -liberty
JEMALLOC := -ljemalloc
ifeq ($(SAN),1)
  SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -DEMBER_SANITIZED
  LDFLAGS += -fsanitize=address,undefined
  JEMALLOC :=
endif

LIB_DIRS  := common symbolizer analyzer analyzer/l7 exporter collector cli
LIB_SRCS  := $(filter-out %/main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
PROTOS    := $(wildcard proto/*.proto)
PROTO_C   := $(patsubst proto/%.proto,$(BUILD)/gen/proto/%.pb-c.c,$(PROTOS))
PROTO_H   := $(PROTO_C:.c=.h)
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/bpf/%.skel.h,$(BPF_SRCS))
GEN_HDRS  := $(BUILD)/gen/vmlinux.h $(PROTO_H) $(BPF_SKELS)
LIB_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(PROTO_C))
LIB       := $(BUILD)/libember.a

PROGRAMS  := $(BUILD)/ember $(BUILD)/ember-collector $(BUILD)/ember-analyzer $(BUILD)/ember-exporter
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TPROG_SRCS:= $(wildcard tests/progs/*.c)
TPROG_BINS:= $(patsubst tests/progs/%.c,$(BUILD)/progs/%,$(TPROG_SRCS))
BENCH_SRCS:= $(wildcard bench/bench_*.c)
BENCH_BINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all programs tests clean test unit-test fuzz bench deps run
.DELETE_ON_ERROR:
# Generated headers and objects are kept (they are not throwaway intermediates).
.SECONDARY:

all: programs tests
programs: $(PROGRAMS)
tests: $(UNIT_BINS) $(TPROG_BINS) $(BENCH_BINS)

# ---- generated code -------------------------------------------------------
$(BUILD)/gen/vmlinux.h:
	@mkdir -p $(@D)
	@test -r /sys/kernel/btf/vmlinux || { echo "error: kernel has no BTF (/sys/kernel/btf/vmlinux); ember needs CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; }
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/gen/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/gen/vmlinux.h $(wildcard bpf/*.h)
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -I. -I$(BUILD)/gen -c $< -o $@

$(BUILD)/gen/bpf/%.skel.h: $(BUILD)/gen/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen/proto $<

# ---- C objects ------------------------------------------------------------
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -Wextra,$(ALL_CFLAGS)) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/ember: $(BUILD)/obj/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
$(BUILD)/ember-collector: $(BUILD)/obj/collector/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
$(BUILD)/ember-analyzer: $(BUILD)/obj/analyzer/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(JEMALLOC)
$(BUILD)/ember-exporter: $(BUILD)/obj/exporter/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(JEMALLOC)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcmocka

# Test workloads: frame pointers in every function (gcc 12 drops them from leaf
# functions at -O1 even with -mno-omit-leaf-frame-pointer), no inlining.
$(BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(@D)
	$(CC) -O0 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -Wall -Werror -pthread $< -o $@

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# ---- fuzzing (clang, libFuzzer, ASan+UBSan) --------------------------------
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
# A campaign (tests/fuzz/campaign.sh): each target FUZZ_TIME seconds from the
# committed corpus and the seeds cut from the shared captures; what adds
# coverage is minimised into tests/fuzz/corpus/ to be committed.
#   make fuzz [FUZZ_TIME=600] [FUZZ_TARGETS=l7_] [FUZZ_JOBS=2]
FUZZ_TIME ?= 600
fuzz: deps
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_TARGETS=$(FUZZ_TARGETS) FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/campaign.sh
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzzers/%,$(FUZZ_SRCS))
.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)
$(BUILD)/fuzzers/%: $(BUILD)/obj/tests/fuzz/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) -fsanitize=fuzzer,address,undefined $^ -o $@ $(LDLIBS)

# ---- entry points -----------------------------------------------------------
deps:
	deploy/install-deps.sh

# The README's run command: installs what it needs, builds, runs the agent on
# the shipped configuration (file + Prometheus outputs, no OAP needed).
run: deps
	$(MAKE) -j$(NPROC) programs
	build/ember run --config deploy/ember.yaml

# The README's test command: installs what it needs, builds from scratch, runs
# unit tests and fuzzers under ASan/UBSan, then the root integration tests.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: deps
	rm -rf build
	$(MAKE) -j$(NPROC) BUILD=build/san SAN=1 tests
	$(MAKE) -j$(NPROC) all
	tests/run-tests.sh

unit-test:
	$(MAKE) -j$(NPROC) BUILD=build/san SAN=1 tests
	tests/run-tests.sh --unit-only

bench: deps
	$(MAKE) -j$(NPROC) programs tests
	bench/run.sh

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ember build.  Layout (see README.md):
#   each folder's .c files that are not a program entry point go into that
#   folder's static library (build/lib/lib<folder>.a); programs are <dir>/main.c
#   and link only the libraries and system libraries they use (the privileged
#   collector: collector + common, libbpf, liburing, libcap; the CLI: cli + l7 +
#   common, not the analyzer); tests/unit/test_*.c
#   are cmocka programs; tests/fuzz/fuzz_*.c are libFuzzer targets;
#   tests/progs/*.c are test workloads; bench/bench_*.c benchmarks.
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
# Copies and fills of a size known only at run time call libc (which picks the
# CPU's fastest), not gcc's inline `rep movs`: slow to start for the short
# strings the parsers copy (bench/l7.sh http1: +6%).  gcc only.
STRINGOPS := $(shell $(CC) -mstringop-strategy=libcall -E -x c /dev/null >/dev/null 2>&1 && echo -mstringop-strategy=libcall)
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer $(STRINGOPS) -I. -I$(BUILD)/gen $(SAN_CFLAGS)
# What each program links, and nothing more (ldd build/ember-collector).
LIBS_COLLECTOR := -lbpf -lelf -lz -luring -lcap
LIBS_ANALYZER  := -lbpf -lelf -lz -lzmq -lprotobuf-c -lyaml -lcap -liberty -ljson-c -lmicrohttpd -lgnutls -lpthread -lm
LIBS_EXPORTER  := -lelf -lzmq -lprotobuf-c -lyaml -ljson-c -lmicrohttpd -lcurl -lrdkafka -lpthread -lm -ldl
LIBS_CLI       := -lelf -lz -lzmq -lprotobuf-c -lyaml -lcap -lpcap -ljson-c -lpthread -lm
# tests, benchmarks and fuzzers: everything
LDLIBS   := -lbpf -lelf -lz -luring -lzmq -lprotobuf-c -lyaml -lcap -lpcap -ljson-c -lmicrohttpd -lgnutls -lcurl -lrdkafka -lpthread -lm -liberty -ldl
# jemalloc replaces malloc without being referenced by name: keep it past
# --as-needed (Debian's default), or the analyzer and exporter run on glibc's.
JEMALLOC := -Wl,--no-as-needed -ljemalloc -Wl,--as-needed
ifeq ($(SAN),1)
  SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -DEMBER_SANITIZED
  LDFLAGS += -fsanitize=address,undefined
  JEMALLOC :=
endif

LIB_DIRS  := common symbolizer l7 analyzer analyzer/net analyzer/continuous analyzer/rest analyzer/unwind analyzer/tls analyzer/python analyzer/java exporter exporter/skywalking collector cli
LIB_SRCS  := $(filter-out %/main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
PROTOS    := $(wildcard proto/*.proto)
PROTO_C   := $(patsubst proto/%.proto,$(BUILD)/gen/proto/%.pb-c.c,$(PROTOS))
PROTO_H   := $(PROTO_C:.c=.h)
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/bpf/%.skel.h,$(BPF_SRCS))
GEN_HDRS  := $(BUILD)/gen/vmlinux.h $(PROTO_H) $(BPF_SKELS)
PROTO_OBJS:= $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(PROTO_C))
objs_of    = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out %/main.c,$(foreach d,$(1),$(wildcard $(d)/*.c))))
LIB_COMMON    := $(BUILD)/lib/libcommon.a
LIB_SYMBOLIZER:= $(BUILD)/lib/libsymbolizer.a
LIB_L7        := $(BUILD)/lib/libl7.a
LIB_ANALYZER  := $(BUILD)/lib/libanalyzer.a
LIB_EXPORTER  := $(BUILD)/lib/libexporter.a
LIB_COLLECTOR := $(BUILD)/lib/libcollector.a
LIB_CLI       := $(BUILD)/lib/libcli.a
LIB_PROTO     := $(BUILD)/lib/libproto.a
# Every library, in link order (users before what they use), for tests and tools.
LIB       := $(LIB_CLI) $(LIB_COLLECTOR) $(LIB_ANALYZER) $(LIB_EXPORTER) $(LIB_L7) $(LIB_SYMBOLIZER) $(LIB_COMMON) $(LIB_PROTO)
LIB_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(PROTO_OBJS)

PROGRAMS  := $(BUILD)/ember $(BUILD)/ember-collector $(BUILD)/ember-analyzer $(BUILD)/ember-exporter
# The JVMTI agent (jvm/), loaded into JVMs only with profiling.java.agent: built where a JDK's
# headers are (openjdk-17-jdk-headless); it links libc alone, nothing of ember's.
JDK_INC   ?= $(patsubst %/jvmti.h,%,$(firstword $(wildcard /usr/lib/jvm/default-java/include/jvmti.h /usr/lib/jvm/java-17-openjdk-*/include/jvmti.h /usr/lib/jvm/java-*-openjdk-*/include/jvmti.h)))
ifneq ($(JDK_INC),)
PROGRAMS  += $(BUILD)/libember-jvmti.so
endif
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TPROG_SRCS:= $(wildcard tests/progs/*.c)
TPROG_BINS:= $(patsubst tests/progs/%.c,$(BUILD)/progs/%,$(TPROG_SRCS))
# The Go TLS workload, with symbols and stripped (tests/unit/test_tls_verify), where Go is installed.
GO_BINS   := $(if $(shell command -v go 2>/dev/null),$(BUILD)/progs/go_tls $(BUILD)/progs/go_tls_stripped)
BENCH_SRCS:= $(wildcard bench/bench_*.c)
BENCH_BINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all programs tests clean test unit-test fuzz bench deps deps-agent run test-kernels soak test-net-syscall
.DELETE_ON_ERROR:
# Generated headers and objects are kept (they are not throwaway intermediates).
.SECONDARY:

all: programs tests
programs: $(PROGRAMS)
tests: $(UNIT_BINS) $(TPROG_BINS) $(GO_BINS) $(BENCH_BINS)

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

# Benchmarks' own BPF objects (bench/*.bpf.c): floors and stand-ins, not part of ember.
$(BUILD)/gen/bench/%.bpf.o: bench/%.bpf.c $(BUILD)/gen/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -I. -I$(BUILD)/gen -c $< -o $@

$(BUILD)/gen/bench/%.skel.h: $(BUILD)/gen/bench/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@
$(BUILD)/obj/bench/bench_hook_floor.o: $(BUILD)/gen/bench/hook_floor.skel.h
$(BUILD)/obj/bench/bench_ringbuf.o: $(BUILD)/gen/bench/ringbuf_cost.skel.h

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

$(BUILD)/lib/lib%.a:
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^
$(LIB_COMMON): $(call objs_of,common)
$(LIB_SYMBOLIZER): $(call objs_of,symbolizer)
$(LIB_L7): $(call objs_of,l7)
$(LIB_ANALYZER): $(call objs_of,analyzer analyzer/net analyzer/continuous analyzer/rest analyzer/unwind analyzer/tls analyzer/python analyzer/java)
$(LIB_EXPORTER): $(call objs_of,exporter exporter/skywalking)
$(LIB_COLLECTOR): $(call objs_of,collector)
$(LIB_CLI): $(call objs_of,cli)
$(LIB_PROTO): $(PROTO_OBJS)

$(BUILD)/ember: $(BUILD)/obj/cli/main.o $(LIB_CLI) $(LIB_L7) $(LIB_COMMON) $(LIB_PROTO)
	$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_CLI)
$(BUILD)/ember-collector: $(BUILD)/obj/collector/main.o $(LIB_COLLECTOR) $(LIB_COMMON)
	$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_COLLECTOR)
$(BUILD)/ember-analyzer: $(BUILD)/obj/analyzer/main.o $(LIB_ANALYZER) $(LIB_L7) $(LIB_SYMBOLIZER) $(LIB_COMMON) $(LIB_PROTO)
	$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_ANALYZER) $(JEMALLOC)
$(BUILD)/ember-exporter: $(BUILD)/obj/exporter/main.o $(LIB_EXPORTER) $(LIB_COMMON) $(LIB_PROTO)
	$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_EXPORTER) $(JEMALLOC)

# Tests, benchmarks and fuzzers may use any module: every library, as a group.
LINK_ALL = -Wl,--start-group $(LIB) -Wl,--end-group
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $< $(LINK_ALL) -o $@ $(LDLIBS) -lcmocka

# Test workloads: frame pointers in every function (gcc 12 drops them from leaf
# functions at -O1 even with -mno-omit-leaf-frame-pointer), no inlining.
# PROG_LIBS_<name>: what a workload links beyond libc.
PROG_LIBS_kafka_mock := -lrdkafka
# BoringSSL from android-libboringssl-dev (beside the system's OpenSSL, under android/).
BORINGSSL_LIB = /usr/lib/$(shell $(CC) -print-multiarch)/android
PROG_LIBS_bssl_peer = -L$(BORINGSSL_LIB) -Wl,-rpath,$(BORINGSSL_LIB) -lssl -lcrypto
# PROG_CFLAGS_<name>: a workload built otherwise (later flags win).
PROG_CFLAGS_nofp_chain := -O2 -fomit-frame-pointer
PROG_CFLAGS_fp_chain := -O2 -fno-omit-frame-pointer
PROG_CFLAGS_bssl_peer := -I/usr/include/android
$(BUILD)/progs/fp_chain: tests/progs/nofp_chain.c
# tls_probe_dump runs the analyzer's TLS probe finder, and the collector's check of its points
# (tests/integration/test_tls_offsets.sh).
$(BUILD)/progs/tls_probe_dump: $(BUILD)/obj/tests/progs/tls_probe_dump.o $(BUILD)/obj/analyzer/tls/tls_probe.o \
		$(BUILD)/obj/symbolizer/gopclntab.o $(BUILD)/obj/common/tls_code.o $(BUILD)/obj/common/x86_insn.o \
		$(BUILD)/obj/collector/tls_verify.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ -lelf
# py_layout_dump runs the analyzer's Python finder and prints its layout (test_python_layout.sh).
$(BUILD)/progs/py_layout_dump: $(BUILD)/obj/tests/progs/py_layout_dump.o $(BUILD)/obj/analyzer/python/py_finder.o \
		$(BUILD)/obj/analyzer/python/py_layout.o $(BUILD)/obj/common/ctl_client.o $(BUILD)/obj/common/ctl_proto.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ -lelf
# ctl_hostile speaks the collector's control protocol as a compromised analyzer (test_hostile_peer.sh).
$(BUILD)/progs/ctl_hostile: $(BUILD)/obj/tests/progs/ctl_hostile.o $(BUILD)/obj/common/ctl_client.o \
		$(BUILD)/obj/common/ctl_proto.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
# Standard library only: no network; the build cache under build/ keeps later builds fast.
GO_BUILD = GOCACHE=$(abspath $(BUILD))/go-cache GO111MODULE=off CGO_ENABLED=0 GOPROXY=off go build
$(BUILD)/progs/go_tls: tests/progs/go_tls/main.go
	@mkdir -p $(@D)
	$(GO_BUILD) -o $@ $<
$(BUILD)/progs/go_tls_stripped: tests/progs/go_tls/main.go
	@mkdir -p $(@D)
	$(GO_BUILD) -ldflags="-s -w" -o $@ $<
$(BUILD)/progs/%: tests/progs/%.c tests/progs/start_gate.h
	@mkdir -p $(@D)
	$(CC) -O0 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -Wall -Werror -pthread $(PROG_CFLAGS_$*) $< -o $@ $(PROG_LIBS_$*)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $< $(LINK_ALL) -o $@ $(LDLIBS)

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
	$(CC) -fsanitize=fuzzer,address,undefined $< $(LINK_ALL) -o $@ $(LDLIBS)

$(BUILD)/libember-jvmti.so: jvm/ember_jvmti.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -fPIC -shared -fvisibility=hidden -I$(JDK_INC) -I$(JDK_INC)/linux $< -o $@ -lpthread

# ---- entry points -----------------------------------------------------------
# What the agent needs (make run), and that with the test fixtures (deploy/install-deps.sh).
deps-agent:
	deploy/install-deps.sh agent
deps:
	deploy/install-deps.sh test

# The README's run command: installs what it needs, builds, runs the agent on
# the shipped configuration (file + Prometheus outputs, no OAP needed).
run: deps-agent
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

# Debian's kernels (bookworm 6.1, its backports' 6.12, bullseye 5.10) booted under qemu, a
# feature x kernel table (tests/kernels/matrix.sh; KERNELS=6.1,6.12 FEATURES=oncpu,mem narrow it).
test-kernels: deps
	$(MAKE) -j$(NPROC) programs tests
	tests/kernels/matrix.sh $(if $(KERNELS),--kernels $(KERNELS)) $(if $(FEATURES),--features $(FEATURES))

# The network and TLS integration tests again on the syscall layer (the suite runs them on
# the socket layer where the kernel has it; test_net_attach_path and test_net_raw_tp run the
# fallbacks there): tests/net-syscall.sh, EMBER_NET_ATTACH=syscall.
test-net-syscall: deps
	$(MAKE) -j$(NPROC) programs tests
	tests/net-syscall.sh

# The soak and fault run (tests/soak/soak.sh): an hour by default, SOAK_DURATION=10m for less.
soak: deps
	$(MAKE) -j$(NPROC) programs $(TPROG_BINS)
	tests/soak/soak.sh $(or $(SOAK_DURATION),1h)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# mlc-tune: a plain Makefile. `make` builds libraries, tools and tests into
# build/; `make asan test` does the same under ASan+UBSan in build-asan/.
# Modules are folders (docs/ARCHITECTURE.md); every .c file in a module folder
# goes into build/libmlc.a, every tools/<name>.c is a program, every
# tests/test_<name>.c a test binary. New files need no Makefile edit.

MODULES  := base ir tasks schedule targets measure db costmodel tuner graph frontend report model primfunc
TOOLS    := $(basename $(notdir $(wildcard tools/*.c)))
TESTS    := $(basename $(notdir $(wildcard tests/test_*.c)))

ifneq ($(filter asan,$(MAKECMDGOALS)),)
  B        := build-asan
  SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
  B        := build
  SANITIZE :=
endif

PREFIX   ?= /usr/local
CC       ?= cc
LLVM_CONFIG ?= llvm-config-14
LLVM_CFLAGS := $(shell $(LLVM_CONFIG) --cflags 2>/dev/null)
LLVM_LIBS   := $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) $(shell $(LLVM_CONFIG) --libs 2>/dev/null)
PKG_CFLAGS  := $(shell pkg-config --cflags sqlite3 libprotobuf-c 2>/dev/null)
PKG_LIBS    := $(shell pkg-config --libs sqlite3 libprotobuf-c 2>/dev/null)
# PostgreSQL databases (db/db_pg.c) through libpq when libpq-dev is there;
# without it, postgresql:// URLs are refused with a message.
PQ_CFLAGS   := $(shell pkg-config --exists libpq 2>/dev/null && echo -DMLC_HAVE_LIBPQ $$(pkg-config --cflags libpq))
PQ_LIBS     := $(if $(PQ_CFLAGS),$(shell pkg-config --libs libpq))
# ONNX models are read through C that protoc-c generates at build time from
# the onnx.proto of Debian's libonnx-dev (frontend/onnx.c includes it as
# "onnx/onnx.pb-c.h"; never committed).
ONNX_INC    := /usr/include
ONNX_PROTO  := $(ONNX_INC)/onnx/onnx.proto
GEN_SRC     := $(B)/gen/onnx/onnx.pb-c.c
GEN_HDR     := $(B)/gen/onnx/onnx.pb-c.h

WARN     := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
            -Wno-unused-parameter
CFLAGS   ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) -fPIC -fopenmp -I. -I$(B)/gen $(LLVM_CFLAGS) $(PKG_CFLAGS) $(PQ_CFLAGS) \
              -DMLC_SOURCE_DIR='"$(CURDIR)"' -MMD -MP $(SANITIZE)
# GCC's libgomp dir ahead of LLVM's -L dir, whose libgomp.so is LLVM's libomp.
GOMP_DIR := $(dir $(shell $(CC) -print-file-name=libgomp.so))
LDLIBS   := -L$(GOMP_DIR) $(LLVM_LIBS) $(PKG_LIBS) $(PQ_LIBS) -fopenmp -lz -lm -ldl -lpthread
RT_SRCS  := $(wildcard targets/runtime/*.c)
# MPI (issue 17), optional: with OpenMPI's mpicc present, measure/mpi.c is
# built with MLC_HAVE_MPI and the tools (libmlc.a is one object) link
# libmpi; tests and benches take mpi.o from libmlc-internal.a only when
# they call it. Without MPI mlc-tune says so under mpirun.
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
MPI_CFLAGS := $(if $(MPI_LIBS),$(shell mpicc --showme:compile 2>/dev/null) -DMLC_HAVE_MPI)

SRCS     := $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
OBJS     := $(SRCS:%.c=$(B)/obj/%.o) $(B)/obj/gen/onnx.pb-c.o
LIB      := $(B)/libmlc.a
# The same API as a shared library, with libmlcrt inside (what JIT-compiled
# kernels call), for foreign callers: python/mlc_tune loads it with ctypes.
SOLIB    := $(B)/libmlc.so
# Every object with every symbol, for tests, fuzz harnesses and benches,
# which reach internals through the modules' internal headers. libmlc.a
# exports the API alone: declarations in internal headers are hidden
# (#pragma GCC visibility in each *_internal.h / *_impl.h), and the
# library is one relocatable object in which hidden symbols are made
# local, so `nm -g libmlc.a` lists mlc_* and nothing else.
ILIB     := $(B)/libmlc-internal.a
RTLIB    := $(B)/libmlcrt.a
RT_OBJS  := $(RT_SRCS:%.c=$(B)/obj/%.o)
BINS     := $(TOOLS:%=$(B)/bin/%)
TESTBINS := $(TESTS:%=$(B)/tests/%)
# Each libFuzzer harness (tests/fuzz/fuzz_<name>.c) also linked with
# tests/fuzz/replay_main.c: replays files without libFuzzer, so
# tests/cli/fuzz_corpus.sh checks the committed corpus in every build.
FUZZ_REPLAYS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all deps run test asan bench install clean tools tests
# Objects of tools and tests are only reached through pattern rules; keep them
# (otherwise make deletes them as intermediates and rebuilds them next time).
.SECONDARY:
all: $(LIB) $(SOLIB) $(ILIB) $(RTLIB) $(BINS) $(TESTBINS) $(FUZZ_REPLAYS)

$(B)/obj/%.o: %.c | $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# One protoc-c run writes both files; the header stands for it.
$(GEN_HDR): $(ONNX_PROTO)
	@mkdir -p $(B)/gen
	@echo "  PROTOC-C $<"
	@protoc-c --c_out=$(B)/gen -I$(ONNX_INC) $<
$(GEN_SRC): $(GEN_HDR)

# Generated code used by frontend/onnx.c alone: hidden.
$(B)/obj/gen/onnx.pb-c.o: $(GEN_SRC)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(ALL_CFLAGS) -fvisibility=hidden -c $< -o $@

$(LIB): $(OBJS)
	@mkdir -p $(dir $@)
	@echo "  AR    $@ (API only)"
	@ld -r -o $(B)/obj/libmlc.o $^ && objcopy --localize-hidden $(B)/obj/libmlc.o
	@rm -f $@ && ar rcs $@ $(B)/obj/libmlc.o

$(SOLIB): $(LIB) $(RT_OBJS)
	@echo "  LD    $@"
	@$(CC) $(SANITIZE) -shared -Wl,-z,defs -o $@ $(B)/obj/libmlc.o $(RT_OBJS) $(LDLIBS) $(MPI_LIBS)

$(ILIB): $(OBJS)
	@mkdir -p $(dir $@)
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

$(RTLIB): $(RT_OBJS)
	@mkdir -p $(dir $@)
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

$(B)/bin/%: $(B)/obj/tools/%.o $(LIB) $(RTLIB)
	@mkdir -p $(dir $@)
	@echo "  LD    $@"
	@$(CC) $(SANITIZE) -o $@ $< $(LIB) $(RTLIB) $(LDLIBS)

$(B)/fuzz/%: $(B)/obj/tests/fuzz/%.o $(B)/obj/tests/fuzz/replay_main.o $(ILIB) $(RTLIB)
	@mkdir -p $(dir $@)
	@echo "  LD    $@"
	@$(CC) $(SANITIZE) -o $@ $< $(B)/obj/tests/fuzz/replay_main.o $(ILIB) $(RTLIB) $(LDLIBS)

$(B)/tests/%: $(B)/obj/tests/%.o $(ILIB) $(RTLIB)
	@mkdir -p $(dir $@)
	@echo "  LD    $@"
	@$(CC) $(SANITIZE) -o $@ $< $(ILIB) $(RTLIB) $(LDLIBS)

$(B)/obj/measure/mpi.o: ALL_CFLAGS += $(MPI_CFLAGS)
$(BINS): LDLIBS += $(MPI_LIBS)

# Benchmarks (bench/, DESIGN.md section 6): every bench/bench_<name>.c is a
# program linked with bench/results.c, the plain-C baseline compiled with
# -O3 -march=native, and OpenBLAS; each merges its cases into
# bench/results.json, which `make bench` ends by drawing as
# $(B)/bench/results.html (mlc-db report --bench: ours against each baseline).
BENCH_MAINS := $(wildcard bench/bench_*.c)
BENCHES  := $(BENCH_MAINS:bench/%.c=$(B)/bench/%)
BENCH_LIBOBJS := $(B)/obj/bench/results.o $(B)/obj/bench/naive_matmul.o $(B)/obj/bench/onednn.o

$(B)/obj/bench/naive_matmul.o: bench/naive_matmul.c
	@mkdir -p $(dir $@)
	@echo "  CC    $< (-O3 -march=native)"
	@$(CC) -std=gnu11 -O3 -march=native -c $< -o $@

$(B)/bench/%: $(B)/obj/bench/%.o $(BENCH_LIBOBJS) $(ILIB) $(RTLIB)
	@mkdir -p $(dir $@)
	@echo "  LD    $@"
	@$(CC) $(SANITIZE) -o $@ $< $(BENCH_LIBOBJS) $(ILIB) $(RTLIB) -lopenblas $(if $(DNNL_CFLAGS),-ldnnl) $(LDLIBS)

# bench_models (issue 16) also needs the tools it drives and the runtime it
# links the compiled models with. With oneDNN (libdnnl-dev, DEB_OPTIONAL)
# bench/onednn.c times convolutions in it (bench_models' per-layer table,
# bench_roofline's depthwise layers), else those columns say so.
DNNL_CFLAGS := $(if $(wildcard /usr/include/oneapi/dnnl/dnnl.h),-DMLC_HAVE_DNNL)
$(B)/obj/bench/onednn.o: ALL_CFLAGS += $(DNNL_CFLAGS)
$(B)/bench/bench_models: | $(B)/bin/mlc-tune $(B)/bin/mlc-compile $(B)/bin/mlc-worker
# bench_mpi_scale (issue 17) runs mlc-tune under mpirun.
$(B)/bench/bench_mpi_scale: | $(B)/bin/mlc-tune $(B)/bin/mlc-worker
# Benches that tune start builder and runner workers.
$(B)/bench/bench_contention $(B)/bench/bench_tune $(B)/bench/bench_model: | $(B)/bin/mlc-worker

# `make bench BENCH=replay` runs only build/bench/bench_replay.
BENCH_RUN = $(if $(BENCH),$(BENCH:%=$(B)/bench/bench_%),$(BENCHES))
bench: $(BENCHES) $(B)/bin/mlc-db
	@for b in $(BENCH_RUN); do echo "# $$b"; $$b || exit 1; done
	@echo "# results in bench/results.json"
	@$(B)/bin/mlc-db report --bench bench/results.json -o $(B)/bench/results.html

# The crash-consistency soak (tests/soak.sh; not in CI nor in `make test`):
# SOAK_RUNS runs of mlc-tune on one database, each killed with SIGKILL at a
# random moment, then checked (integrity, duplicates, lost batches, resume).
SOAK_RUNS ?= 50
.PHONY: soak
soak: $(B)/bin/mlc-tune $(B)/bin/mlc-worker
	@SOAK_RUNS=$(SOAK_RUNS) BIN=$(B)/bin bash tests/soak.sh

# Baseline engines for `make bench BENCH=models` (issue 30): a venv with
# ONNX Runtime and OpenVINO from PyPI in $(B)/bench-venv (pyenv's python3,
# never Debian's), and onnx for ONNX Runtime's quantizer (bench/quantize_model.py). Optional: the product, `make test` and CI never need it;
# bench_models leaves their columns out, saying so, without it.
BENCH_VENV := $(B)/bench-venv
BENCH_PIP_PKGS := onnxruntime openvino numpy onnx
.PHONY: bench-deps
bench-deps:
	@test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/pip install -q --disable-pip-version-check $(BENCH_PIP_PKGS)
	@echo "# $(BENCH_VENV):"; $(BENCH_VENV)/bin/pip list --disable-pip-version-check 2>/dev/null | grep -i -E '^(onnxruntime|openvino|numpy|onnx) '

# PyTorch 2 for the torch.compile backend's tests (issue 32;
# tests/python/test_dynamo.py, which Debian's PyTorch 1.13 skips): a venv
# with torch and NumPy from PyPI in build/torch2-venv (pyenv's python3, never
# Debian's), the versions pinned. Optional: the product, `make test` and CI
# never need it; tests/cli/python.sh runs those tests with it where it
# exists and says SKIP otherwise. PyPI's Linux torch wheel imports only with
# the CUDA libraries it depends on: about 5.5 GB in all.
TORCH2_VENV := build/torch2-venv
TORCH2_PIP_PKGS := torch==2.15.0 numpy==2.4.6
.PHONY: torch2-deps
torch2-deps:
	@test -x $(TORCH2_VENV)/bin/python || python3 -m venv $(TORCH2_VENV)
	@$(TORCH2_VENV)/bin/pip install -q --disable-pip-version-check $(TORCH2_PIP_PKGS)
	@echo "# $(TORCH2_VENV):"; $(TORCH2_VENV)/bin/python -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"

# The real networks (examples/export_models.py: ResNet-18, MobileNetV2, a
# transformer encoder, and BERT-base, GPT-2 small and a 125M Llama from
# examples/lm_models.py, random weights, with inputs and PyTorch's outputs
# as .npy) into models/, git-ignored; needs python3-torch and
# python3-torchvision (DEB_OPTIONAL), which only /usr/bin/python3 sees.
# The three language models, and GPT-2 small again as prefill + decode step,
# take about 2.6 GB.
MODEL_FILES := models/resnet18.onnx models/mobilenet_v2.onnx models/encoder.onnx \
               models/bert_base.onnx models/gpt2_small.onnx models/llama_100m.onnx \
               models/gpt2_small_prefill.onnx models/gpt2_small_step.onnx
.PHONY: models
models: $(MODEL_FILES)
$(MODEL_FILES) &: examples/export_models.py examples/lm_models.py
	/usr/bin/python3 examples/export_models.py models

# ResNet-18 and the encoder quantized as users quantize them (ONNX Runtime's
# quantize_static: QDQ, per-channel int8 weights, int8 activations (its
# defaults) calibrated on random inputs), with ONNX Runtime's int8 outputs as their
# reference (bench/quantize_model.py): models/<name>_int8.onnx for
# `make bench BENCH=models`. Needs `make models` and `make bench-deps`.
INT8_MODELS := models/resnet18_int8.onnx models/encoder_int8.onnx
.PHONY: models-int8
models-int8: $(INT8_MODELS)
models/%_int8.onnx: models/%.onnx bench/quantize_model.py
	@test -x $(BENCH_VENV)/bin/python || { echo "models-int8: run make bench-deps first"; exit 1; }
	$(BENCH_VENV)/bin/python bench/quantize_model.py $* --models models

# report/font.c, the glyphs PNG plots draw text with, rendered from DejaVu
# Sans by FreeType (needs libfreetype-dev and fonts-dejavu-core; the build
# itself needs neither).
.PHONY: report-font
report-font:
	$(CC) -O1 report/fontgen/gen_font.c $$(pkg-config --cflags --libs freetype2) -o $(B)/gen_font
	$(B)/gen_font /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf 22 > report/font.c

# Debian packages the project needs; installed when root, else printed.
DEB_PKGS := llvm-14-dev libsqlite3-dev zlib1g-dev libxgboost-dev libopenblas-dev pkg-config gcc make \
            protobuf-c-compiler libprotobuf-c-dev libonnx-dev
# The sqlite3 shell (tests/cli/mlc_db.sh queries a database with it; SKIP
# without it); ONNX's backend test data (test_frontend_onnx_conformance SKIPs without
# it); PyTorch and onnx for examples/export_models.py and tests/onnx/make_models.py;
# OpenMPI for mlc-tune under mpirun (docs/MPI.md; tests/cli/mlc_tune_mpi.sh SKIPs without it);
# headless Chromium renders mlc-db report's page (tests/cli/report_chromium.sh SKIPs without it).
DEB_OPTIONAL := clang sqlite3 libonnx-testdata python3-torch python3-torchvision python3-onnx \
                python3-numpy libdnnl-dev libopenmpi-dev openmpi-bin chromium
deps:
	@sh tools/deps.sh $(DEB_PKGS) --optional $(DEB_OPTIONAL)

# Tune the default task (matmul 1024^3, 64 trials) into ./mlc.db (or
# $MLC_DB), then show its best records. A rerun finds the budget spent.
run: deps
	@$(MAKE) --no-print-directory all
	$(B)/bin/mlc-tune --task matmul --trials 64 -v
	$(B)/bin/mlc-db top --task matmul -k 3

test: deps
	@$(MAKE) --no-print-directory all $(if $(filter asan,$(MAKECMDGOALS)),asan)
	@sh tests/run.sh $(B)

# `make asan test`: the goal only switches the build directory and flags.
asan:
	@true

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/mlc
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(RTLIB) $(DESTDIR)$(PREFIX)/lib/
	for m in $(MODULES); do if [ -f $$m/$$m.h ]; then \
	  install -d $(DESTDIR)$(PREFIX)/include/mlc/$$m && \
	  install -m 644 $$m/$$m.h $$m/*.def $(DESTDIR)$(PREFIX)/include/mlc/$$m/ 2>/dev/null || \
	  install -m 644 $$m/$$m.h $(DESTDIR)$(PREFIX)/include/mlc/$$m/; fi; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@DEPLIBS@|$(LDLIBS) $(MPI_LIBS)|' -e 's|@VERSION@|$(shell sed -n 's/^#define MLC_VERSION "\(.*\)"/\1/p' base/base.h)|' \
	    tools/mlc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/mlc.pc

clean:
	rm -rf build build-asan build-fuzz

-include $(OBJS:.o=.d) $(RT_OBJS:.o=.d) $(BENCH_MAINS:%.c=$(B)/obj/%.d) $(B)/obj/bench/results.d $(TOOLS:%=$(B)/obj/tools/%.d) $(TESTS:%=$(B)/obj/tests/%.d) $(FUZZ_REPLAYS:$(B)/fuzz/%=$(B)/obj/tests/fuzz/%.d) $(B)/obj/tests/fuzz/replay_main.d

# libFuzzer harnesses (tests/fuzz/fuzz_<name>.c: TVMScript parser, trace
# JSON + replay, JSON reader, model JSON + graph pipeline, .npy, JSON-lines
# import/export, ONNX loader, input shape lists), built with clang under ASan+UBSan into
# build-fuzz/. `make fuzz` builds them; `make fuzz FUZZ_SECONDS=N` also runs
# each for N seconds on build-fuzz/corpus/<name> (seeded from the committed
# tests/fuzz/corpus/<name>; ONNX also from the conformance models), crashes
# into build-fuzz/crashes/<name>/. Commit a crash as a regression input in
# tests/fuzz/corpus/<name>/ (tests/cli/fuzz_corpus.sh replays the corpus).
FUZZ_CC  ?= clang
FUZZ_B   := build-fuzz
FUZZ_SECONDS ?= 0
FUZZ_MAX_LEN ?= 8192
# An UndefinedBehaviorSanitizer finding (a signed overflow in shape
# arithmetic) stops the run and saves the input, as a memory error does;
# by default UBSan prints and goes on, and libFuzzer never sees it.
FUZZ_UBSAN := -fno-sanitize-recover=undefined
FUZZERS  := $(basename $(notdir $(wildcard tests/fuzz/fuzz_*.c)))
.PHONY: fuzz
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) is missing (apt-get install clang)"; exit 1; }
	@$(MAKE) --no-print-directory B=$(FUZZ_B) SANITIZE='-fsanitize=fuzzer-no-link,address,undefined $(FUZZ_UBSAN)' \
	  CC=$(FUZZ_CC) CFLAGS='-O1 -g' $(FUZZ_B)/libmlc-internal.a
	@for h in $(FUZZERS); do \
	  echo "  LD    $(FUZZ_B)/$$h"; \
	  $(FUZZ_CC) -std=gnu11 -O1 -g -I. -I$(FUZZ_B)/gen -DMLC_SOURCE_DIR='"$(CURDIR)"' -fsanitize=fuzzer,address,undefined $(FUZZ_UBSAN) \
	    tests/fuzz/$$h.c $(FUZZ_B)/libmlc-internal.a $(LDLIBS) -o $(FUZZ_B)/$$h || exit 1; \
	  mkdir -p $(FUZZ_B)/corpus/$$h $(FUZZ_B)/crashes/$$h; \
	  if [ -d tests/fuzz/corpus/$$h ]; then cp tests/fuzz/corpus/$$h/* $(FUZZ_B)/corpus/$$h/ 2>/dev/null; fi; \
	done; true
	@for f in /usr/share/libonnx-testdata/data/node/*/model.onnx; do \
	  [ -f "$$f" ] && cp "$$f" $(FUZZ_B)/corpus/fuzz_onnx/$$(basename $$(dirname $$f)).onnx; done; \
	  cp tests/onnx/*.onnx tests/onnx/overflow/*.onnx $(FUZZ_B)/corpus/fuzz_onnx/ 2>/dev/null; true
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then \
	  failed=0; \
	  for h in $(FUZZERS); do \
	    echo "# $$h: $(FUZZ_SECONDS) s"; \
	    $(FUZZ_B)/$$h -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -timeout=20 \
	      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_B)/crashes/$$h/ \
	      $(FUZZ_B)/corpus/$$h 2>$(FUZZ_B)/$$h.log; rc=$$?; \
	    grep -E '^#[0-9]+.*(DONE|pulse|NEW)' $(FUZZ_B)/$$h.log | tail -n 1; \
	    grep -E '^stat::number_of_executed_units|^stat::peak_rss' $(FUZZ_B)/$$h.log; \
	    echo "  crashes: $$(ls $(FUZZ_B)/crashes/$$h | wc -l) (exit $$rc; log $(FUZZ_B)/$$h.log)"; \
	    if [ $$rc -ne 0 ]; then failed=$$((failed + 1)); tail -n 40 $(FUZZ_B)/$$h.log; fi; \
	  done; \
	  echo "fuzz: $$(($(words $(FUZZERS)) - failed)) passed, $$failed failed"; [ $$failed -eq 0 ]; \
	else echo "fuzz: built $(FUZZERS:%=$(FUZZ_B)/%); run them with make fuzz FUZZ_SECONDS=N"; fi

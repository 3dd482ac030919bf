# nn-engine build. `make` builds the library (shared and static) and the
# command-line program build/nnengine; `make demo` trains LeNet-5 on
# Fashion-MNIST with it. `make test` installs what is missing, then builds and
# runs the C test suite four times (with OpenBLAS, with the built-in GEMM's
# AVX2 and baseline SSE2 kernels, and under AddressSanitizer + UBSan), the
# command-line tests and the Python tests (scripts/run-tests.sh).
#
# Variables: BUILD (output folder), BLAS (auto|0|1), MPI (auto|0|1), SANITIZE (0|1), CC,
# GEMM_KERNELS (auto: AVX2+FMA when the CPU has them | baseline: SSE2 only),
# IMAGE_CODECS (1: libpng + libjpeg | wic: Windows Imaging Component | 0: image folders refused).
# `make windows`: the Windows x86-64 build in build-win/ (mk/windows.mk).

BUILD ?= build
BLAS ?= auto
SANITIZE ?= 0
GEMM_KERNELS ?= auto
CC ?= cc

ifeq ($(BLAS),auto)
  BLAS := $(shell pkg-config --exists openblas 2>/dev/null && echo 1 || echo 0)
endif

CPPFLAGS += -Iinclude -Isrc -Ishaders -D_GNU_SOURCE # shaders/: the tables C and GLSL share
CFLAGS ?= -O3 -g
CFLAGS += -std=c11 -fPIC -Wall -Wextra -Wshadow -Wno-unused-parameter -pthread
LDLIBS += -lm -pthread

# Datasets: zlib (gzip'd IDX files), libpng and libjpeg (image folders).
IMAGE_CODECS ?= 1
ifeq ($(IMAGE_CODECS),1)
CPPFLAGS += $(shell pkg-config --cflags zlib libpng libjpeg 2>/dev/null)
LDLIBS += $(shell pkg-config --libs zlib libpng libjpeg 2>/dev/null || echo -lz -lpng16 -ljpeg)
else
LDLIBS += -lz
endif

ifeq ($(BLAS),1)
  CPPFLAGS += -DNN_USE_OPENBLAS $(shell pkg-config --cflags openblas)
  LDLIBS += $(shell pkg-config --libs openblas)
endif
ifeq ($(GEMM_KERNELS),baseline)
  CPPFLAGS += -DNN_GEMM_NO_DISPATCH
endif
ifeq ($(SANITIZE),1)
  CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC := $(sort $(wildcard src/base/*.c src/core/*.c src/ops/*.c src/fusion/*.c src/nn/*.c src/optim/*.c \
                              src/data/*.c src/io/*.c \
                              src/backends/*.c src/backends/cpu/*.c))

# ---- MPI: data-parallel training (src/dist/; MPI=0 builds without it) -------
# Open MPI found by pkg-config (ompi-c, from libopenmpi-dev). Without it the
# library still has nn_dist_*, whose nn_dist_init says the build has no MPI.
MPI ?= auto
ifeq ($(MPI),auto)
  MPI := $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0)
  ifeq ($(MPI),0)
    $(info nn-engine: building without MPI (no pkg-config ompi-c; install libopenmpi-dev for data parallelism))
  endif
endif
ifeq ($(MPI),1)
  CPPFLAGS += -DNN_WITH_MPI $(shell pkg-config --cflags ompi-c)
  LDLIBS += $(shell pkg-config --libs ompi-c)
endif
LIB_SRC += $(sort $(wildcard src/dist/*.c))

# ---- Vulkan backend (VULKAN=0 builds without it) ----------------------------
# Shaders in shaders/*.comp are compiled by glslc to SPIR-V and embedded in
# the library as byte arrays (build/gen/vk_shaders.c). The Vulkan headers
# come from libvulkan-dev; the library never links libvulkan: it dlopens
# libvulkan.so.1 at run time, so it still runs where Vulkan is absent.
VULKAN ?= 1
GLSLC ?= glslc
ifeq ($(VULKAN),1)
  CPPFLAGS += -DNN_WITH_VULKAN
  LDLIBS += $(if $(filter 1,$(WINDOWS)),,-ldl)
  LIB_SRC += $(sort $(wildcard src/backends/vulkan/*.c))
  SHADERS := $(sort $(wildcard shaders/*.comp))
  # Shaders on matrix cores (GL_KHR_cooperative_matrix) need glslang 13 or
  # later, which Debian 12 lacks: scripts/shader-tools.sh installs PyPI's
  # into $(SHADER_TOOLS). COOPMAT=0 builds without them (the backend then
  # says its matrix cores are off).
  COOPMAT ?= 1
  COOPMAT_SHADERS := $(shell grep -l GL_KHR_cooperative_matrix $(SHADERS))
  ifeq ($(COOPMAT),0)
    SHADERS := $(filter-out $(COOPMAT_SHADERS),$(SHADERS))
    COOPMAT_SHADERS :=
  endif
  SPIRV := $(SHADERS:shaders/%.comp=$(BUILD)/spv/%.spv)
  COOPMAT_SPIRV := $(COOPMAT_SHADERS:shaders/%.comp=$(BUILD)/spv/%.spv)
  VK_GEN_OBJ := $(BUILD)/obj/gen/vk_shaders.o
endif
# ---- run-time GLSL for custom kernels (include/nn_custom.h) ---------------
# libshaderc compiles a user's GLSL when a custom kernel is made. Debian 12's
# shared libshaderc1 lacks its glslang and SPIRV-Tools (it cannot be loaded),
# so the library links shaderc in from the static archives of libshaderc-dev,
# glslang-dev and spirv-tools where they are (their symbols kept private);
# elsewhere (Windows, SHADERC=0) it looks for a shared libshaderc at run time,
# and without one GLSL is refused while SPIR-V still works.
SHADERC ?= auto
SHADERC_LIBDIR ?= /usr/lib/$(shell $(CC) -print-multiarch 2>/dev/null)
SHADERC_ARCHIVES := $(foreach a,shaderc_combined glslang MachineIndependent GenericCodeGen OGLCompiler OSDependent \
                      SPIRV SPIRV-Tools-opt SPIRV-Tools glslang-default-resource-limits,$(SHADERC_LIBDIR)/lib$(a).a)
ifeq ($(SHADERC),auto)
  SHADERC := $(if $(filter 1,$(WINDOWS)),0,$(if $(filter-out $(wildcard $(SHADERC_ARCHIVES)),$(SHADERC_ARCHIVES)),0,1))
  ifeq ($(SHADERC),0)
    $(info nn-engine: custom kernels' GLSL through a shared libshaderc found at run time (no static shaderc archives; install libshaderc-dev spirv-tools to link it in))
  endif
endif
ifeq ($(SHADERC),1)
  CPPFLAGS += -DNN_WITH_SHADERC
  LDLIBS += -Wl,--exclude-libs,ALL -Wl,--start-group $(SHADERC_ARCHIVES) -Wl,--end-group -lstdc++
endif
# ---- platform layer (src/platform/) and the image decoders ----------------
LIB_SRC += $(sort $(wildcard src/platform/*.c))
# IMAGE_CODECS=wic: the Windows Imaging Component decodes (mk/windows.mk).
WIC_DECODER_SRC := src/data/image_wic.c src/data/image_jpeg_end.c
LIBRARY_DECODER_SRC := src/data/image_png.c src/data/image_jpeg.c
ifeq ($(IMAGE_CODECS),1)
  LIB_SRC := $(filter-out src/data/image_codecs_absent.c $(WIC_DECODER_SRC),$(LIB_SRC))
else ifeq ($(IMAGE_CODECS),wic)
  LIB_SRC := $(filter-out src/data/image_codecs_absent.c $(LIBRARY_DECODER_SRC),$(LIB_SRC))
else
  LIB_SRC := $(filter-out src/data/image_decode.c src/data/image_jpeg_region.c $(LIBRARY_DECODER_SRC) \
                          $(WIC_DECODER_SRC),$(LIB_SRC))
endif
# ------------------------------------------------------------------------------
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(VK_GEN_OBJ)
CLI_SRC := $(sort $(wildcard tools/nnengine/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

$(BUILD)/spv/%.spv: shaders/%.comp $(wildcard shaders/*.glsl shaders/*.h)
	@mkdir -p $(@D)
	@command -v $(GLSLC) >/dev/null || { echo "glslc not found: install glslc (make deps), or build with VULKAN=0"; exit 1; }
	$(GLSLC) --target-env=vulkan1.0 -O -Werror -o $@ $<

SHADER_TOOLS ?= build/shader-tools
GLSLANG := $(SHADER_TOOLS)/glslang
$(GLSLANG): scripts/shader-tools.sh
	@scripts/shader-tools.sh $(SHADER_TOOLS)

$(COOPMAT_SPIRV): $(BUILD)/spv/%.spv: shaders/%.comp $(wildcard shaders/*.glsl shaders/*.h) | $(GLSLANG)
	@mkdir -p $(@D)
	$(GLSLANG) -V --target-env vulkan1.2 -Ishaders -o $@ $<

$(BUILD)/gen/vk_shaders.c: $(SPIRV) scripts/embed-spirv.sh
	@mkdir -p $(@D)
	scripts/embed-spirv.sh $@ $(SPIRV)

$(BUILD)/obj/gen/vk_shaders.o: $(BUILD)/gen/vk_shaders.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<
# ------------------------------------------------------------------------------
TEST_SRC := $(sort $(wildcard tests/*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# Programs a user would write against the public API (include/), one per file.
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

.PHONY: all lib cli deps test check bench demo clean examples
all: deps lib cli
lib: $(BUILD)/libnnengine.a $(BUILD)/libnnengine.so
cli: $(BUILD)/nnengine

deps:
	@scripts/install-deps.sh

# The main job: LeNet-5 on Fashion-MNIST (Debian's dataset-fashion-mnist).
DEMO_DATA ?= /usr/share/datasets/fashion-mnist
DEMO_EPOCHS ?= 10
demo:
	@scripts/install-deps.sh dataset-fashion-mnist
	@echo "building the library and $(BUILD)/nnengine (a few minutes on 2 cores, once)"
	@$(MAKE) -s cli
	$(BUILD)/nnengine train lenet5 --data $(DEMO_DATA) --epochs $(DEMO_EPOCHS)

# Every suite; the last line is the total "N passed, N failed".
test: deps
	@scripts/run-tests.sh

# One build's suite (used by run-tests.sh).
check: $(BUILD)/tests/nn_tests
	$(BUILD)/tests/nn_tests

bench: $(BENCH_BIN)

examples: $(EXAMPLE_BIN)

# The image loader's throughput (issue 8): make bench-images && build/bench/bench_image_pipeline --threads 1,2,4,8,16
.PHONY: bench-images
bench-images: $(BUILD)/bench/bench_image_pipeline

$(BUILD)/libnnengine.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/libnnengine.so: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/nn_tests: $(TEST_OBJ) $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libnnengine.a $(LDLIBS)

$(BUILD)/nnengine: $(CLI_OBJ) $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libnnengine.a $(LDLIBS)

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libnnengine.a $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libnnengine.a $(LDLIBS)

# Objects remember the flags they were built with: a variant never reuses
# another's objects because each variant has its own BUILD folder.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# ---- io: the C side of the Python interop tests in tests/io/ ----
.PHONY: io-fixture
io-fixture: $(BUILD)/tests/nn_io_fixture $(BUILD)/tests/nn_blocks $(BUILD)/tests/nn_zoo_fixture
$(BUILD)/tests/nn_io_fixture $(BUILD)/tests/nn_blocks $(BUILD)/tests/nn_zoo_fixture: $(BUILD)/tests/%: $(BUILD)/obj/tests/io/%.o $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libnnengine.a $(LDLIBS)

# ---- io: libFuzzer target for the safetensors header parser ----
# `make fuzz` fuzzes for FUZZ_SECONDS (new finds go to build/fuzz/found);
# `make fuzz-regress` replays tests/fuzz/corpus/ once (run by make test).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
# One input taking longer is a finding (libFuzzer saves it as timeout-*),
# not a run that hangs: its default is 20 minutes.
FUZZ_UNIT_SECONDS ?= 30
FUZZ_BIN := $(BUILD)/fuzz/fuzz_safetensors_header
FUZZ_SRC := tests/fuzz/fuzz_safetensors_header.c src/io/safetensors_header.c src/base/error.c
.PHONY: fuzz fuzz-regress
$(FUZZ_BIN): $(FUZZ_SRC) src/io/safetensors_header.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -g -O1 -Iinclude -Isrc -D_GNU_SOURCE -fno-omit-frame-pointer \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $(FUZZ_SRC)
fuzz-regress: $(FUZZ_BIN)
	$(FUZZ_BIN) -runs=0 tests/fuzz/corpus
	$(BUILD)/fuzz/fuzz_idx -runs=0 tests/fuzz/corpus_idx
	$(BUILD)/fuzz/fuzz_image_decode -runs=0 tests/fuzz/corpus_image
	$(BUILD)/fuzz/fuzz_train_state -runs=0 tests/fuzz/corpus_state
	$(BUILD)/fuzz/fuzz_window_ops -runs=0 tests/fuzz/corpus_ops
	$(BUILD)/fuzz/fuzz_onnx_import -runs=0 tests/fuzz/corpus_onnx
fuzz: $(FUZZ_BIN)
	@mkdir -p $(BUILD)/fuzz/found
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=4096 $(BUILD)/fuzz/found tests/fuzz/corpus

# ---- files (issue 25): libFuzzer targets for the IDX reader and the image
# decoders; `make fuzz-idx` / `make fuzz-image` fuzz for FUZZ_SECONDS,
# fuzz-regress replays their corpora too.
FUZZ_FLAGS := -std=c11 -g -O1 -Iinclude -Isrc -D_GNU_SOURCE -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_IMAGE_SRC := src/data/image_decode.c $(LIBRARY_DECODER_SRC) src/data/image_jpeg_region.c
FUZZ_IDX_SRC := src/data/idx.c src/data/dataset.c src/data/class_folders.c src/data/image_folder.c \
	$(FUZZ_IMAGE_SRC) src/io/file_read.c src/platform/files.c src/base/error.c src/core/rng.c
.PHONY: fuzz-idx fuzz-image
$(BUILD)/fuzz/fuzz_idx: tests/fuzz/fuzz_idx.c $(FUZZ_IDX_SRC)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -lz -lpng -ljpeg -lm
$(BUILD)/fuzz/fuzz_image_decode: tests/fuzz/fuzz_image_decode.c $(FUZZ_IMAGE_SRC)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -lpng -ljpeg -lm
fuzz-regress: $(BUILD)/fuzz/fuzz_idx $(BUILD)/fuzz/fuzz_image_decode
fuzz-idx: $(BUILD)/fuzz/fuzz_idx
	@mkdir -p $(BUILD)/fuzz/found_idx
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=4096 -malloc_limit_mb=512 $(BUILD)/fuzz/found_idx tests/fuzz/corpus_idx
fuzz-image: $(BUILD)/fuzz/fuzz_image_decode
	@mkdir -p $(BUILD)/fuzz/found_image
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=8192 -malloc_limit_mb=512 $(BUILD)/fuzz/found_image tests/fuzz/corpus_image

# ---- issue 40: targets over the whole CPU library, compiled once with the
# fuzzer's instrumentation: the training-state loader, windowed operations
# against double-precision references and (issue 38) the ONNX importer;
# `make fuzz-state` / `make fuzz-ops` / `make fuzz-onnx` fuzz for
# FUZZ_SECONDS, fuzz-regress replays their corpora.
FUZZ_LIB_SRC := $(filter-out src/data/image_codecs_absent.c $(WIC_DECODER_SRC), \
	$(sort $(wildcard src/base/*.c src/core/*.c src/ops/*.c src/fusion/*.c src/nn/*.c src/optim/*.c src/data/*.c src/io/*.c \
	                  src/backends/*.c src/backends/cpu/*.c src/dist/*.c src/platform/*.c)))
FUZZ_LIB := $(BUILD)/fuzz/libnnengine-fuzz.a
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(subst -fsanitize=fuzzer,-fsanitize=fuzzer-no-link,$(FUZZ_FLAGS)) -Ishaders -pthread \
		$(shell pkg-config --cflags libpng 2>/dev/null) -MMD -MP -c -o $@ $<
-include $(FUZZ_LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.d)
$(FUZZ_LIB): $(FUZZ_LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.o)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/fuzz/fuzz_train_state $(BUILD)/fuzz/fuzz_window_ops $(BUILD)/fuzz/fuzz_onnx_import: $(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_FLAGS) -pthread -o $@ $< $(FUZZ_LIB) -lz -lpng -ljpeg -lm
fuzz-regress: $(BUILD)/fuzz/fuzz_train_state $(BUILD)/fuzz/fuzz_window_ops $(BUILD)/fuzz/fuzz_onnx_import
.PHONY: fuzz-state fuzz-ops fuzz-onnx
fuzz-onnx: $(BUILD)/fuzz/fuzz_onnx_import
	@mkdir -p $(BUILD)/fuzz/found_onnx
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=20000 -malloc_limit_mb=1024 $(BUILD)/fuzz/found_onnx tests/fuzz/corpus_onnx
fuzz-state: $(BUILD)/fuzz/fuzz_train_state
	@mkdir -p $(BUILD)/fuzz/found_state
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=8192 -malloc_limit_mb=512 $(BUILD)/fuzz/found_state tests/fuzz/corpus_state
fuzz-ops: $(BUILD)/fuzz/fuzz_window_ops
	@mkdir -p $(BUILD)/fuzz/found_ops
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_UNIT_SECONDS) -max_len=2048 -malloc_limit_mb=512 $(BUILD)/fuzz/found_ops tests/fuzz/corpus_ops

clean:
	rm -rf build

# ---- Windows (issue 27): cross-compiled with mingw-w64 ----
WINDOWS ?= 0
include mk/windows.mk

# Every object's header dependencies (-MMD), the io fixtures' and benchmarks' too.
IO_FIXTURE_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/io/*.c))
-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(IO_FIXTURE_OBJ:.o=.d) $(BENCH_SRC:%.c=$(BUILD)/obj/%.d)

# The Windows x86-64 build (issue 27), cross-compiled with mingw-w64
# (Debian: gcc-mingw-w64-x86-64, libz-mingw-w64-dev; `make windows-deps`).
#
#   make windows    build-win/nnengine.exe, nnengine.dll (+ libnnengine.dll.a, the
#                   import library), libnnengine.a and tests/nn_tests.exe
#
# Everything is linked statically (zlib, winpthreads, libgcc): the DLL and the
# programs need only Windows' own DLLs. The Vulkan backend loads vulkan-1.dll
# (every GPU driver installs it) at run time, as on Linux. Without MPI, OpenBLAS
# (the built-in GEMM) or libpng/libjpeg (image folders are refused with a
# message; IDX files work): IMAGE_CODECS=0.
MINGW ?= x86_64-w64-mingw32
WINDOWS_BUILD ?= build-win

.PHONY: windows windows-deps
windows:
	@command -v $(MINGW)-gcc >/dev/null || { echo "make windows: $(MINGW)-gcc not found: make windows-deps"; exit 1; }
	$(MAKE) WINDOWS=1 BUILD=$(WINDOWS_BUILD) CC=$(MINGW)-gcc AR=$(MINGW)-ar BLAS=0 MPI=0 IMAGE_CODECS=0 \
		$(WINDOWS_BUILD)/nnengine.dll $(WINDOWS_BUILD)/nnengine.exe $(WINDOWS_BUILD)/tests/nn_tests.exe

windows-deps:
	@scripts/install-deps.sh gcc-mingw-w64-x86-64 libz-mingw-w64-dev wine64

ifeq ($(WINDOWS),1)
# The Vulkan headers are the host's (libvulkan-dev): only they, not the rest of /usr/include.
VULKAN_HEADERS := $(BUILD)/vulkan-include
CPPFLAGS += -I$(VULKAN_HEADERS) -D__USE_MINGW_ANSI_STDIO=1 # C99 printf: %zu, %lld
# -static: zlib, winpthreads and libgcc inside; Windows 8 and later (WaitOnAddress).
LDFLAGS += -static
LDLIBS += -lsynchronization -lshell32 # WaitOnAddress; CommandLineToArgvW

$(LIB_OBJ) $(CLI_OBJ) $(TEST_OBJ): | $(VULKAN_HEADERS)
$(VULKAN_HEADERS):
	@mkdir -p $@
	ln -sfn /usr/include/vulkan $@/vulkan
	ln -sfn /usr/include/vk_video $@/vk_video

$(BUILD)/nnengine.dll: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -o $@ $^ -Wl,--out-implib,$(BUILD)/libnnengine.dll.a $(LDLIBS)

$(BUILD)/nnengine.exe: $(CLI_OBJ) $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libnnengine.a $(LDLIBS)

# The C tests, but those that write PNG/JPEG files (no libpng/libjpeg here)
# or test POSIX file kinds (FIFOs, symbolic links, permissions).
WINDOWS_TEST_EXCLUDED := test_files test_hardening_files test_data test_image_loader test_image_resize
WINDOWS_TEST_OBJ := $(filter-out $(WINDOWS_TEST_EXCLUDED:%=$(BUILD)/obj/tests/%.o),$(TEST_OBJ)) \
                    $(BUILD)/obj/tests/windows/posix_compat.o
$(TEST_OBJ): CPPFLAGS += -include tests/windows/posix_compat.h
$(BUILD)/tests/nn_tests.exe: $(WINDOWS_TEST_OBJ) $(BUILD)/libnnengine.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(WINDOWS_TEST_OBJ) $(BUILD)/libnnengine.a $(LDLIBS)
endif

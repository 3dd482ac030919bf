/* The CPU backend: host buffers, a cache of freed buffers, and the
 * nn_backend table (its kernels: cpu_kernels.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"
#include "backends/registry.h"
#include "platform/aligned_memory.h"
#include "platform/host_info.h"

/* A training step frees and re-allocates buffers of the same sizes every
 * step; keeping freed buffers by exact size makes that allocation free of
 * malloc and page faults. Under AddressSanitizer the cache is off so that a
 * use after free is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ENABLED 0
#endif
#endif
#ifndef CACHE_ENABLED
#define CACHE_ENABLED 1
#endif

#define CACHE_SIZE_CLASSES 64
#define CACHE_MAX_BYTES ((size_t)1 << 30)

typedef struct cpu_backend {
    nn_backend base;
    nn_thread_pool *pool;
    struct {
        size_t bytes;
        nn_buffer *head;
    } cache[CACHE_SIZE_CLASSES];
    size_t cached_bytes;
    uint64_t bytes_in_use, peak_in_use; /* handed-out buffers (nn_ctx_memory_stats) */
} cpu_backend;

static cpu_backend *as_cpu(nn_backend *self) { return (cpu_backend *)self; }

static void release_buffer(nn_buffer *buffer) {
    nn_aligned_free(buffer->data);
    free(buffer);
}

static void cache_flush(cpu_backend *cpu) {
    for (int i = 0; i < CACHE_SIZE_CLASSES; i++) {
        while (cpu->cache[i].head) {
            nn_buffer *b = cpu->cache[i].head;
            cpu->cache[i].head = b->next;
            release_buffer(b);
        }
        cpu->cache[i].bytes = 0;
    }
    cpu->cached_bytes = 0;
}

static nn_buffer *cache_take(cpu_backend *cpu, size_t bytes) {
    for (int i = 0; i < CACHE_SIZE_CLASSES; i++) {
        if (cpu->cache[i].bytes != bytes || !cpu->cache[i].head) continue;
        nn_buffer *b = cpu->cache[i].head;
        cpu->cache[i].head = b->next;
        cpu->cached_bytes -= bytes;
        return b;
    }
    return NULL;
}

/* Returns false when the cache is full or has no room for this size. */
static int cache_put(cpu_backend *cpu, nn_buffer *buffer) {
    if (!CACHE_ENABLED || cpu->cached_bytes + buffer->bytes > CACHE_MAX_BYTES) return 0;
    int free_slot = -1;
    for (int i = 0; i < CACHE_SIZE_CLASSES; i++) {
        if (cpu->cache[i].bytes == buffer->bytes) {
            free_slot = i;
            break;
        }
        if (free_slot < 0 && !cpu->cache[i].head) free_slot = i;
    }
    if (free_slot < 0) return 0;
    cpu->cache[free_slot].bytes = buffer->bytes;
    buffer->next = cpu->cache[free_slot].head;
    cpu->cache[free_slot].head = buffer;
    cpu->cached_bytes += buffer->bytes;
    return 1;
}

static nn_buffer *count_in_use(cpu_backend *cpu, nn_buffer *buffer) {
    cpu->bytes_in_use += buffer->bytes;
    if (cpu->bytes_in_use > cpu->peak_in_use) cpu->peak_in_use = cpu->bytes_in_use;
    return buffer;
}

/* The host's physical memory: Linux promises any allocation and kills the
 * process when it is touched, so the bound is checked here instead. */
static uint64_t host_memory_bytes(void) { return nn_host_memory_bytes(); }

static nn_buffer *cpu_alloc(nn_backend *self, size_t bytes) {
    cpu_backend *cpu = as_cpu(self);
    const uint64_t host = host_memory_bytes();
    if (bytes > host || cpu->bytes_in_use > host - bytes) {
        nn_set_error(NN_ERR_MEMORY, "cpu: refusing to allocate %zu bytes: with the %llu bytes in use that exceeds "
                     "the host's %llu bytes of memory", bytes, (unsigned long long)cpu->bytes_in_use,
                     (unsigned long long)host);
        return NULL;
    }
    nn_buffer *buffer = cache_take(cpu, bytes);
    if (buffer) return count_in_use(cpu, buffer);
    buffer = calloc(1, sizeof *buffer);
    /* Round up to the alignment; never ask for 0 bytes. */
    size_t rounded = ((bytes ? bytes : 1) + 63) & ~(size_t)63;
    void *data = buffer ? nn_aligned_alloc(64, rounded) : NULL;
    if (!data && buffer && cpu->cached_bytes) {
        cache_flush(cpu); /* give the cached memory back and try once more */
        data = nn_aligned_alloc(64, rounded);
    }
    if (!data) {
        free(buffer);
        nn_set_error(NN_ERR_MEMORY, "cpu: out of memory allocating %zu bytes", bytes);
        return NULL;
    }
    buffer->bytes = bytes;
    buffer->data = data;
    return count_in_use(cpu, buffer);
}

static void cpu_free(nn_backend *self, nn_buffer *buffer) {
    if (!buffer) return;
    if (buffer->borrowed) {
        free(buffer);
        return;
    }
    as_cpu(self)->bytes_in_use -= buffer->bytes;
    if (!cache_put(as_cpu(self), buffer)) release_buffer(buffer);
}

/* Host memory is the CPU's own: the buffer is the caller's memory itself. */
static nn_buffer *cpu_import_host(nn_backend *self, void *host, size_t bytes) {
    if (!host || (uintptr_t)host % self->host_import_alignment != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "cpu: host memory used in place must be %zu-byte aligned, got %p",
                            self->host_import_alignment, host);
    nn_buffer *buffer = calloc(1, sizeof *buffer);
    if (!buffer) return NN_FAIL_NULL(NN_ERR_MEMORY, "cpu: out of host memory");
    *buffer = (nn_buffer){.bytes = bytes, .data = host, .borrowed = true};
    return buffer;
}

static void cpu_memory_stats(nn_backend *self, uint64_t *current, uint64_t *peak, uint64_t *reserved) {
    cpu_backend *cpu = as_cpu(self);
    *current = cpu->bytes_in_use;
    *peak = cpu->peak_in_use;
    *reserved = cpu->bytes_in_use + cpu->cached_bytes;
}

static nn_status check_range(const char *fn, nn_buffer_ref ref, size_t bytes) {
    if (!ref.buffer || ref.offset > ref.buffer->bytes || bytes > ref.buffer->bytes - ref.offset)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: %zu bytes at offset %zu outside the buffer",
                            fn, bytes, ref.offset);
    return NN_OK;
}

static nn_status cpu_write(nn_backend *self, nn_buffer_ref dst, const void *src, size_t bytes) {
    NN_TRY(check_range("write", dst, bytes));
    memcpy((char *)dst.buffer->data + dst.offset, src, bytes);
    return NN_OK;
}

static nn_status cpu_read(nn_backend *self, nn_buffer_ref src, void *dst, size_t bytes) {
    NN_TRY(check_range("read", src, bytes));
    memcpy(dst, (char *)src.buffer->data + src.offset, bytes);
    return NN_OK;
}

static nn_status cpu_fill(nn_backend *self, nn_buffer_ref dst, float value, size_t count) {
    NN_TRY(check_range("fill", dst, count * sizeof(float)));
    float *p = nn_cpu_f32(dst);
    if (value == 0.0f) {
        memset(p, 0, count * sizeof(float));
    } else {
        for (size_t i = 0; i < count; i++) p[i] = value;
    }
    return NN_OK;
}

static nn_status cpu_copy(nn_backend *self, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    NN_TRY(check_range("copy", dst, bytes));
    NN_TRY(check_range("copy", src, bytes));
    memmove((char *)dst.buffer->data + dst.offset, (char *)src.buffer->data + src.offset, bytes);
    return NN_OK;
}

nn_thread_pool *nn_cpu_pool(nn_backend *self) { return as_cpu(self)->pool; }

/* Kernels run synchronously on the calling thread (and the pool). */
static nn_status cpu_sync(nn_backend *self) { return NN_OK; }

static void cpu_destroy(nn_backend *self) {
    cpu_backend *cpu = as_cpu(self);
    cache_flush(cpu);
    nn_thread_pool_free(cpu->pool);
    free(cpu);
}

nn_backend *nn_cpu_backend_new(int threads) {
    /* threads 0: one per usable core, in a pool that drops its workers while
     * they do not pay (a busy host); an explicit count is always used. */
    bool adaptive = threads <= 0;
    if (adaptive) threads = nn_host_usable_cores();
    if (threads > NN_THREAD_POOL_MAX)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "cpu backend: threads must be at most %d, got %d", NN_THREAD_POOL_MAX,
                            threads);
    cpu_backend *cpu = calloc(1, sizeof *cpu);
    if (!cpu) return NN_FAIL_NULL(NN_ERR_MEMORY, "cpu backend: out of host memory");
    cpu->pool = adaptive ? nn_thread_pool_new_adaptive(threads) : nn_thread_pool_new(threads);
    if (!cpu->pool) {
        free(cpu);
        return NN_FAIL_NULL(NN_ERR_BACKEND, "cpu backend: could not start %d worker threads", threads);
    }
    nn_backend *b = &cpu->base;
    b->name = "cpu";
    b->kind = NN_DEVICE_CPU;
    b->threads = threads;
    snprintf(b->description, sizeof b->description, "cpu (%s, %d thread%s%s)", nn_cpu_gemm_library(),
             threads, threads == 1 ? "" : "s", adaptive && threads > 1 ? ", adaptive" : "");
    b->alloc = cpu_alloc;
    b->memory_stats = cpu_memory_stats;
    b->free = cpu_free;
    b->import_host = cpu_import_host;
    b->host_import_alignment = 64;
    b->conv_keeps_columns = nn_cpu_conv_keeps_columns;
    /* No `supports`: here the fused kernels are the unfused ones run one
     * after another (the reference for the other backends), no faster. */
    b->write = cpu_write;
    b->read = cpu_read;
    b->fill = cpu_fill;
    b->copy = cpu_copy;
    b->run = nn_cpu_run;
    b->sync = cpu_sync;
    b->destroy = cpu_destroy;
    return b;
}

static nn_backend *open_cpu(const nn_backend_request *request, bool *no_device) {
    if (no_device) *no_device = false;
    return nn_cpu_backend_new(request->threads);
}

static void list_cpu(void (*add)(void *ctx, const nn_device_info *info), void *ctx) {
    nn_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "cpu");
    snprintf(info.name, sizeof info.name, "host CPU");
    snprintf(info.kind, sizeof info.kind, "cpu");
    snprintf(info.detail, sizeof info.detail, "%d cores, %s", nn_host_online_cores(), nn_cpu_gemm_library());
    info.usable = true;
    add(ctx, &info);
}

const nn_backend_provider nn_cpu_provider = {.name = "cpu", .open = open_cpu, .list_devices = list_cpu};

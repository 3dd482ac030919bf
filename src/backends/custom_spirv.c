/* What a custom kernel's SPIR-V may declare (custom_kernels.h), checked
 * before any device sees it, since a module outside the shared pipeline
 * layout is invalid usage a driver may crash on: one GLCompute entry point
 * "main" of the kernel's workgroup size, storage buffers at set 0,
 * bindings 0-8 only (arguments, and the status buffer), no other resource,
 * and at most 128 bytes of push constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "custom_kernels.h"

enum {
    OP_ENTRY_POINT = 15, OP_EXECUTION_MODE = 16, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23,
    OP_TYPE_ARRAY = 28, OP_TYPE_RUNTIME_ARRAY = 29, OP_TYPE_STRUCT = 30, OP_TYPE_POINTER = 32, OP_CONSTANT = 43,
    OP_VARIABLE = 59, OP_DECORATE = 71, OP_MEMBER_DECORATE = 72,
    MODEL_GL_COMPUTE = 5, MODE_LOCAL_SIZE = 17, MODE_LOCAL_SIZE_ID = 38,
    DECORATION_BLOCK = 2, DECORATION_BUFFER_BLOCK = 3, DECORATION_ARRAY_STRIDE = 6, DECORATION_BINDING = 33,
    DECORATION_SET = 34, DECORATION_OFFSET = 35,
    CLASS_UNIFORM_CONSTANT = 0, CLASS_UNIFORM = 2, CLASS_PUSH_CONSTANT = 9, CLASS_STORAGE_BUFFER = 12,
};

#define MAX_MEMBERS 64

/* What the module says of each id that matters here. */
typedef struct id_facts {
    uint16_t op;           /* the instruction defining it */
    uint32_t a, b;         /* pointer: class, pointee; vector/array: element, count or length id; int/float: width */
    uint32_t value;        /* OpConstant's (low word) */
    int32_t binding, set;  /* -1: none */
    uint32_t stride;
    bool block, buffer_block;
    uint32_t members, member_type[MAX_MEMBERS], member_offset[MAX_MEMBERS];
} id_facts;

typedef struct module {
    const char *kernel;
    id_facts *ids;
    uint32_t bound;
} module;

/* The bytes a type takes (push constants: scalars, vectors, arrays, structs). */
static uint64_t size_of(const module *m, uint32_t id, int depth) {
    if (id >= m->bound || depth > 16) return 0;
    const id_facts *f = &m->ids[id];
    switch (f->op) {
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT: return f->a / 8;
    case OP_TYPE_VECTOR: return f->b * size_of(m, f->a, depth + 1);
    case OP_TYPE_ARRAY: return (uint64_t)(f->stride ? f->stride : size_of(m, f->a, depth + 1)) *
                               (f->b < m->bound ? m->ids[f->b].value : 0);
    case OP_TYPE_STRUCT: {
        uint64_t end = 0;
        for (uint32_t i = 0; i < f->members && i < MAX_MEMBERS; i++) {
            uint64_t e = f->member_offset[i] + size_of(m, f->member_type[i], depth + 1);
            if (e > end) end = e;
        }
        return end;
    }
    default: return 0;
    }
}

/* One instruction's facts into m (words w[0..n-1]); `local` gets LocalSize. */
static void note(module *m, const uint32_t *w, uint32_t n, uint32_t local[3], int *entry_points, bool *local_id) {
    const uint32_t op = w[0] & 0xffffu;
    id_facts *ids = m->ids;
#define ID_OK(i) ((i) < m->bound)
    switch (op) {
    case OP_ENTRY_POINT:
        if (n >= 4 && w[1] == MODEL_GL_COMPUTE && strncmp((const char *)&w[3], "main", 5) == 0) (*entry_points)++;
        else *entry_points += 100; /* another model or name: refused */
        break;
    case OP_EXECUTION_MODE:
        if (n >= 6 && w[2] == MODE_LOCAL_SIZE) local[0] = w[3], local[1] = w[4], local[2] = w[5];
        if (n >= 3 && w[2] == MODE_LOCAL_SIZE_ID) *local_id = true;
        break;
    case OP_TYPE_INT:
    case OP_TYPE_FLOAT:
        if (n >= 3 && ID_OK(w[1])) ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2];
        break;
    case OP_TYPE_VECTOR:
    case OP_TYPE_ARRAY:
        if (n >= 4 && ID_OK(w[1])) ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2], ids[w[1]].b = w[3];
        break;
    case OP_TYPE_RUNTIME_ARRAY:
        if (n >= 3 && ID_OK(w[1])) ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2];
        break;
    case OP_TYPE_STRUCT:
        if (n >= 2 && ID_OK(w[1])) {
            ids[w[1]].op = (uint16_t)op;
            ids[w[1]].members = n - 2 < MAX_MEMBERS ? n - 2 : MAX_MEMBERS;
            for (uint32_t i = 0; i < ids[w[1]].members; i++) ids[w[1]].member_type[i] = w[2 + i];
        }
        break;
    case OP_TYPE_POINTER:
        if (n >= 4 && ID_OK(w[1])) ids[w[1]].op = (uint16_t)op, ids[w[1]].a = w[2], ids[w[1]].b = w[3];
        break;
    case OP_CONSTANT:
        if (n >= 4 && ID_OK(w[2])) ids[w[2]].op = (uint16_t)op, ids[w[2]].value = w[3];
        break;
    case OP_VARIABLE:
        if (n >= 4 && ID_OK(w[2])) ids[w[2]].op = (uint16_t)op, ids[w[2]].a = w[3], ids[w[2]].b = w[1];
        break;
    case OP_DECORATE:
        if (n >= 3 && ID_OK(w[1])) {
            id_facts *f = &ids[w[1]];
            if (w[2] == DECORATION_BINDING && n >= 4) f->binding = (int32_t)w[3];
            if (w[2] == DECORATION_SET && n >= 4) f->set = (int32_t)w[3];
            if (w[2] == DECORATION_ARRAY_STRIDE && n >= 4) f->stride = w[3];
            if (w[2] == DECORATION_BLOCK) f->block = true;
            if (w[2] == DECORATION_BUFFER_BLOCK) f->buffer_block = true;
        }
        break;
    case OP_MEMBER_DECORATE:
        if (n >= 5 && ID_OK(w[1]) && w[3] == DECORATION_OFFSET && w[2] < MAX_MEMBERS) ids[w[1]].member_offset[w[2]] = w[4];
        break;
    default: break;
    }
#undef ID_OK
}

/* A resource variable (id v) is a storage buffer at set 0, binding 0-8. */
static nn_status check_variable(const module *m, uint32_t v) {
    const id_facts *var = &m->ids[v];
    const uint32_t cls = var->a;
    if (cls != CLASS_UNIFORM && cls != CLASS_STORAGE_BUFFER && cls != CLASS_UNIFORM_CONSTANT) return NN_OK;
    const uint32_t pointee = var->b < m->bound && m->ids[var->b].op == OP_TYPE_POINTER ? m->ids[var->b].b : 0;
    const id_facts *block = pointee < m->bound ? &m->ids[pointee] : NULL;
    const bool storage = block && ((cls == CLASS_UNIFORM && block->buffer_block) ||
                                   (cls == CLASS_STORAGE_BUFFER && block->block));
    if (!storage)
        return nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the shader declares a resource that is not a storage "
                            "buffer (a uniform buffer, image or sampler; binding %d): kernels read and write storage "
                            "buffers only (NN_LOAD, NN_STORE)", m->kernel, (int)var->binding);
    if (var->set != 0 || var->binding < 0 || var->binding > 8)
        return nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the shader binds a buffer at set %d, binding %d; kernels "
                            "bind set 0, bindings 0-7 (their buffers) and 8 (the status buffer)", m->kernel,
                            (int)var->set, (int)var->binding);
    return NN_OK;
}

nn_status nn_custom_check_spirv(const char *kernel, const uint32_t *code, size_t bytes, const uint32_t local_size[3]) {
    const uint32_t kMagic = 0x07230203u;
    if (bytes < 20 || bytes % 4 != 0 || code[0] != kMagic)
        return nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: spirv is not a SPIR-V module (%zu bytes, a multiple "
                            "of 4 from 20, starting with the magic word 0x07230203)", kernel, bytes);
    const size_t words = bytes / 4;
    module m = {.kernel = kernel, .bound = code[3]};
    if (m.bound == 0 || m.bound > (1u << 22))
        return nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the SPIR-V's id bound %u is not a module's", kernel,
                            m.bound);
    m.ids = calloc(m.bound, sizeof *m.ids);
    if (!m.ids) return nn_set_error(NN_ERR_MEMORY, "custom kernel %s: out of memory checking its SPIR-V", kernel);
    for (uint32_t i = 0; i < m.bound; i++) m.ids[i].binding = m.ids[i].set = -1;
    uint32_t local[3] = {0, 0, 0};
    int entry_points = 0;
    bool local_id = false;
    nn_status st = NN_OK;
    for (size_t at = 5; at < words && st == NN_OK;) {
        const uint32_t n = code[at] >> 16;
        if (n == 0 || at + n > words)
            st = nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the SPIR-V is cut short at word %zu", kernel, at);
        else note(&m, &code[at], n, local, &entry_points, &local_id);
        at += n ? n : 1;
    }
    if (st == NN_OK && entry_points != 1)
        st = nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the SPIR-V must have one entry point, a compute shader "
                          "named main", kernel);
    if (st == NN_OK && (local_id || memcmp(local, local_size, sizeof local) != 0))
        st = nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the shader's workgroup is %u x %u x %u, the kernel's "
                          "local_size %u x %u x %u (set LocalSize to it)", kernel, local[0], local[1], local[2],
                          local_size[0], local_size[1], local_size[2]);
    for (uint32_t v = 0; v < m.bound && st == NN_OK; v++) {
        if (m.ids[v].op != OP_VARIABLE) continue;
        if (m.ids[v].a == CLASS_PUSH_CONSTANT) {
            const uint32_t pointee = m.ids[v].b < m.bound ? m.ids[m.ids[v].b].b : 0;
            const uint64_t size = size_of(&m, pointee, 0);
            if (size > 128)
                st = nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the shader's push constants take %llu bytes; "
                                  "kernels have 128 (the prelude's NN_Push)", kernel, (unsigned long long)size);
        } else st = check_variable(&m, v);
    }
    free(m.ids);
    return st;
}

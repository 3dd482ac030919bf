/* A module tree's listings (parameters, buffers, the state_dict) under
 * dotted names, and lookup by dotted path (include/nn_module.h). Listings
 * are built on first use and rebuilt after any module changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

static uint64_t changes = 1;

void nn_module_changed(void) { changes++; }

static bool listed(const nn_named_tensors *list, const nn_tensor *t) {
    for (int i = 0; i < list->count; i++)
        if (list->tensors[i] == t) return true;
    return false;
}

nn_status nn_named_append(nn_named_tensors *list, const char *prefix, const char *name, nn_tensor *t) {
    if (list->count == list->capacity) {
        int capacity = list->capacity ? list->capacity * 2 : 8;
        nn_tensor **tensors = realloc(list->tensors, (size_t)capacity * sizeof *tensors);
        if (tensors) list->tensors = tensors;
        char **names = realloc(list->names, (size_t)capacity * sizeof *names);
        if (names) list->names = names;
        if (!tensors || !names) return nn_set_error(NN_ERR_MEMORY, "module: out of host memory");
        list->capacity = capacity;
    }
    size_t len = strlen(prefix) + strlen(name) + 1;
    char *full = malloc(len);
    if (!full) return nn_set_error(NN_ERR_MEMORY, "module: out of host memory");
    snprintf(full, len, "%s%s", prefix, name);
    list->tensors[list->count] = t;
    list->names[list->count++] = full;
    return NN_OK;
}

static bool add(nn_named_tensors *list, const char *prefix, const char *name, nn_tensor *t) {
    return nn_named_append(list, prefix, name, t) == NN_OK;
}

/* Module by module (the module, then its children in order): parameters
 * into params (each tensor once) and state, buffers into buffers and state. */
static bool walk(const nn_module *m, const char *prefix, nn_named_tensors *params, nn_named_tensors *buffers,
                 nn_named_tensors *state) {
    bool ok = true;
    for (int i = 0; ok && i < m->params.count; i++) {
        nn_tensor *t = m->params.tensors[i];
        ok = add(state, prefix, m->params.names[i], t) && (listed(params, t) || add(params, prefix, m->params.names[i], t));
    }
    for (int i = 0; ok && i < m->buffers.count; i++)
        ok = add(state, prefix, m->buffers.names[i], m->buffers.tensors[i]) &&
             add(buffers, prefix, m->buffers.names[i], m->buffers.tensors[i]);
    for (int i = 0; ok && i < m->child_count; i++) {
        size_t len = strlen(prefix) + strlen(m->child_names[i]) + 2;
        char *child_prefix = malloc(len);
        ok = child_prefix != NULL;
        if (ok) {
            snprintf(child_prefix, len, "%s%s.", prefix, m->child_names[i]);
            ok = walk(m->children[i], child_prefix, params, buffers, state);
        }
        free(child_prefix);
    }
    return ok;
}

/* The listings, current; false (error set) when out of memory. */
static bool ensure_lists(const nn_module *cm) {
    nn_module *m = (nn_module *)cm; /* the listings are a cache */
    if (m->listed_at == changes) return true;
    nn_module_lists_free(m);
    if (!walk(m, "", &m->all_params, &m->all_buffers, &m->all_state)) {
        nn_module_lists_free(m);
        nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for its listings", m->kind);
        return false;
    }
    m->listed_at = changes;
    return true;
}

enum { PARAMS, BUFFERS, STATE };

static nn_named_tensors *list_of(const nn_module *m, int which) {
    if (!m || !ensure_lists(m)) return NULL;
    nn_module *w = (nn_module *)m;
    return which == PARAMS ? &w->all_params : which == BUFFERS ? &w->all_buffers : &w->all_state;
}

static int count_of(const nn_module *m, int which) {
    nn_named_tensors *l = list_of(m, which);
    return l ? l->count : 0;
}

static nn_tensor *tensor_of(const nn_module *m, int which, int i) {
    nn_named_tensors *l = list_of(m, which);
    return l && i >= 0 && i < l->count ? l->tensors[i] : NULL;
}

static const char *name_of(const nn_module *m, int which, int i) {
    nn_named_tensors *l = list_of(m, which);
    return l && i >= 0 && i < l->count ? l->names[i] : NULL;
}

int nn_module_param_count(const nn_module *m) { return count_of(m, PARAMS); }
nn_tensor *nn_module_param(const nn_module *m, int i) { return tensor_of(m, PARAMS, i); }
const char *nn_module_param_name(const nn_module *m, int i) { return name_of(m, PARAMS, i); }
int nn_module_buffer_count(const nn_module *m) { return count_of(m, BUFFERS); }
nn_tensor *nn_module_buffer(const nn_module *m, int i) { return tensor_of(m, BUFFERS, i); }
const char *nn_module_buffer_name(const nn_module *m, int i) { return name_of(m, BUFFERS, i); }
int nn_module_state_count(const nn_module *m) { return count_of(m, STATE); }
nn_tensor *nn_module_state(const nn_module *m, int i) { return tensor_of(m, STATE, i); }
const char *nn_module_state_name(const nn_module *m, int i) { return name_of(m, STATE, i); }

/* ---- lookup by dotted path ---- */

/* The module that holds the last component of `path` (walking the
 * components before it), with *last pointing at that component. */
static const nn_module *holder(const nn_module *m, const char *path, const char **last) {
    if (!m || !path) return NULL;
    const char *dot;
    while (m && (dot = strchr(path, '.'))) {
        const nn_module *next = NULL;
        size_t len = (size_t)(dot - path);
        for (int i = 0; i < m->child_count && !next; i++)
            if (strlen(m->child_names[i]) == len && strncmp(m->child_names[i], path, len) == 0) next = m->children[i];
        m = next;
        path = dot + 1;
    }
    *last = path;
    return m;
}

static nn_tensor *named(const nn_named_tensors *list, const char *name) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->names[i], name) == 0) return list->tensors[i];
    return NULL;
}

nn_module *nn_module_child(const nn_module *m, const char *path) {
    const char *last;
    const nn_module *h = holder(m, path, &last);
    for (int i = 0; h && i < h->child_count; i++)
        if (strcmp(h->child_names[i], last) == 0) return h->children[i];
    return NULL;
}

nn_tensor *nn_module_get_parameter(const nn_module *m, const char *path) {
    const char *last;
    const nn_module *h = holder(m, path, &last);
    return h ? named(&h->params, last) : NULL;
}

nn_tensor *nn_module_get_buffer(const nn_module *m, const char *path) {
    const char *last;
    const nn_module *h = holder(m, path, &last);
    return h ? named(&h->buffers, last) : NULL;
}

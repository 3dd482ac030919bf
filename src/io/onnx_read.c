#include "onnx_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "file_read.h"
#include "protobuf.h"
#include "protobuf_read.h"

/* At most this many elements in one tensor, and nodes in a graph: far above
 * any model this engine trains, below sizes whose arithmetic overflows. */
#define MAX_ELEMENTS (INT64_C(1) << 32)
#define MAX_NODES 1000000

/* One parse: where to say what went wrong. */
typedef struct parse {
    const char *who;
    char why[320];
} parse;

static bool fail(parse *ps, const char *fmt, const char *detail) {
    if (!ps->why[0]) snprintf(ps->why, sizeof ps->why, fmt, detail ? detail : "");
    return false;
}

/* r failed: say so once, naming the message being read. */
static bool wire_failed(parse *ps, const nn_pb_reader *r, const char *message) {
    char buf[200];
    snprintf(buf, sizeof buf, "%s: %s", message, r->failed);
    return fail(ps, "%s", buf);
}

static bool is_float_type(int t) { return t == ONNX_FLOAT || t == ONNX_DOUBLE || t == ONNX_FLOAT16; }
static bool is_int_type(int t) {
    return t == ONNX_INT64 || t == ONNX_INT32 || t == ONNX_INT16 || t == ONNX_INT8 || t == ONNX_UINT8 ||
           t == ONNX_UINT16 || t == ONNX_BOOL;
}
static int type_bytes(int t) {
    switch (t) {
    case ONNX_DOUBLE: case ONNX_INT64: return 8;
    case ONNX_FLOAT: case ONNX_INT32: return 4;
    case ONNX_FLOAT16: case ONNX_INT16: case ONNX_UINT16: return 2;
    default: return 1;
    }
}

static float half_to_float(uint32_t h) {
    const uint32_t sign = h >> 15 & 1, exponent = h >> 10 & 31, mantissa = h & 1023;
    float v = exponent == 0    ? ldexpf((float)mantissa, -24)
              : exponent == 31 ? (mantissa ? NAN : INFINITY)
                               : ldexpf((float)(mantissa | 1024), (int)exponent - 25);
    return sign ? -v : v;
}

/* Element i of raw little-endian data of type t. */
static uint64_t raw_bits(const uint8_t *raw, int64_t i, int bytes) {
    uint64_t v = 0;
    for (int b = 0; b < bytes; b++) v |= (uint64_t)raw[i * bytes + b] << (8 * b);
    return v;
}

static void decode_raw(onnx_tensor *t, const uint8_t *raw) {
    const int bytes = type_bytes(t->data_type);
    for (int64_t i = 0; i < t->numel; i++) {
        const uint64_t v = raw_bits(raw, i, bytes);
        switch (t->data_type) {
        case ONNX_FLOAT: { uint32_t u = (uint32_t)v; memcpy(&t->floats[i], &u, 4); break; }
        case ONNX_DOUBLE: { double d; memcpy(&d, &v, 8); t->floats[i] = (float)d; break; }
        case ONNX_FLOAT16: t->floats[i] = half_to_float((uint32_t)v); break;
        case ONNX_INT64: t->ints[i] = (int64_t)v; break;
        case ONNX_INT32: t->ints[i] = (int32_t)(uint32_t)v; break;
        case ONNX_INT16: t->ints[i] = (int16_t)(uint16_t)v; break;
        case ONNX_INT8: t->ints[i] = (int8_t)(uint8_t)v; break;
        default: t->ints[i] = (int64_t)v; break; /* UINT8, UINT16, BOOL */
        }
    }
}

static bool read_tensor(parse *ps, nn_pb_reader r, onnx_tensor *t) {
    int64_t *dims = NULL, n_dims = 0, *ints = NULL, n_ints = 0;
    float *floats = NULL;
    int64_t n_floats = 0;
    double *doubles = NULL;
    int64_t n_doubles = 0;
    const uint8_t *raw = NULL;
    size_t raw_size = 0;
    bool has_raw = false, ok = true;
    nn_pb_field f;
    while (ok && nn_pb_next(&r, &f)) {
        switch (f.field) {
        case 1: ok = nn_pb_append_varints(&r, &f, &dims, &n_dims); break;
        case 2: t->data_type = (int)f.number; break;
        case 3: ok = fail(ps, "tensor segments are not supported%s", NULL); break;
        case 4: ok = nn_pb_append_floats(&r, &f, &floats, &n_floats); break;
        case 5: case 7: ok = nn_pb_append_varints(&r, &f, &ints, &n_ints); break;
        case 8:
            free(t->name);
            ok = (t->name = nn_pb_strdup(&f)) != NULL || fail(ps, "out of host memory%s", NULL);
            break;
        case 9: raw = f.data, raw_size = f.size, has_raw = true; break;
        case 10: { /* double_data: packed fixed64 (or one value per field) */
            const int64_t more = f.wire == NN_PB_FIXED64 ? 1 : f.wire == NN_PB_BYTES && f.size % 8 == 0 ? (int64_t)(f.size / 8) : -1;
            double *bigger = more >= 0 ? realloc(doubles, (size_t)(n_doubles + more) * sizeof *doubles + 1) : NULL;
            if (!bigger) {
                ok = fail(ps, "%s", more < 0 ? "malformed double_data" : "out of host memory");
                break;
            }
            doubles = bigger;
            for (int64_t i = 0; i < more; i++) {
                const uint64_t bits = f.wire == NN_PB_FIXED64 ? f.number : raw_bits(f.data, i, 8);
                memcpy(&doubles[n_doubles++], &bits, 8);
            }
            break;
        }
        case 13: case 14:
            if (f.field == 13 || f.number == 1) ok = fail(ps, "tensor '%s' keeps its data in an external file, which is not supported", t->name);
            break;
        default: break; /* doc_string, string_data, uint64_data and newer fields: not used */
        }
    }
    if (ok && r.failed) ok = wire_failed(ps, &r, "a tensor");
    if (ok && n_dims > NN_MAX_DIMS) ok = fail(ps, "tensor '%s' has more than 6 dimensions", t->name);
    t->ndim = (int)n_dims;
    t->numel = 1;
    for (int d = 0; ok && d < t->ndim; d++) {
        t->dims[d] = dims[d];
        if (dims[d] < 0 || (dims[d] > 0 && t->numel > MAX_ELEMENTS / dims[d]))
            ok = fail(ps, "tensor '%s' has a negative or too large dimension", t->name);
        else t->numel *= dims[d];
    }
    if (ok && !is_float_type(t->data_type) && !is_int_type(t->data_type)) {
        char buf[96];
        snprintf(buf, sizeof buf, "'%s' of data type %d", t->name ? t->name : "", t->data_type);
        ok = fail(ps, "tensor %s: only float, float16, double, integer and bool tensors are supported", buf);
    }
    if (ok) {
        const int64_t given = has_raw ? (int64_t)(raw_size / (size_t)type_bytes(t->data_type))
                              : t->data_type == ONNX_FLOAT ? n_floats
                              : t->data_type == ONNX_DOUBLE ? n_doubles
                                                            : n_ints; /* int32_data holds float16 bits too */
        if (given != t->numel || (has_raw && raw_size % (size_t)type_bytes(t->data_type))) {
            char buf[160];
            snprintf(buf, sizeof buf, "'%s' holds %lld values where its dimensions make %lld", t->name ? t->name : "",
                     (long long)given, (long long)t->numel);
            ok = fail(ps, "tensor %s", buf);
        }
    }
    if (ok) { /* only now: the sizes are those of data the file holds */
        t->floats = is_float_type(t->data_type) ? malloc((size_t)t->numel * sizeof *t->floats + 1) : NULL;
        t->ints = is_int_type(t->data_type) ? malloc((size_t)t->numel * sizeof *t->ints + 1) : NULL;
        if (!t->floats && !t->ints) ok = fail(ps, "out of host memory for tensor '%s'", t->name);
    }
    if (ok && t->numel) { /* an empty tensor's arrays may be NULL */
        if (has_raw) decode_raw(t, raw);
        else if (t->data_type == ONNX_FLOAT) memcpy(t->floats, floats, (size_t)t->numel * sizeof *floats);
        else if (t->data_type == ONNX_DOUBLE) for (int64_t i = 0; i < t->numel; i++) t->floats[i] = (float)doubles[i];
        else if (t->data_type == ONNX_FLOAT16) for (int64_t i = 0; i < t->numel; i++) t->floats[i] = half_to_float((uint32_t)ints[i]);
        else memcpy(t->ints, ints, (size_t)t->numel * sizeof *ints);
    }
    free(dims), free(ints), free(floats), free(doubles);
    return ok;
}

static void tensor_free(onnx_tensor *t) {
    free(t->name), free(t->floats), free(t->ints);
    *t = (onnx_tensor){0};
}

static bool read_attr(parse *ps, nn_pb_reader r, onnx_attr *a) {
    nn_pb_field f;
    bool ok = true;
    while (ok && nn_pb_next(&r, &f)) {
        switch (f.field) {
        case 1: free(a->name), ok = (a->name = nn_pb_strdup(&f)) != NULL; break;
        case 2: { uint32_t u = (uint32_t)f.number; memcpy(&a->f, &u, 4); break; }
        case 3: a->i = (int64_t)f.number; break;
        case 4: free(a->s), ok = (a->s = nn_pb_strdup(&f)) != NULL; break;
        case 5: /* a repeated singular field: the last one counts */
            if (a->t) tensor_free(a->t);
            else ok = (a->t = calloc(1, sizeof *a->t)) != NULL;
            ok = ok && read_tensor(ps, nn_pb_sub(&f), a->t);
            break;
        case 7: ok = nn_pb_append_floats(&r, &f, &a->floats, &a->n_floats); break;
        case 8: ok = nn_pb_append_varints(&r, &f, &a->ints, &a->n_ints); break;
        case 20: a->type = (int)f.number; break;
        default: break; /* g, graphs, strings, tensors: the type says which; refused by the importer */
        }
        if (!ok && !ps->why[0] && !r.failed) fail(ps, "out of host memory%s", NULL);
    }
    if (ok && r.failed) ok = wire_failed(ps, &r, "an attribute");
    if (ok && !a->name) ok = fail(ps, "an attribute without a name%s", NULL);
    return ok;
}

static bool push_string(parse *ps, char ***list, int *count, const nn_pb_field *f) {
    char **bigger = realloc(*list, (size_t)(*count + 1) * sizeof **list);
    if (!bigger) return fail(ps, "out of host memory%s", NULL);
    *list = bigger;
    if (!(bigger[*count] = nn_pb_strdup(f))) return fail(ps, "out of host memory%s", NULL);
    (*count)++;
    return true;
}

static bool read_node(parse *ps, nn_pb_reader r, onnx_node *n) {
    nn_pb_field f;
    bool ok = true;
    while (ok && nn_pb_next(&r, &f)) {
        switch (f.field) {
        case 1: ok = push_string(ps, &n->inputs, &n->n_inputs, &f); break;
        case 2: ok = push_string(ps, &n->outputs, &n->n_outputs, &f); break;
        case 3: free(n->name), ok = (n->name = nn_pb_strdup(&f)) != NULL || fail(ps, "out of host memory%s", NULL); break;
        case 4: free(n->op_type), ok = (n->op_type = nn_pb_strdup(&f)) != NULL || fail(ps, "out of host memory%s", NULL); break;
        case 7: free(n->domain), ok = (n->domain = nn_pb_strdup(&f)) != NULL || fail(ps, "out of host memory%s", NULL); break;
        case 5: {
            onnx_attr *bigger = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *bigger);
            if (!bigger) {
                ok = fail(ps, "out of host memory%s", NULL);
                break;
            }
            n->attrs = bigger;
            bigger[n->n_attrs] = (onnx_attr){0};
            ok = read_attr(ps, nn_pb_sub(&f), &bigger[n->n_attrs]);
            n->n_attrs++;
            break;
        }
        default: break;
        }
    }
    if (ok && r.failed) ok = wire_failed(ps, &r, "a node");
    if (ok && (!n->op_type || !n->op_type[0])) ok = fail(ps, "a node without an op_type%s", NULL);
    if (ok && !n->name && !(n->name = strdup(""))) ok = fail(ps, "out of host memory%s", NULL);
    if (ok && !n->domain && !(n->domain = strdup(""))) ok = fail(ps, "out of host memory%s", NULL);
    return ok;
}

static void node_free(onnx_node *n) {
    for (int i = 0; i < n->n_inputs; i++) free(n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) free(n->outputs[i]);
    for (int i = 0; i < n->n_attrs; i++) {
        onnx_attr *a = &n->attrs[i];
        free(a->name), free(a->s), free(a->ints), free(a->floats);
        if (a->t) tensor_free(a->t);
        free(a->t);
    }
    free(n->inputs), free(n->outputs), free(n->attrs), free(n->name), free(n->op_type), free(n->domain);
}

/* ValueInfoProto: name 1, type 2 (TypeProto.tensor_type 1: elem_type 1,
 * shape 2 with dims 1 of dim_value 1 or dim_param 2). */
static bool read_value_info(parse *ps, nn_pb_reader r, onnx_value_info *v) {
    nn_pb_field f, g, h, d, e;
    v->ndim = -1;
    while (nn_pb_next(&r, &f)) {
        if (f.field == 1 && f.wire == NN_PB_BYTES) {
            free(v->name);
            if (!(v->name = nn_pb_strdup(&f))) return fail(ps, "out of host memory%s", NULL);
        } else if (f.field == 2 && f.wire == NN_PB_BYTES) {
            nn_pb_reader type = nn_pb_sub(&f);
            while (nn_pb_next(&type, &g)) {
                if (g.field != 1 || g.wire != NN_PB_BYTES) continue; /* sequence, map, optional types: elem_type stays 0 */
                nn_pb_reader tensor = nn_pb_sub(&g);
                while (nn_pb_next(&tensor, &h)) {
                    if (h.field == 1) v->elem_type = (int)h.number;
                    if (h.field != 2 || h.wire != NN_PB_BYTES) continue;
                    v->ndim = 0;
                    nn_pb_reader shape = nn_pb_sub(&h);
                    while (nn_pb_next(&shape, &d)) {
                        if (d.field != 1 || d.wire != NN_PB_BYTES) continue;
                        if (v->ndim == NN_MAX_DIMS) return fail(ps, "graph value '%s' has more than 6 dimensions", v->name);
                        int64_t size = -1;
                        nn_pb_reader dim = nn_pb_sub(&d);
                        while (nn_pb_next(&dim, &e))
                            if (e.field == 1 && e.wire == NN_PB_VARINT) size = (int64_t)e.number;
                        if (dim.failed) return wire_failed(ps, &dim, "a dimension");
                        v->dims[v->ndim++] = size < 0 ? -1 : size;
                    }
                    if (shape.failed) return wire_failed(ps, &shape, "a shape");
                }
                if (tensor.failed) return wire_failed(ps, &tensor, "a tensor type");
            }
            if (type.failed) return wire_failed(ps, &type, "a type");
        }
    }
    if (r.failed) return wire_failed(ps, &r, "a graph input or output");
    if (!v->name) return fail(ps, "a graph input or output without a name%s", NULL);
    return true;
}

/* Appends one element of `size` bytes, zeroed, to *list; its address. */
static void *push(parse *ps, void **list, int *count, size_t size, int limit) {
    if (*count >= limit) return fail(ps, "more than %s entries in one list of the graph", "a million"), NULL;
    char *bigger = realloc(*list, (size_t)(*count + 1) * size);
    if (!bigger) return fail(ps, "out of host memory%s", NULL), NULL;
    *list = bigger;
    memset(bigger + (size_t)*count * size, 0, size);
    return bigger + (size_t)(*count)++ * size;
}

static bool read_graph(parse *ps, nn_pb_reader r, onnx_model *m) {
    nn_pb_field f;
    while (nn_pb_next(&r, &f)) {
        if (f.wire != NN_PB_BYTES) continue;
        bool ok = true;
        switch (f.field) {
        case 1: {
            onnx_node *n = push(ps, (void **)&m->nodes, &m->n_nodes, sizeof *n, MAX_NODES);
            ok = n && read_node(ps, nn_pb_sub(&f), n);
            break;
        }
        case 5: {
            onnx_tensor *t = push(ps, (void **)&m->initializers, &m->n_initializers, sizeof *t, MAX_NODES);
            ok = t && read_tensor(ps, nn_pb_sub(&f), t);
            if (ok && !t->name) ok = fail(ps, "an initializer without a name%s", NULL);
            break;
        }
        case 11: case 12: {
            onnx_value_info *v = f.field == 11 ? push(ps, (void **)&m->inputs, &m->n_inputs, sizeof *v, MAX_NODES)
                                               : push(ps, (void **)&m->outputs, &m->n_outputs, sizeof *v, MAX_NODES);
            ok = v && read_value_info(ps, nn_pb_sub(&f), v);
            break;
        }
        case 15: ok = fail(ps, "sparse initializers are not supported%s", NULL); break;
        default: break; /* name, doc_string, value_info, quantization annotations */
        }
        if (!ok) return false;
    }
    if (r.failed) return wire_failed(ps, &r, "the graph");
    return true;
}

static bool read_model(parse *ps, nn_pb_reader r, onnx_model *m) {
    nn_pb_field f;
    bool has_graph = false, has_opset = false;
    while (nn_pb_next(&r, &f)) {
        if (f.field == 1 && f.wire == NN_PB_VARINT) {
            m->ir_version = (int64_t)f.number;
        } else if (f.field == 8 && f.wire == NN_PB_BYTES) { /* OperatorSetIdProto: domain 1, version 2 */
            nn_pb_reader set = nn_pb_sub(&f);
            nn_pb_field g;
            bool default_domain = true;
            int64_t version = 0;
            while (nn_pb_next(&set, &g)) {
                if (g.field == 1 && g.wire == NN_PB_BYTES)
                    default_domain = g.size == 0 || (g.size == 7 && memcmp(g.data, "ai.onnx", 7) == 0);
                if (g.field == 2 && g.wire == NN_PB_VARINT) version = (int64_t)g.number;
            }
            if (set.failed) return wire_failed(ps, &set, "an opset import");
            if (default_domain) m->opset = version, has_opset = true;
        } else if (f.field == 7 && f.wire == NN_PB_BYTES) {
            if (has_graph) return fail(ps, "two graphs in one model%s", NULL);
            has_graph = true;
            if (!read_graph(ps, nn_pb_sub(&f), m)) return false;
        }
    }
    if (r.failed) return wire_failed(ps, &r, "the model");
    if (!has_graph) return fail(ps, "no graph (not an ONNX model file?)%s", NULL);
    if (!has_opset) return fail(ps, "no opset import for the default domain%s", NULL);
    return true;
}

nn_status nn_onnx_parse(const void *data, size_t size, const char *who, onnx_model *m) {
    *m = (onnx_model){0};
    parse ps = {.who = who};
    if (read_model(&ps, nn_pb_reader_of(data, size), m)) return NN_OK;
    nn_onnx_model_free(m);
    return nn_set_error(NN_ERR_IO, "%s: %s", who, ps.why[0] ? ps.why : "malformed");
}

nn_status nn_onnx_read(const char *path, onnx_model *m) {
    *m = (onnx_model){0};
    if (!path) return nn_set_error(NN_ERR_ARGUMENT, "nn_onnx_import: path is NULL");
    char why[256];
    int64_t size;
    FILE *f = nn_open_regular_file(path, &size, why, sizeof why);
    if (!f) return nn_set_error(NN_ERR_IO, "nn_onnx_import: '%s' %s", path, why);
    if (size > INT32_MAX) { /* protobuf's own limit on a message */
        fclose(f);
        return nn_set_error(NN_ERR_IO, "nn_onnx_import: '%s' is larger than 2 GiB, which protobuf cannot hold", path);
    }
    uint8_t *bytes = malloc((size_t)size + 1);
    const bool read = bytes && fread(bytes, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!read) {
        free(bytes);
        return nn_set_error(bytes ? NN_ERR_IO : NN_ERR_MEMORY, "nn_onnx_import: '%s': %s", path,
                            bytes ? "could not be read whole" : "out of host memory");
    }
    char who[512];
    snprintf(who, sizeof who, "nn_onnx_import: '%s'", path);
    nn_status st = nn_onnx_parse(bytes, (size_t)size, who, m);
    free(bytes);
    return st;
}

void nn_onnx_model_free(onnx_model *m) {
    for (int i = 0; i < m->n_nodes; i++) node_free(&m->nodes[i]);
    for (int i = 0; i < m->n_initializers; i++) tensor_free(&m->initializers[i]);
    for (int i = 0; i < m->n_inputs; i++) free(m->inputs[i].name);
    for (int i = 0; i < m->n_outputs; i++) free(m->outputs[i].name);
    free(m->nodes), free(m->initializers), free(m->inputs), free(m->outputs);
    *m = (onnx_model){0};
}

const onnx_attr *nn_onnx_attr(const onnx_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

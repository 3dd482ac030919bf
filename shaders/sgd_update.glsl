// The body of sgd_update.comp and sgd_update_device_lr.comp (DEVICE_LR).
// The SGD update in the order of nn_optim.h (as the CPU kernel). With
// DEVICE_LR (sgd_update_device_lr.comp) the learning rate is read from
// binding 3 element 0 and the squared norm from element 1, so a recorded
// step replays with whatever rate was last written there.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_SGD_UPDATE)
layout(std430, binding = 0) buffer P { float param[]; };
layout(std430, binding = 1) readonly buffer G { float grad[]; };
layout(std430, binding = 2) buffer V { float velocity[]; };
layout(std430, binding = 3) readonly buffer N { float norm_sq[]; };
#define SKIP_BINDING 4
#include "update_skip.glsl"

void main() {
    if (update_skipped()) return;
    float scale = 1.0;
#if DEVICE_LR
    float lr = norm_sq[p.off[3]];
    uint norm_at = p.off[3] + 1u;
#else
    float lr = p.lr;
    uint norm_at = p.off[3];
#endif
    if (p.max_grad_norm > 0.0 && p.has_norm != 0) {
        float factor = p.max_grad_norm / (sqrt(norm_sq[norm_at]) + 1e-6);
        if (factor < 1.0) scale = factor;
    }
    GRID_STRIDE_LOOP(i, p.n) {
        float g = grad[p.off[1] + i] * scale;
        if (p.clip_value > 0.0) g = min(max(g, -p.clip_value), p.clip_value);
        float w = param[p.off[0] + i];
        g += p.weight_decay * w;
        if (p.momentum != 0.0 && p.has_velocity != 0) {
            float v = p.momentum * velocity[p.off[2] + i] + g;
            velocity[p.off[2] + i] = v;
            g = p.nesterov != 0 ? g + p.momentum * v : v;
        }
        param[p.off[0] + i] = w - lr * g;
    }
}

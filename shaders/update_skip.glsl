// The optional skip argument of the optimizers' updates and COUNTER_ADD
// (kernels.h: skipped updates) at binding SKIP_BINDING: the host sets
// p.has_skip when it is given; update_skipped() is then skip[0] != 0
// (dynamic loss scaling's overflow flag), read once per invocation.
layout(std430, binding = SKIP_BINDING) readonly buffer Skip { float skip_flag[]; };

bool update_skipped() { return p.has_skip != 0 && skip_flag[p.off[SKIP_BINDING]] != 0.0; }

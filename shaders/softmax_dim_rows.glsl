// Softmax along contiguous rows (nn_softmax_dim_params with inner 1) a
// workgroup per row, its invocations across the row, so wide rows (a
// vocabulary's logits) are read coalesced and by many invocations at once;
// reductions by a fixed tree, so results depend on the sizes alone. Rows
// are dealt to workgroups over x and y (more rows than one dimension holds).
layout(local_size_x = 256) in;
const uint THREADS = 256u;
PUSH_CONSTANTS(PUSH_SOFTMAX_DIM)

shared float part[THREADS];

#include "workgroup_tree.glsl"

uint first_row() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint row_step() { return gl_NumWorkGroups.x * gl_NumWorkGroups.y; }

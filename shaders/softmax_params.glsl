// nn_softmax_params as push constants (after the buffer offsets).
layout(push_constant) uniform Params { PC_OFFSETS int rows, cols; int accumulate; } p;

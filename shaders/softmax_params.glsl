// nn_softmax_params as push constants (after the buffer offsets).
PUSH_CONSTANTS(PUSH_SOFTMAX)

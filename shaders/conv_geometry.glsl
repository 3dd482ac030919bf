// nn_conv_geometry as push constants (after the buffer offsets).
PUSH_CONSTANTS(PUSH_CONV_GEOMETRY)

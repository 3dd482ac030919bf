// Shared by the weight-gradient kernels (conv_pool_weight.comp,
// conv_pool_chain_weight.comp): one output of a filter's weight and bias
// gradients, written or added as the push constants' flags say (1:
// dweight, 2: dbias, 4: add into dweight, 8: add into dbias). The includer
// declares dw[], db[], p.flags, and DW_AT and DB_AT: where dweight and
// dbias start (their argument offsets).

// Output o of filter f: weight o, or the bias when o == weights.
void store(uint f, uint o, uint weights, float s) {
    if (o < weights && (p.flags & 1u) != 0u) {
        uint i = DW_AT + f * weights + o;
        dw[i] = (p.flags & 4u) != 0u ? dw[i] + s : s;
    } else if (o == weights && (p.flags & 2u) != 0u) {
        uint i = DB_AT + f;
        db[i] = (p.flags & 8u) != 0u ? db[i] + s : s;
    }
}

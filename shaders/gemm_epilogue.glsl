// The GEMM epilogue of NN_KERNEL_GEMM_EPILOGUE (kernels.h), shared by
// gemm.comp and gemm_splitk.comp, which declare the aux[] buffer: bias
// (aux[aux_base + col] or aux[aux_base + row]), ReLU (a NaN passes, as
// relu_forward), then the ReLU-backward mask (aux laid out as C: mask_idx
// is the aux entry beside C's).
const uint EPI_BIAS_COLS = 1u, EPI_BIAS_ROWS = 2u, EPI_RELU = 4u, EPI_MASK = 8u;

float gemm_epilogue(uint epi, float v, uint row, uint col, uint aux_base, uint mask_idx) {
    if ((epi & EPI_BIAS_COLS) != 0u) v += aux[aux_base + col];
    if ((epi & EPI_BIAS_ROWS) != 0u) v += aux[aux_base + row];
    if ((epi & EPI_RELU) != 0u && !(v > 0.0 || isnan(v))) v = 0.0;
    if ((epi & EPI_MASK) != 0u && !(aux[mask_idx] > 0.0)) v = 0.0;
    return v;
}

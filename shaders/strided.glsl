// Row-major index spaces of up to six dimensions (the strided kernels of
// kernels.h): the element offset of index i through a stride array. The
// dimensions are walked innermost first, as the host's odometer does.
#define STRIDED_OFFSET(i, ndim, shape, stride, result)   \
    {                                                     \
        uint rest_ = (i);                                 \
        result = 0;                                       \
        for (int d_ = (ndim) - 1; d_ >= 0; d_--) {        \
            uint size_ = uint(shape[d_]);                 \
            result += int(rest_ % size_) * stride[d_];    \
            rest_ /= size_;                               \
        }                                                 \
    }

// Row-major index spaces of up to six dimensions (the strided kernels of
// kernels.h). STRIDED_OFFSETS splits index i into its coordinates once
// (innermost first, as the host's odometer walks), adding each times its
// strides into up to three offsets; one dimension needs no division.
#define STRIDED_OFFSETS(i, ndim, shape, sa, sb, sc, oa, ob, oc)   \
    {                                                              \
        oa = 0;                                                    \
        ob = 0;                                                    \
        oc = 0;                                                    \
        if ((ndim) == 1) {                                         \
            oa = int(i) * sa[0];                                   \
            ob = int(i) * sb[0];                                   \
            oc = int(i) * sc[0];                                   \
        } else {                                                   \
            uint rest_ = (i);                                      \
            for (int d_ = (ndim) - 1; d_ >= 0; d_--) {             \
                uint size_ = uint(shape[d_]);                      \
                int coord_ = int(rest_ % size_);                   \
                rest_ /= size_;                                    \
                oa += coord_ * sa[d_];                             \
                ob += coord_ * sb[d_];                             \
                oc += coord_ * sc[d_];                             \
            }                                                      \
        }                                                          \
    }

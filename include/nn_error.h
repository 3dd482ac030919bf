/* Errors as values: every public function reports failure through its return
 * value (a status, or NULL) and leaves a message naming the problem in a
 * thread-local buffer read by nn_last_error(). Nothing in the library aborts
 * the process on bad input. */
#ifndef NN_ERROR_H
#define NN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nn_status {
    NN_OK = 0,
    NN_ERR_ARGUMENT,    /* a NULL, a negative size, an unknown name */
    NN_ERR_SHAPE,       /* shapes that do not fit the operation */
    NN_ERR_DTYPE,       /* a tensor of the wrong element type */
    NN_ERR_MEMORY,      /* host or device memory exhausted */
    NN_ERR_STATE,       /* a call out of order (backward twice, mixed contexts) */
    NN_ERR_BACKEND,     /* the device failed or cannot run a kernel */
    NN_ERR_IO           /* a file could not be read or written */
} nn_status;

/* The message of the most recent failure on this thread ("" if none). */
const char *nn_last_error(void);
/* The status of the most recent failure on this thread (NN_OK if none). */
nn_status nn_last_status(void);
/* Forget the last failure (nn_last_error() returns "" afterwards). */
void nn_clear_error(void);
/* A short constant name for a status, e.g. "shape error". */
const char *nn_status_name(nn_status status);

#ifdef __cplusplus
}
#endif
#endif

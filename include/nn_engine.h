/* nn-engine: a neural-network training engine in C. One include for all of
 * the public API; docs/ARCHITECTURE.md maps the layers behind it. */
#ifndef NN_ENGINE_H
#define NN_ENGINE_H

#define NN_ENGINE_VERSION "0.1.0"

#include "nn_error.h"
#include "nn_context.h"
#include "nn_devices.h"
#include "nn_tensor.h"
#include "nn_ops.h"
#include "nn_module.h"
#include "nn_layers.h"
#include "nn_optim.h"
#include "nn_io.h"
#include "nn_capture.h"
#include "nn_step.h"
#include "nn_data.h"
#include "nn_device_loop.h"
#include "nn_schedule.h"
#include "nn_ema.h"
#include "nn_dist.h"
#include "nn_custom.h"

#endif

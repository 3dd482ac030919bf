/* Issuing a recorded command (backend.h) through a backend's table: what
 * the core does to replay a captured step on a backend without plans, and
 * what the Vulkan backend does to record one into its plan. */
#include "backend.h"

#include "base/error.h"

nn_status nn_command_issue(nn_backend *b, const nn_command *cmd) {
    switch (cmd->kind) {
    case NN_COMMAND_RUN: return b->run(b, cmd->kernel, cmd->args, cmd->nargs, cmd->params);
    case NN_COMMAND_FILL: return b->fill(b, cmd->args[0], cmd->value, cmd->count);
    case NN_COMMAND_COPY: return b->copy(b, cmd->args[0], cmd->args[1], cmd->count);
    case NN_COMMAND_WRITE: return b->write(b, cmd->args[0], cmd->data, cmd->count);
    }
    return nn_set_error(NN_ERR_BACKEND, "%s: unknown recorded command kind %d", b->name, (int)cmd->kind);
}

/* The sub-commands of nnengine; each returns the process exit status. */
#ifndef NNENGINE_COMMANDS_H
#define NNENGINE_COMMANDS_H

int command_train(int argc, char **argv);
int command_eval(int argc, char **argv);
int command_devices(int argc, char **argv);
int command_export(int argc, char **argv);

#endif

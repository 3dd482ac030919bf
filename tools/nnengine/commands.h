/* The sub-commands of nnengine; each returns the process exit status. */
#ifndef NNENGINE_COMMANDS_H
#define NNENGINE_COMMANDS_H

int command_train(int argc, char **argv);
/* train gpt-mini --text FILE (cmd_train_text.c), which command_train hands over to. */
int command_train_text(int argc, char **argv);
int command_generate(int argc, char **argv);
int command_eval(int argc, char **argv);
int command_devices(int argc, char **argv);
int command_export(int argc, char **argv);

#endif

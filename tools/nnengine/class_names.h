/* --class-names FILE: one class name per line (UTF-8), for datasets whose
 * files carry no names (IDX: Fashion-MNIST's classes are "0".."9" there). */
#ifndef NNENGINE_CLASS_NAMES_H
#define NNENGINE_CLASS_NAMES_H

/* The `classes` names of FILE, allocated (free with class_names_free), or
 * NULL after printing "nnengine COMMAND: --class-names FILE: ..." (unreadable,
 * not UTF-8 text, an empty name, or another count of lines than classes). A
 * last line may lack its newline; "\r\n" line ends are taken. */
char **class_names_read(const char *command, const char *path, int classes);
void class_names_free(char **names, int classes);

#endif

#ifndef AGENCYD_H
#define AGENCYD_H

#include <stdio.h>

#include "config.h"

#define AGENCYD_OPT_VERBOSE	0x01
#define AGENCYD_OPT_VERBOSE2	0x02
#define AGENCYD_OPT_NOACTION	0x04

/* parse.y */
/* Returns the configuration, or NULL after printing each error as
 * "FILE:LINE: message" on stderr (or to the log when running). */
struct agency_conf	*parse_config(const char *, int);
int			 cmdline_symset(char *);

/* printconf.c: the normalized form, which parses back to the same. */
void			 print_config(FILE *, const struct agency_conf *);

#endif /* AGENCYD_H */

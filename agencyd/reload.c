/*
 * Reloading the configuration (SIGHUP, agency-ctl reload).
 */
#include <sys/types.h>

#include "agencyd.h"
#include "control.h"
#include "log.h"

int
agencyd_reload(struct agencyd *d, struct ctl_conn *c)
{
	struct agency_conf	*conf;

	if ((conf = parse_config(d->conffile, 0)) == NULL) {
		control_info(c, "%s: errors; configuration not changed",
		    d->conffile);
		return (-1);
	}
	config_free(conf);
	control_info(c, "reload is not built yet: restart agencyd to apply "
	    "%s", d->conffile);
	return (-1);
}

/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Where a request says it is going and where it comes from, for http.c's
 * guards: a Host field a listener or a server name of ours answers to
 * (a rebinding page's is refused), an Origin of the same site, and the
 * admin routes' guard (a loopback Host with our port, a client on this
 * host, a JSON body).  Pure functions of the configuration.
 *
 * Calls: access.c, rules.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>
#include <event2/http.h>	/* EVHTTP_REQ_POST */

#include "log.h"
#include "proxy.h"
#include "routes.h"

static int	 host_split(const char *, char *, size_t, long long *);
static int	 our_port(const struct pconf *, long long);
static int	 loopback_name(const char *);
static int	 listen_name(const struct pconf *, const char *);
static int	 host_guard(const struct pconf *, const struct http_hdrs *,
		    struct rerr *);

/*
 * A Host field's value as name and port: the name up to the port's
 * colon (an IPv6 address with its brackets), the port 0 when there is
 * none.  -1 if it is not of that form.
 */
static int
host_split(const char *host, char *name, size_t size, long long *port)
{
	const char	*colon, *errstr;
	size_t		 n;

	if (host[0] == '[') {
		if ((colon = strchr(host, ']')) == NULL)
			return (-1);
		colon++;
		if (*colon != ':' && *colon != '\0')
			return (-1);
	} else
		colon = strchr(host, ':');
	n = colon != NULL && *colon == ':' ? (size_t)(colon - host) :
	    strlen(host);
	if (n == 0 || n >= size)
		return (-1);
	memcpy(name, host, n);
	name[n] = '\0';
	*port = 0;
	if (colon != NULL && *colon == ':') {
		/* digits only: strtonum would take a sign or spaces */
		if (strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return (-1);
		*port = strtonum(colon + 1, 1, 65535, &errstr);
		if (errstr != NULL)
			return (-1);
	}
	return (0);
}

/* Whether port (0: none, which is 80, or 443 for TLS) is one the front
 * door listens on. */
static int
our_port(const struct pconf *conf, long long port)
{
	struct plisten	*l;

	TAILQ_FOREACH(l, &conf->listens, entry)
		if (l->path[0] == '\0' && (l->port == port ||
		    (port == 0 && l->port == (l->tls ? 443 : 80))))
			return (1);
	return (0);
}

/* A loopback name, as a Host has it. */
static int
loopback_name(const char *name)
{
	return (strcasecmp(name, "localhost") == 0 ||
	    strcmp(name, "127.0.0.1") == 0 || strcmp(name, "[::1]") == 0);
}

/* The address of a listener that is not a wildcard, as a Host has it. */
static int
listen_name(const struct pconf *conf, const char *name)
{
	struct plisten	*l;
	size_t		 n;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (strcmp(l->host, "0.0.0.0") == 0 ||
		    strcmp(l->host, "::") == 0)
			continue;
		if (strchr(l->host, ':') == NULL) {
			if (strcasecmp(name, l->host) == 0)
				return (1);
			continue;
		}
		n = strlen(l->host);
		if (name[0] == '[' && strlen(name) == n + 2 &&
		    strncasecmp(name + 1, l->host, n) == 0 && name[n + 1] == ']')
			return (1);
	}
	return (0);
}

/*
 * Against DNS rebinding: whether a Host names this front door.  Every
 * Host does with "server name any".  Otherwise: a loopback name or the
 * address of a listener, with the port of a listener; or a server name,
 * with any port (or none) when the server name has no port of its own,
 * and with that port when it has.
 */
int
http_host_ok(const struct pconf *conf, const char *host)
{
	char		 name[AGENCY_NAME_MAX], sn[AGENCY_NAME_MAX];
	long long	 port, sport;
	size_t		 i;

	if (conf->host_any)
		return (1);
	if (host == NULL || host_split(host, name, sizeof(name), &port) == -1)
		return (0);
	if ((loopback_name(name) || listen_name(conf, name)) &&
	    our_port(conf, port))
		return (1);
	for (i = 0; i < conf->names.n; i++) {
		if (host_split(conf->names.v[i], sn, sizeof(sn), &sport) == -1 ||
		    strcasecmp(sn, name) != 0)
			continue;
		if (sport == 0 || sport == (port == 0 ? 80 : port))
			return (1);
	}
	return (0);
}

/*
 * Whether a request with this Origin is of the front door's own origin,
 * that of the Host it was sent to (a page the front door itself
 * served), with the scheme of the connection (https over TLS).  Other
 * origins are for the "cors origin" list (access.c).  "null", and any
 * origin that is not SCHEME://HOST[:PORT], is not.
 */
int
http_origin_ok(const struct pconf *conf, const char *origin,
    const char *host, int tls)
{
	char		 oname[AGENCY_NAME_MAX], hname[AGENCY_NAME_MAX];
	const char	*scheme = tls ? "https://" : "http://";
	size_t		 n = strlen(scheme);
	long long	 oport, hport, def = tls ? 443 : 80;

	(void)conf;
	if (host == NULL || strncasecmp(origin, scheme, n) != 0 ||
	    host_split(origin + n, oname, sizeof(oname), &oport) == -1 ||
	    host_split(host, hname, sizeof(hname), &hport) == -1)
		return (0);
	if (strchr(oname, '/') != NULL)
		return (0);
	return (strcasecmp(oname, hname) == 0 &&
	    (oport == 0 ? def : oport) == (hport == 0 ? def : hport));
}

/* Content-Type: application/json, with parameters or not. */
int
hosts_json_ctype(const char *ct)
{
	size_t	 n = strlen("application/json");

	return (ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
	    (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' ||
	    ct[n] == '\t'));
}

/*
 * Admin routes, /metrics, the console and passthrough, beyond the Host
 * check of every route: a loopback name with a listener's port, whatever
 * server names there are (on a Unix socket, which is local, any Host);
 * then a client on this host (access.c's access_local: a loopback
 * address, after a trusted proxy's X-Forwarded-For), since a Host is
 * whatever the client writes.
 */
static int
host_guard(const struct pconf *conf, const struct http_hdrs *hh,
    struct rerr *e)
{
	char		 name[AGENCY_NAME_MAX];
	long long	 port;
	int		 unixsock = hh->peer != NULL && hh->peer->unixsock;

	if (!unixsock && (hh->host == NULL || host_split(hh->host, name,
	    sizeof(name), &port) == -1 || !loopback_name(name) || port == 0 ||
	    !our_port(conf, port))) {
		rerr_set(e, 403, "forbidden_host", "Admin routes need "
		    "a Host of 127.0.0.1, [::1] or localhost with the port.");
		return (403);
	}
	if (!access_local(conf, hh)) {
		rerr_set(e, 403, "forbidden_peer", "Admin routes and "
		    "/upstream/ are only for clients on this host (a loopback "
		    "address, or a Unix socket).");
		return (403);
	}
	return (0);
}

/* The admin routes, /metrics, the console and passthrough: their Host
 * and client (host_guard), and where the route says so (json, its
 * guard's ROUTE_JSON), POSTs only with a JSON body. */
int
hosts_admin_guard(const struct pconf *conf, const struct http_hdrs *hh, int cmd,
    int guard, struct rerr *e)
{
	if (host_guard(conf, hh, e) != 0)
		return (403);
	if ((guard & ROUTE_JSON) && cmd == EVHTTP_REQ_POST &&
	    !hosts_json_ctype(hh->ctype)) {
		rerr_set(e, 415, "unsupported_media_type",
		    "Admin POSTs need Content-Type: application/json.");
		return (415);
	}
	return (0);
}

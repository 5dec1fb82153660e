/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Every route the front door serves, in one table looked up by path:
 * what serves it (kind), the guards in front of it and the methods it
 * takes; for a model route also the family whose shapes its bodies and
 * errors have, how its body is read, where its content parts are, and
 * which fields the max tokens cap holds.  A path the table does not
 * have (one an operator lists with "routes") is a model route read as
 * chat completions are.  And the routes each kind of runtime serves by
 * default.  Pure: no file of agency-proxy is called.
 */
#ifndef AGENCY_ROUTES_H
#define AGENCY_ROUTES_H

/* Whose shapes a route's bodies and errors have. */
enum route_family {
	FAMILY_OPENAI,		/* {"error":{"message","type","code"}} */
	FAMILY_ANTHROPIC,	/* {"type":"error","error":{"type","message"}} */
};

/* How a route's body is read for its model. */
enum route_body {
	BODY_JSON,		/* application/json, "model" at the top */
	BODY_FORM,		/* multipart/form-data, a "model" field */
};

/* Where a body's content parts are, for the rules on their types. */
enum route_parts {
	PARTS_NONE,		/* nowhere */
	PARTS_CHAT,		/* messages[].content[], OpenAI's parts */
	PARTS_MESSAGES,		/* system[] and messages[].content[],
				 * Anthropic's blocks */
	PARTS_RESPONSES,	/* input[].content[], OpenAI's Responses */
};

/* What serves a route. */
enum route_kind {
	ROUTE_MODEL,		/* a model's: the body names the model */
	ROUTE_HEALTH,		/* for load balancers */
	ROUTE_CONSOLE,		/* the console's files */
	ROUTE_MODELS,		/* the models list */
	ROUTE_METRICS,
	ROUTE_STATUS,		/* the admin routes, under /v1/agency/ */
	ROUTE_EVENTS,
	ROUTE_LOGS,		/* a model's log: the rest of the path */
	ROUTE_CANCEL,		/* the POSTs: the body names the model */
	ROUTE_LOAD,
	ROUTE_UNLOAD,
	ROUTE_ADMIN_OTHER,	/* any other under /v1/agency/: none */
	ROUTE_PASS,		/* /upstream/MODEL/...: as it came */
	ROUTE_KINDS
};

/* The guards in front of a route, beyond the Host check of every one. */
#define ROUTE_ANYHOST	0x01	/* none at all, not even the Host's */
#define ROUTE_OWN	0x02	/* no CORS: other origins are refused */
#define ROUTE_KEYLESS	0x04	/* no key nor allow rule asked for */
#define ROUTE_ADMIN	0x08	/* a loopback Host, a client on this
				 * host and an admin key */
#define ROUTE_JSON	0x10	/* POSTs only with a JSON body */

#define ROUTE_CAPS	2

struct route {
	const char	*path;
	int		 family;	/* enum route_family */
	int		 body;		/* enum route_body */
	int		 parts;		/* enum route_parts */
	/* the fields the max tokens cap lowers; with add, the first is
	 * set to the cap when the body has none of them and the runtime
	 * is of kind chat or vision */
	const char	*cap[ROUTE_CAPS];
	int		 add;
	/* the front door's: zero for a model route */
	int		 kind;		/* enum route_kind */
	int		 guard;		/* ROUTE_ANYHOST ... */
	int		 prefix;	/* path is the start of the paths */
	int		 methods;	/* EVHTTP_REQ_* it takes, of routes
					 * that are not a model's */
};

/* The names a model server reads for the length of an answer, NULL-
 * terminated: llama-server reads every one on every route (n_predict
 * before the others), so a route with a cap holds each of them to it. */
extern const char *const	 routes_limits[];

/* The route of a path: the first in the table that has it (whole, or
 * as its start for a prefix), or the one for other routes. */
const struct route	*routes_find(const char *);

/* The routes a runtime of a kind (enum model_kind) serves when it lists
 * none, NULL-terminated; NULL for an unknown kind. */
const char *const	*routes_of_kind(int);

/* A kind's name, as agency.conf(5) writes it; NULL for an unknown one. */
const char		*routes_kind_name(int);

/* The name a content part's type has in a runtime's "part" list (chat's
 * names) in a route's family (enum route_parts): type itself, or the
 * chat name of Anthropic's or the Responses' own. */
const char		*routes_part_name(int, const char *);

#endif /* AGENCY_ROUTES_H */

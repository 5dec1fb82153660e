/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The model routes the front door knows: for each, the family whose
 * shapes its bodies and errors have, how its body is read, where its
 * content parts are, and which fields the max tokens cap holds.  A pure
 * table, looked up by path.  A route the table does not have (one an
 * operator lists with "routes") is read as chat completions are.  And
 * the routes each kind of runtime serves by default.
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
};

/* The route of a path: from the table, or the one for other routes. */
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

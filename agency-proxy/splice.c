/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The changes the rules make to a body on the fast path, as pieces of
 * it: a body is never parsed into a tree and written out again to move
 * a top-level field, rename the model or cap max_tokens.  Pure
 * functions on what the scan noted (scan.c), unit-tested, and held by
 * the fuzzer to what the json-c path makes of the same body (rules.c:
 * rules_apply at the decision, rules_rewrite at the grant).
 *
 * splice_rules, at the decision: the runtime's moves and refusals on the
 * top object's members, as rules_apply does them, leave the body as a
 * list of pieces of its bytes and of text, in which the values of
 * "model" and of the limit fields (routes_limits: max_tokens, n_predict
 * and the others) are pieces of their own.  splice_rewrite, at the grant: the model name the upstream is
 * sent and the cap, on those pieces, as rules_rewrite does them.  What
 * cannot be done so as the json-c path does it (a dotted path, values
 * equal as JSON but not as bytes, a moved value the cap would read as
 * a number that it is not, a move of "model" or "stream"), is left to
 * that path.
 *
 * White space between the members that are kept stays; where a member
 * goes or comes, a comma alone stands between.
 *
 * Calls: scan.c (scan_count), rules.c (rerr_set, rules_part_allowed),
 * routes.c (routes_limits).
 */
#include <sys/types.h>
#include <sys/uio.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy.h"
#include "routes.h"

/* Where member i of the top object ends in the body. */
#define END(rs, i)	((rs)->top[i].value + (rs)->top[i].valuelen)

/* A member of the top object as the rules leave it. */
struct smember {
	const char	*name;		/* in the body, or a rule's */
	size_t		 namelen;
	size_t		 value;		/* offset in the body */
	size_t		 valuelen;	/* (a moved value's, for a null) */
	int		 top;		/* the member of rs it is, -1: added */
	int		 gone;
};

static int
role_of(const char *name, size_t len)
{
	if (len == 5 && memcmp(name, "model", 5) == 0)
		return (SP_MODEL);
	if (len == 10 && memcmp(name, "max_tokens", 10) == 0)
		return (SP_MAX_TOKENS);
	if (len == 21 && memcmp(name, "max_completion_tokens", 21) == 0)
		return (SP_MAX_COMPLETION);
	if (len == 17 && memcmp(name, "max_output_tokens", 17) == 0)
		return (SP_MAX_OUTPUT);
	if (len == 9 && memcmp(name, "n_predict", 9) == 0)
		return (SP_N_PREDICT);
	if (len == 6 && memcmp(name, "stream", 6) == 0)
		return (SP_STREAM);
	return (SP_NONE);
}

/*
 * Whether the fast path (scan.c, here) reads the bodies of route r as
 * the tree's rules do: a JSON body, whose content parts the scan reads
 * in each family (chat's parts, Anthropic's blocks, the Responses'
 * input items), with cap fields that are counts here (count_of).
 */
int
splice_route(const struct route *r)
{
	size_t	 i;

	if (r->body != BODY_JSON)
		return (0);
	for (i = 0; i < ROUTE_CAPS && r->cap[i] != NULL; i++) {
		switch (role_of(r->cap[i], strlen(r->cap[i]))) {
		case SP_MAX_TOKENS:
		case SP_MAX_COMPLETION:
		case SP_MAX_OUTPUT:
			break;
		default:
			return (0);
		}
	}
	return (1);
}

/* Where the splice keeps the count of a cap field's role, or NULL. */
static int64_t *
count_of(struct splice *sp, int role)
{
	switch (role) {
	case SP_MAX_TOKENS:
		return (&sp->max_tokens);
	case SP_MAX_COMPLETION:
		return (&sp->max_completion_tokens);
	case SP_MAX_OUTPUT:
		return (&sp->max_output_tokens);
	case SP_N_PREDICT:
		return (&sp->n_predict);
	default:
		return (NULL);
	}
}

/* A member by its name, or NULL. */
static struct smember *
find(struct smember *t, size_t n, const char *name, size_t len)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (!t[i].gone && t[i].namelen == len &&
		    memcmp(t[i].name, name, len) == 0)
			return (&t[i]);
	return (NULL);
}

/* Whether a member's value is null, which json-c's tree has as NULL:
 * rules_apply's path_get finds no such member. */
static int
null(const char *b, const struct smember *m)
{
	return (m->valuelen == 4 && memcmp(b + m->value, "null", 4) == 0);
}

/* Add a piece; bytes of the body that follow on from the last piece's
 * make it longer.  -1: no room. */
static int
piece(struct splice *sp, size_t off, size_t len, int text, int role)
{
	struct spiece	*p;

	if (len == 0 && role == SP_NONE)
		return (0);
	if (sp->np > 0 && role == SP_NONE) {
		p = &sp->p[sp->np - 1];
		if (p->text == text && p->role == SP_NONE &&
		    p->off + p->len == off) {
			p->len += len;
			return (0);
		}
	}
	if (sp->np == SPLICE_PIECES)
		return (-1);
	p = &sp->p[sp->np++];
	p->off = off;
	p->len = len;
	p->text = text;
	p->role = role;
	return (0);
}

/* s, or s as a JSON string (quote 1), into the text; its offset, or -1
 * when there is no room. */
static ssize_t
text_put(struct splice *sp, const char *s, size_t len, int quote)
{
	size_t	 off = sp->textlen, i;
	char	*t = sp->text + off, *end = sp->text + sizeof(sp->text);

	if (!quote) {
		if (len > (size_t)(end - t))
			return (-1);
		memcpy(t, s, len);
		t += len;
	} else {
		if (t == end)
			return (-1);
		*t++ = '"';
		for (i = 0; i < len; i++) {
			if (end - t < 7)
				return (-1);
			if (s[i] == '"' || s[i] == '\\') {
				*t++ = '\\';
				*t++ = s[i];
			} else if ((unsigned char)s[i] < 0x20)
				t += snprintf(t, 7, "\\u%04x",
				    (unsigned char)s[i]);
			else
				*t++ = s[i];
		}
		if (t == end)
			return (-1);
		*t++ = '"';
	}
	sp->textlen = t - sp->text;
	return ((ssize_t)off);
}

/* The same, as the next piece. */
static int
text(struct splice *sp, const char *s, size_t len, int quote, int role)
{
	ssize_t	 off;

	if ((off = text_put(sp, s, len, quote)) == -1)
		return (-1);
	return (piece(sp, (size_t)off, sp->textlen - (size_t)off, 1, role));
}

/* A member that is not in the body: its name, and (unless it is a text
 * that follows) its value in the body. */
static int
added(struct splice *sp, const char *name, size_t len)
{
	if ((sp->nmembers > 0 && text(sp, ",", 1, 0, SP_NONE) == -1) ||
	    text(sp, name, len, 1, SP_NONE) == -1 ||
	    text(sp, ":", 1, 0, SP_NONE) == -1)
		return (-1);
	sp->nmembers++;
	return (0);
}

/*
 * The runtime's moves on the members t (n of them, room for max), as
 * rules_apply does them: a member moved is gone, its value where it
 * goes.  0: done; -1: refused, with e as rules_apply sets it; 1: for the
 * json-c path.
 */
static int
splice_moves(const struct pruntime *rt, const char *b, struct smember *t,
    size_t *np, size_t max, struct splice *sp, struct rerr *e)
{
	struct smember		*from, *to;
	const struct pmove	*mv;
	size_t			 i, n = *np;
	int64_t			 x, y;
	int			 role;

	for (i = 0; i < rt->nmoves; i++) {
		mv = &rt->moves[i];
		if (strchr(mv->from, '.') != NULL) {
			if (find(t, n, mv->from, strcspn(mv->from, ".")))
				return (1);
			continue;
		}
		if ((from = find(t, n, mv->from, strlen(mv->from))) == NULL ||
		    null(b, from))
			continue;
		/* what the rest of the request reads by its name, a path */
		role = role_of(mv->from, strlen(mv->from));
		if (role == SP_MODEL || role == SP_STREAM ||
		    strchr(mv->to, '.') != NULL)
			return (1);
		role = role_of(mv->to, strlen(mv->to));
		if (role == SP_MODEL || role == SP_STREAM)
			return (1);
		if ((to = find(t, n, mv->to, strlen(mv->to))) != NULL &&
		    null(b, to)) {
			/* json-c sets it where it is */
			to->value = from->value;
			to->valuelen = from->valuelen;
		} else if (to != NULL && (to->valuelen != from->valuelen ||
		    memcmp(b + to->value, b + from->value, to->valuelen) !=
		    0)) {
			/* equal as bytes is equal; two counts differ (the
			 * cap's two fields, most often); else json-c says */
			if (!scan_count(b + to->value, to->valuelen, &x) ||
			    !scan_count(b + from->value, from->valuelen, &y) ||
			    x == y)
				return (1);
			rerr_set(e, 400, "conflicting_fields",
			    "Conflicting fields %s and %s.", mv->from, mv->to);
			return (-1);
		} else if (to == NULL) {
			if (n == max)
				return (1);
			t[n].name = mv->to;
			t[n].namelen = strlen(mv->to);
			t[n].value = from->value;
			t[n].valuelen = from->valuelen;
			t[n].top = -1;
			t[n++].gone = 0;
		}
		from->gone = 1;
		sp->changed = 1;
	}
	*np = n;
	return (0);
}

/* The pieces of the members kept (t, n of them), the values of note
 * apart: 0, or 1 when they do not fit (for the json-c path). */
static int
splice_pieces(struct splice *sp, const struct rscan *rs,
    const struct smember *t, size_t n)
{
	const struct smember	*m, *prev = NULL;
	const char		*b = rs->base;
	size_t			 i, start;
	int64_t			*cnt;
	int			 role;

	if (piece(sp, 0, rs->open + 1, 0, SP_NONE) == -1)
		return (1);
	for (i = 0; i < n; i++) {
		m = &t[i];
		if (m->gone)
			continue;
		role = role_of(m->name, m->namelen);
		if ((cnt = count_of(sp, role)) != NULL &&
		    !scan_count(b + m->value, m->valuelen, cnt))
			return (1);
		if (m->top < 0) {
			if (added(sp, m->name, m->namelen) == -1)
				return (1);
		} else {
			/* from the end of the one before, when that is
			 * kept, so that its white space stays */
			if (prev != NULL && prev->top == m->top - 1)
				start = END(rs, prev->top);
			else if (prev == NULL && m->top == 0)
				start = rs->open + 1;
			else {
				start = rs->top[m->top].name - 1;
				if (prev != NULL &&
				    text(sp, ",", 1, 0, SP_NONE) == -1)
					return (1);
			}
			if (piece(sp, start, rs->top[m->top].value - start, 0,
			    SP_NONE) == -1)
				return (1);
			sp->nmembers++;
		}
		if (piece(sp, m->value, m->valuelen, 0, role == SP_STREAM ?
		    SP_NONE : role) == -1)
			return (1);
		prev = m;
	}
	/* what is after the last member: white space, and the } */
	if (prev != NULL && prev->top == (int)rs->ntop - 1)
		sp->tail = END(rs, prev->top);
	else
		sp->tail = rs->close;
	if (prev == NULL)
		sp->tail = rs->open + 1;
	if (piece(sp, sp->tail, rs->close + 1 - sp->tail, 0, SP_NONE) == -1)
		return (1);
	return (0);
}

/*
 * The runtime's moves and refusals on a body the scan took (rs), as
 * rules_apply does them, after the types of its content parts, which
 * the runtime must allow (else the tree gives the error).  0: sp holds
 * the body as the rules leave it; -1: refused, with e as rules_apply
 * sets it; 1: for the json-c path.
 */
int
splice_rules(const struct pruntime *rt, const struct rscan *rs,
    struct splice *sp, struct rerr *e)
{
	struct smember		 t[RSCAN_TOP + SPLICE_MOVES];
	struct smember		*m;
	const char		*b = rs->base;
	size_t			 n = 0, i;
	int			 r;

	memset(sp, 0, sizeof(*sp));
	sp->max_tokens = sp->max_completion_tokens = -1;
	sp->max_output_tokens = sp->n_predict = -1;
	/* content parts of a type the runtime refuses: the tree says which */
	for (i = 0; i < rs->ntypes; i++)
		if (!rules_part_allowed(rt, rs->types[i]))
			return (1);
	for (i = 0; i < rs->ntop; i++) {
		t[n].name = b + rs->top[i].name;
		t[n].namelen = rs->top[i].namelen;
		t[n].value = rs->top[i].value;
		t[n].valuelen = rs->top[i].valuelen;
		t[n].top = (int)i;
		t[n++].gone = 0;
	}
	if ((r = splice_moves(rt, b, t, &n, sizeof(t) / sizeof(t[0]), sp,
	    e)) != 0)
		return (r);
	for (i = 0; i < rt->refuse.n; i++) {
		if ((m = find(t, n, rt->refuse.v[i],
		    strcspn(rt->refuse.v[i], "."))) == NULL || null(b, m))
			continue;
		if (strchr(rt->refuse.v[i], '.') != NULL)
			return (1);
		rerr_set(e, 400, "field_not_allowed",
		    "The field '%s' is not allowed for this model.",
		    rt->refuse.v[i]);
		return (-1);
	}
	return (splice_pieces(sp, rs, t, n));
}

/* The piece of a role, or NULL. */
static struct spiece *
role_piece(struct splice *sp, int role)
{
	size_t	 i;

	for (i = 0; i < sp->np; i++)
		if (sp->p[i].role == role)
			return (&sp->p[i]);
	return (NULL);
}

/* Make a piece of text, last, into a member before the tail. */
static int
add_member(struct splice *sp, const char *name, const char *value,
    size_t vlen, int quote)
{
	struct spiece	 last;

	/* the tail off the end, if it is the end of a longer piece */
	last = sp->p[--sp->np];
	if (last.off < sp->tail) {
		if (piece(sp, last.off, sp->tail - last.off, 0,
		    SP_NONE) == -1)
			return (-1);
		last.len -= sp->tail - last.off;
		last.off = sp->tail;
	}
	if (added(sp, name, strlen(name)) == -1 ||
	    text(sp, value, vlen, quote, SP_NONE) == -1 ||
	    sp->np == SPLICE_PIECES)
		return (-1);
	sp->p[sp->np++] = last;
	return (0);
}

/* Put text in a piece's place. */
static int
replace(struct splice *sp, struct spiece *p, const char *s, size_t len,
    int quote)
{
	ssize_t	 off;

	if ((off = text_put(sp, s, len, quote)) == -1)
		return (-1);
	p->off = (size_t)off;
	p->len = sp->textlen - (size_t)off;
	p->text = 1;
	return (0);
}

/*
 * The model name sent upstream ("": the body's own, as it is) and the
 * cap (0: none) for a kind, on the pieces, as rules_rewrite does them
 * for route r: on every limit field (routes_limits, whose values
 * splice_rules noted as counts) when r has a cap, and r's first field
 * added where it says so.  1 if the body changed, 0 if not; -1,
 * with nothing changed, when the pieces have no room for the name (for
 * the json-c path).
 */
int
splice_rewrite(struct splice *sp, const char *base, const char *upstream,
    int64_t cap, int kind, const struct route *r)
{
	struct spiece	*p;
	char		 num[24];
	const char	*v;
	size_t		 need, i;
	int64_t		*cnt;
	int		 seen = 0, changed = 0, n, role;

	/* room for all of it, first: the name escaped, two members added,
	 * four limits replaced, the pieces they take */
	for (need = 2, i = 0; upstream[i] != '\0'; i++)
		need += upstream[i] == '"' || upstream[i] == '\\' ? 2 :
		    (unsigned char)upstream[i] < 0x20 ? 6 : 1;
	need += sizeof(",\"model\":") + sizeof(",\"max_output_tokens\":") +
	    5 * 24;
	if (need > sizeof(sp->text) - sp->textlen ||
	    sp->np + 6 > SPLICE_PIECES)
		return (-1);

	if (upstream[0] != '\0') {
		/* a model the scan took is null or a string with no
		 * escape: the bytes of the name in quotes, or not it */
		p = role_piece(sp, SP_MODEL);
		v = p == NULL ? NULL : p->text ? sp->text + p->off :
		    base + p->off;
		if (p == NULL) {
			if (add_member(sp, "model", upstream,
			    strlen(upstream), 1) == -1)
				return (-1);
			changed = 1;
		} else if (p->len != strlen(upstream) + 2 || v[0] != '"' ||
		    memcmp(v + 1, upstream, p->len - 2) != 0) {
			if (replace(sp, p, upstream, strlen(upstream),
			    1) == -1)
				return (-1);
			changed = 1;
		}
	}
	if (cap <= 0 || r->cap[0] == NULL)
		return (changed);
	n = snprintf(num, sizeof(num), "%lld", (long long)cap);
	/* every limit field there: a count from 1 to the cap stays (a
	 * value that is no count never came this way: splice_pieces) */
	for (i = 0; routes_limits[i] != NULL; i++) {
		role = role_of(routes_limits[i], strlen(routes_limits[i]));
		if ((p = role_piece(sp, role)) == NULL)
			continue;
		cnt = count_of(sp, role);
		if (*cnt < 1 || *cnt > cap) {
			if (replace(sp, p, num, n, 0) == -1)
				return (-1);
			changed = 1;
		}
	}
	for (i = 0; i < ROUTE_CAPS && r->cap[i] != NULL; i++) {
		role = role_of(r->cap[i], strlen(r->cap[i]));
		if (role_piece(sp, role) != NULL)
			seen = 1;
	}
	if (!seen && r->add && (kind == KIND_CHAT || kind == KIND_VISION)) {
		if (add_member(sp, r->cap[0], num, n, 0) == -1)
			return (-1);
		changed = 1;
	}
	return (changed);
}

/* The pieces as an iovec of at most max (SPLICE_PIECES is enough);
 * returns how many, with *len the bytes of them all. */
size_t
splice_iov(const struct splice *sp, const char *base, struct iovec *iov,
    size_t max, size_t *len)
{
	size_t	 i;

	*len = 0;
	for (i = 0; i < sp->np && i < max; i++) {
		iov[i].iov_base = (void *)(uintptr_t)(sp->p[i].text ?
		    sp->text + sp->p[i].off : base + sp->p[i].off);
		iov[i].iov_len = sp->p[i].len;
		*len += sp->p[i].len;
	}
	return (i);
}

/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap's parts without the command: the YAML
 * reader (yamlread.c).
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

static struct ynode *
yaml(const char *s, int *line, char *err, size_t errlen)
{
	return (ytree_read(s, strlen(s), line, err, errlen));
}

/* The reader refuses s with message (a prefix of it) at line. */
static void
refused(const char *s, int line, const char *message)
{
	struct ynode	*t;
	char		 err[256];
	int		 l;

	t = yaml(s, &l, err, sizeof(err));
	ATF_CHECK_MSG(t == NULL, "took %s", s);
	ytree_free(t);
	ATF_CHECK_EQ_MSG(l, line, "%s: line %d, not %d", s, l, line);
	ATF_CHECK_MSG(strncmp(err, message, strlen(message)) == 0,
	    "%s: \"%s\", not \"%s\"", s, err, message);
}

ATF_TC_WITHOUT_HEAD(reader);
ATF_TC_BODY(reader, tc)
{
	struct ynode		*t;
	const struct ynode	*v, *k;
	char			 err[256];
	int			 line;

	t = yaml("a: 1\nb:\n  - x\n  - 'y'\nc: |\n  one\n  two\nd:\n", &line,
	    err, sizeof(err));
	ATF_REQUIRE_MSG(t != NULL, "%d: %s", line, err);
	ATF_CHECK_EQ(t->kind, YN_MAP);
	ATF_CHECK_EQ(t->nkid, 8);
	v = ymap_get(t, "a", &k);
	ATF_REQUIRE(v != NULL);
	ATF_CHECK_STREQ(v->str, "1");
	ATF_CHECK_EQ(v->style, YS_PLAIN);
	ATF_CHECK_EQ(k->line, 1);
	v = ymap_get(t, "b", NULL);
	ATF_REQUIRE(v != NULL && v->kind == YN_SEQ && v->nkid == 2);
	ATF_CHECK_EQ(v->kid[1]->style, YS_QUOTED);
	ATF_CHECK_EQ(v->kid[1]->line, 4);
	v = ymap_get(t, "c", NULL);
	ATF_REQUIRE(v != NULL);
	ATF_CHECK_STREQ(v->str, "one\ntwo\n");
	ATF_CHECK_EQ(v->style, YS_BLOCK);
	ATF_CHECK(ynode_null(ymap_get(t, "d", NULL)));
	ATF_CHECK(ymap_get(t, "e", NULL) == NULL);
	ATF_CHECK(!ynode_null(ymap_get(t, "a", NULL)));
	ytree_free(t);

	refused("a: &x 1\n", 1, "an anchor (&x)");
	refused("a: 1\nb: *x\n", 2, "an alias (*x)");
	refused("a: !!str 1\n", 1, "a tag (!!str)");
	refused("a: !local 1\n", 1, "a tag (!local)");
	refused("%YAML 1.1\n---\na: 1\n", 1, "YAML directives");
	refused("a: 1\n---\nb: 2\n", 2, "a second YAML document");
	refused("a: 1\nb: 2\na: 3\n", 3, "key \"a\" given twice (first at "
	    "line 1)");
	refused("? [a]\n: 1\n", 1, "a key that is a list");
	refused("a: \"x\\ty\\u0007\"\n", 1, "a control character (0x07)");
	refused("a: [\n", 2, "did not find expected node content");
	refused("", 0, "the file holds no YAML document");
	refused("# only a comment\n", 0, "the file holds no YAML document");
}

ATF_TC_WITHOUT_HEAD(reader_bounds);
ATF_TC_BODY(reader_bounds, tc)
{
	struct ynode	*t;
	char		 err[256], *s;
	int		 line, i;

	/* YAML_DEPTH_MAX sequences in a mapping: the mapping is one. */
	ATF_REQUIRE((s = calloc(1, 2 * YAML_DEPTH_MAX + 8)) != NULL);
	(void)strlcpy(s, "a: ", 2 * YAML_DEPTH_MAX + 8);
	for (i = 0; i < YAML_DEPTH_MAX - 1; i++)
		(void)strlcat(s, "[", 2 * YAML_DEPTH_MAX + 8);
	for (i = 0; i < YAML_DEPTH_MAX - 1; i++)
		(void)strlcat(s, "]", 2 * YAML_DEPTH_MAX + 8);
	t = yaml(s, &line, err, sizeof(err));
	ATF_CHECK_MSG(t != NULL, "%s", err);
	ytree_free(t);
	s[3] = '\0';
	for (i = 0; i < YAML_DEPTH_MAX; i++)
		(void)strlcat(s, "[", 2 * YAML_DEPTH_MAX + 8);
	for (i = 0; i < YAML_DEPTH_MAX; i++)
		(void)strlcat(s, "]", 2 * YAML_DEPTH_MAX + 8);
	refused(s, 1, "nested more than 32 deep");
	free(s);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, reader);
	ATF_TP_ADD_TC(tp, reader_bounds);
	return (atf_no_error());
}

/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap's parts without the command: the YAML
 * reader (yamlread.c), llama-swap's macros (lsmacro.c), command lines
 * (lscmd.c), and what the importer writes once the features that are
 * not on main yet are switched on (cases/NAME.phase2 of
 * regress/import, beside the files the command writes today).
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

/* macro_scalar(s, plain) is want, as Go's %v prints what yaml.v3 read. */
static void
scalar_is(const char *s, int plain, const char *want)
{
	char	*v;

	v = macro_scalar(s, plain);
	ATF_REQUIRE(v != NULL);
	ATF_CHECK_MSG(strcmp(v, want) == 0, "%s: \"%s\", not \"%s\"", s, v,
	    want);
	free(v);
}

ATF_TC_WITHOUT_HEAD(macro_values);
ATF_TC_BODY(macro_values, tc)
{
	scalar_is("4096", 1, "4096");
	scalar_is("+12", 1, "12");
	scalar_is("-0", 1, "0");
	scalar_is("1_000", 1, "1000");
	scalar_is("0x1F", 1, "31");
	scalar_is("0o17", 1, "15");
	scalar_is("010", 1, "8");
	scalar_is("08", 1, "8");
	scalar_is("0b101", 1, "5");
	scalar_is("18446744073709551615", 1, "18446744073709551615");
	scalar_is("0.7", 1, "0.7");
	scalar_is("0.70", 1, "0.7");
	scalar_is("1.0", 1, "1");
	scalar_is("1.5e3", 1, "1500");
	scalar_is("1e6", 1, "1e+06");
	scalar_is("123456.0", 1, "123456");
	scalar_is("1234567.0", 1, "1.234567e+06");
	scalar_is("0.0001", 1, "0.0001");
	scalar_is("0.00001", 1, "1e-05");
	scalar_is("-2.50", 1, "-2.5");
	scalar_is(".5", 1, "0.5");
	scalar_is(".inf", 1, "+Inf");
	scalar_is("-.Inf", 1, "-Inf");
	scalar_is(".nan", 1, "NaN");
	scalar_is("True", 1, "true");
	scalar_is("FALSE", 1, "false");
	scalar_is("yes", 1, "yes");
	scalar_is("_1", 1, "_1");
	scalar_is("1.2.3", 1, "1.2.3");
	scalar_is("0x", 1, "0x");
	scalar_is("4096", 0, "4096");
	scalar_is("1.0", 0, "1.0");
	scalar_is("true", 0, "true");
}

ATF_TC_WITHOUT_HEAD(macro_rules);
ATF_TC_BODY(macro_rules, tc)
{
	struct macros	 ms;
	char		 err[256], name[MACRO_NAME_MAX], *s;
	const char	*p;

	ATF_CHECK(macro_check("a-b_C9", "x", err, sizeof(err)) == 0);
	ATF_CHECK(macro_check("PORT", "x", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("PID", "x", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("MODEL_ID", "x", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("a.b", "x", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("", "x", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("loop", "-${loop}-", err, sizeof(err)) == -1);
	ATF_CHECK(macro_check("a23456789012345678901234567890123456789012345"
	    "678901234567890123", "x", err, sizeof(err)) == 0);
	ATF_CHECK(macro_check("a23456789012345678901234567890123456789012345"
	    "6789012345678901234", "x", err, sizeof(err)) == -1);

	/* The last declared is replaced first: a later one uses an earlier. */
	memset(&ms, 0, sizeof(ms));
	ATF_REQUIRE(macros_set(&ms, "ctx", "4096", 1) == 0);
	ATF_REQUIRE(macros_set(&ms, "args", "--ctx ${ctx}", 2) == 0);
	s = macro_expand(&ms, "x ${args} ${ctx}", err, sizeof(err));
	ATF_REQUIRE(s != NULL);
	ATF_CHECK_STREQ(s, "x --ctx 4096 4096");
	free(s);
	/* A model's macro replaces the global one where it stood. */
	ATF_REQUIRE(macros_set(&ms, "ctx", "8192", 3) == 0);
	ATF_CHECK_EQ(ms.n, 2);
	s = macro_expand(&ms, "${args}", err, sizeof(err));
	ATF_REQUIRE(s != NULL);
	ATF_CHECK_STREQ(s, "--ctx 8192");
	free(s);
	macros_free(&ms);
	/* Declared after its use: left, as llama-swap leaves it. */
	ATF_REQUIRE(macros_set(&ms, "args", "--ctx ${ctx}", 1) == 0);
	ATF_REQUIRE(macros_set(&ms, "ctx", "4096", 2) == 0);
	s = macro_expand(&ms, "${args}", err, sizeof(err));
	ATF_REQUIRE(s != NULL);
	ATF_CHECK_STREQ(s, "--ctx ${ctx}");
	p = macro_left(s, name, sizeof(name));
	ATF_CHECK(p == s + 6);
	ATF_CHECK_STREQ(name, "ctx");
	free(s);
	macros_free(&ms);
	ATF_CHECK(macro_left("$x ${} ${a b} $", name, sizeof(name)) == NULL);

	ATF_REQUIRE(setenv("IMPORT_UNIT", "/srv", 1) == 0);
	ATF_REQUIRE(setenv("IMPORT_UNIT_LOOP", "${env.IMPORT_UNIT_LOOP}", 1) ==
	    0);
	(void)unsetenv("IMPORT_UNIT_UNSET");
	s = macro_env("${env.IMPORT_UNIT}/a ${env.IMPORT_UNIT} ${env.1x} "
	    "${env.}", err, sizeof(err));
	ATF_REQUIRE(s != NULL);
	ATF_CHECK_STREQ(s, "/srv/a /srv ${env.1x} ${env.}");
	free(s);
	/* A value is not read again for macros: no loop. */
	s = macro_env("${env.IMPORT_UNIT_LOOP}", err, sizeof(err));
	ATF_REQUIRE(s != NULL);
	ATF_CHECK_STREQ(s, "${env.IMPORT_UNIT_LOOP}");
	free(s);
	ATF_CHECK(macro_env("${env.IMPORT_UNIT_UNSET}", err, sizeof(err)) ==
	    NULL);
	ATF_CHECK_STREQ(err, "environment variable \"IMPORT_UNIT_UNSET\" is "
	    "not set");
	ATF_REQUIRE(setenv("IMPORT_UNIT", "a\nb", 1) == 0);
	ATF_CHECK(macro_env("${env.IMPORT_UNIT}", err, sizeof(err)) == NULL);
}

/* words_split(cmd) is the n words of want. */
static void
split_is(const char *cmd, const char *const *want, size_t n)
{
	struct words	ws;
	size_t		i;

	ATF_REQUIRE(words_split(cmd, &ws) == 0);
	ATF_CHECK_EQ_MSG(ws.n, n, "%s: %zu words, not %zu", cmd, ws.n, n);
	for (i = 0; i < n && i < ws.n; i++)
		ATF_CHECK_MSG(strcmp(ws.w[i], want[i]) == 0, "%s: word %zu "
		    "\"%s\", not \"%s\"", cmd, i, ws.w[i], want[i]);
	words_free(&ws);
}

#define SPLIT(cmd, ...) do {						\
	static const char *const w_[] = { __VA_ARGS__ };		\
	split_is(cmd, w_, sizeof(w_) / sizeof(w_[0]));			\
} while (0)

ATF_TC_WITHOUT_HEAD(command_words);
ATF_TC_BODY(command_words, tc)
{
	struct words	 ws;

	SPLIT("a  b\tc\nd", "a", "b", "c", "d");
	SPLIT("a 'b c' \"d e\" f\\ g", "a", "b c", "d e", "f g");
	SPLIT("a '' \"\"", "a", "", "");
	SPLIT("a x'y'\"z\"", "a", "xyz");
	SPLIT("a \"\\$\\\"\\\\\\x\"", "a", "$\"\\\\x");
	SPLIT("a 'b\\c'", "a", "b\\c");
	SPLIT("a \\\nb", "a", "b");
	SPLIT("a\n  # a comment ${x}\n b", "a", "b");
	SPLIT("a \\\n  b \\\n  c", "a", "b", "c");
	SPLIT("a 'open", "a", "open");
	SPLIT("a #b", "a", "#b");
	ATF_REQUIRE(words_split("  \n# only\n", &ws) == 0);
	ATF_CHECK_EQ(ws.n, 0);
	words_free(&ws);
}

/* words_template(split(cmd)) is want, or fails when want is NULL. */
static void
template_is(const char *cmd, size_t len, const char *want)
{
	struct words	ws;
	char		buf[256];
	int		rv;

	ATF_REQUIRE(words_split(cmd, &ws) == 0);
	rv = words_template(&ws, 0, ws.n, buf, len);
	if (want == NULL)
		ATF_CHECK_MSG(rv == -1, "%s: made \"%s\"", cmd, buf);
	else {
		ATF_CHECK_MSG(rv == 0, "%s: failed", cmd);
		ATF_CHECK_MSG(rv != 0 || strcmp(buf, want) == 0,
		    "%s: \"%s\", not \"%s\"", cmd, buf, want);
	}
	words_free(&ws);
}

ATF_TC_WITHOUT_HEAD(command_template);
ATF_TC_BODY(command_template, tc)
{
	template_is("a b", 256, "a b");
	template_is("a 'b c'", 256, "a 'b c'");
	template_is("a \"it's\"", 256, "a \"it's\"");
	template_is("a '\"x\"'", 256, "a '\"x\"'");
	template_is("a \"it's \\\"x\\\"\"", 256, "a \"it's \\\"x\\\"\"");
	template_is("a 'x\\y'", 256, "a 'x\\y'");
	template_is("a ''", 256, "a ''");
	template_is("a 100%", 256, "a 100%%");
	template_is("a \001 x\002y \003", 256, "a %p x%my %u");
	template_is("a 'b\nc'", 256, NULL);
	template_is("abc def", 7, NULL);
	template_is("abc def", 8, "abc def");
}

/* The common words of the commands: pre at the start, suf at the end. */
static void
common_is(const char *a, const char *b, size_t pre, size_t suf)
{
	struct words		 wa, wb;
	const struct words	*set[2] = { &wa, &wb };
	size_t			 p, s;

	ATF_REQUIRE(words_split(a, &wa) == 0);
	ATF_REQUIRE(words_split(b, &wb) == 0);
	words_common(set, 2, &p, &s);
	ATF_CHECK_MSG(p == pre && s == suf, "%s | %s: %zu and %zu, not %zu "
	    "and %zu", a, b, p, s, pre, suf);
	words_free(&wa);
	words_free(&wb);
}

ATF_TC_WITHOUT_HEAD(command_common);
ATF_TC_BODY(command_common, tc)
{
	struct words	 ws;
	ssize_t		 i;
	int		 eq;
	static const char *const m[] = { "-m", "--model", NULL };

	/* An option whose value differs goes with the value. */
	common_is("s --port P --ctx 4096", "s --port P --ctx 8192", 3, 0);
	common_is("s --port P -m a --jinja", "s --port P -m b --jinja", 3, 1);
	common_is("s --x 1 --y 5", "s --z 1 --y 5", 1, 2);
	common_is("s --port P", "s --port P --temp 0.6", 3, 0);
	common_is("s a b", "s a b", 3, 0);
	common_is("s a", "t a", 0, 1);

	ATF_REQUIRE(words_split("s -m x --model=y", &ws) == 0);
	i = words_option(&ws, m, &eq);
	ATF_CHECK(i == 2 && eq == 0);
	words_free(&ws);
	ATF_REQUIRE(words_split("s --model=y -m", &ws) == 0);
	i = words_option(&ws, m, &eq);
	ATF_CHECK(i == 1 && eq == 1);
	words_free(&ws);
	ATF_REQUIRE(words_split("-m s --models y", &ws) == 0);
	ATF_CHECK(words_option(&ws, m, &eq) == -1);
	words_free(&ws);
}

/*
 * cases/NAME.yaml imported with every feature on is NAME.phase2: the
 * statements phase 2 turns on, in their places.
 */
static void
phase2(const atf_tc_t *tc, const char *name)
{
	struct import_opts	 o;
	FILE			*in, *out, *err;
	char			 path[1024], *buf, *obuf = NULL, *ebuf = NULL;
	char			*want;
	size_t			 len, olen = 0, elen = 0;
	int			 rv;

	(void)snprintf(path, sizeof(path), "%s/../import/cases/%s.yaml",
	    atf_tc_get_config_var(tc, "srcdir"), name);
	ATF_REQUIRE((in = fopen(path, "r")) != NULL);
	ATF_REQUIRE((buf = malloc(YAML_FILE_MAX)) != NULL);
	len = fread(buf, 1, YAML_FILE_MAX, in);
	fclose(in);
	import_defaults(&o);
	o.features.args = o.features.preload = o.features.unlisted = 1;
	o.features.strip = o.features.stop = 1;
	(void)snprintf(path, sizeof(path), "%s.yaml", name);
	o.name = path;
	ATF_REQUIRE((out = open_memstream(&obuf, &olen)) != NULL);
	ATF_REQUIRE((err = open_memstream(&ebuf, &elen)) != NULL);
	rv = import_llama_swap(buf, len, &o, out, err);
	fclose(out);
	fclose(err);
	ATF_CHECK_MSG(rv == 0, "%s: %s", name, ebuf);

	(void)snprintf(path, sizeof(path), "%s/../import/cases/%s.phase2",
	    atf_tc_get_config_var(tc, "srcdir"), name);
	ATF_REQUIRE_MSG((in = fopen(path, "r")) != NULL, "%s", path);
	ATF_REQUIRE((want = calloc(1, YAML_FILE_MAX)) != NULL);
	(void)fread(want, 1, YAML_FILE_MAX - 1, in);
	fclose(in);
	ATF_CHECK_MSG(strcmp(obuf, want) == 0, "%s: wrote\n%s", name, obuf);
	free(want);
	free(buf);
	free(obuf);
	free(ebuf);
}

ATF_TC(phase2_features);
ATF_TC_HEAD(phase2_features, tc)
{
	atf_tc_set_md_var(tc, "descr", "with the features phase 2 brings "
	    "(%a and args, preload, unlisted, strip, a runtime's stop), the "
	    "importer writes their statements instead of comments");
}
ATF_TC_BODY(phase2_features, tc)
{
	ATF_REQUIRE(setenv("IMPORT_TEST_HOME", "/home/op", 1) == 0);
	ATF_REQUIRE(setenv("IMPORT_TEST_KEY", "sk-from-the-environment", 1) ==
	    0);
	phase2(tc, "perargs");
	phase2(tc, "macros");
	phase2(tc, "features");
	phase2(tc, "containers");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, reader);
	ATF_TP_ADD_TC(tp, reader_bounds);
	ATF_TP_ADD_TC(tp, macro_values);
	ATF_TP_ADD_TC(tp, macro_rules);
	ATF_TP_ADD_TC(tp, command_words);
	ATF_TP_ADD_TC(tp, command_template);
	ATF_TP_ADD_TC(tp, command_common);
	ATF_TP_ADD_TC(tp, phase2_features);
	return (atf_no_error());
}

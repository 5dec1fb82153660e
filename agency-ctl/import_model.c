/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import: llama-swap's models: each entry of "models" read,
 * its setting mapped to a model of agency.conf (command, proxy and
 * upstream, kind, memory, aliases, filters, stop) or skipped with the
 * reason.  A model that cannot be carried over is written as comments.
 *
 * Calls: import_value.c, lscmd.c, lsmacro.c, show.c, yamlread.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "import.h"
#include "import_priv.h"
#include "sha256.h"

static void	model_env(struct imp *, struct imodel *, const struct ynode *,
		    const char *);
static void	model_ready(struct imp *, struct imodel *, const struct ynode *,
		    const char *);
static void	read_model(struct imp *, struct imodel *,
		    const struct ynode *);
static int	model_cmd(struct imp *, struct imodel *, const struct ynode *,
		    const struct ynode *);
static int	port_replace(struct imodel *, const char *);
static int	model_proxy(struct imp *, struct imodel *,
		    const struct ynode *, int);
static int	is_container(const struct imodel *);
static int	model_file(const char *);
static void	model_upstream(struct imp *, struct imodel *,
		    const struct ynode *, int);
static int	has_word(const struct imodel *, const char *);
static int	list_has(const struct ynode *, const char *);
static void	model_kind(struct imodel *, const struct ynode *);
static void	model_memory(struct imp *, struct imodel *, int);
static int	alias_add(struct imp *, struct imodel *, const char *, int);
static int	str_cmp(const void *, const void *);
static void	strip_fields(struct imp *, struct imodel *,
		    const struct ynode *, const char *, struct words *);
static void	set_by_id(struct imp *, struct imodel *,
		    const struct ynode *);
static void	model_filters(struct imp *, struct imodel *,
		    const struct ynode *);
static void	model_stop(struct imp *, struct imodel *,
		    const struct ynode *);
static void	model_field(struct imp *, struct imodel *,
		    const struct ynode *, const struct ynode *);


/*
 * Models.
 */

void
model_skip(struct imp *imp, struct imodel *m, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 why[1024];

	va_start(ap, fmt);
	vunmark(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (m->skip)
		return;
	m->skip = 1;
	free(m->skipwhy);
	m->skipwhy = strdup(why);
	imp_note(imp, NULL, "", line, NULL, "model \"%s\" is not carried "
	    "over: %s", m->id, why);
}

struct imodel *
model_find(struct imp *imp, const char *name)
{
	size_t	i, j;

	for (i = 0; i < imp->nm; i++)
		if (strcmp(imp->m[i].id, name) == 0)
			return (&imp->m[i]);
	for (i = 0; i < imp->nm; i++)
		for (j = 0; j < imp->m[i].aliases.n; j++)
			if (strcmp(imp->m[i].aliases.w[j], name) == 0)
				return (&imp->m[i]);
	return (NULL);
}

void
read_models(struct imp *imp, const struct ynode *n)
{
	struct imodel	*m;
	size_t		 i, nm;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "models: a mapping of model ids, not %s",
		    ynode_what(n));
		return;
	}
	nm = n->nkid / 2;
	if (nm > IMPORT_MODELS_MAX) {
		imp_err(imp, n->line, "more than %d models",
		    IMPORT_MODELS_MAX);
		return;
	}
	if ((imp->m = calloc(nm, sizeof(*imp->m))) == NULL) {
		imp_err(imp, n->line, "out of memory");
		return;
	}
	for (i = 0; i < nm; i++) {
		m = &imp->m[imp->nm++];
		m->line = n->kid[2 * i]->line;
		m->idle = -1;
		m->progress = -1;
		m->kind = "chat";
		if ((m->id = strdup(n->kid[2 * i]->str)) == NULL ||
		    (m->notesf = open_memstream(&m->notes, &m->noteslen)) ==
		    NULL) {
			imp_err(imp, m->line, "out of memory");
			return;
		}
	}
	/* Models first, then what may name them: aliases must be unique. */
	for (i = 0; i < nm; i++)
		read_model(imp, &imp->m[i], n->kid[2 * i + 1]);
}

static void
read_model(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	const struct ynode	*cmd, *v, *cmdkey = NULL;
	size_t			 i;
	int			 nerr = imp->nerr, fixed;

	if (!str_ok(m->id, AGENCY_NAME_MAX)) {
		model_skip(imp, m, m->line, "agency's model names are 1 to "
		    "%d bytes on one line", AGENCY_NAME_MAX - 1);
		return;
	}
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "model \"%s\": a mapping, not %s", m->id,
		    ynode_what(n));
		return;
	}
	/* MODEL_ID, then the global macros, then the model's own. */
	if (macros_set(&m->scope, "MODEL_ID", m->id, m->line) == -1) {
		imp_err(imp, m->line, "out of memory");
		return;
	}
	for (i = 0; i < imp->gm.n; i++)
		if (macros_set(&m->scope, imp->gm.m[i].name,
		    imp->gm.m[i].value, imp->gm.m[i].line) == -1) {
			imp_err(imp, m->line, "out of memory");
			return;
		}
	if ((v = ymap_get(n, "macros", NULL)) != NULL)
		read_macros(imp, v, &m->scope, m->id);

	if ((cmd = ymap_get(n, "cmd", &cmdkey)) == NULL || ynode_null(cmd)) {
		imp_err(imp, n->line, "model \"%s\" has no cmd", m->id);
		return;
	}
	if (imp->nerr > nerr || model_cmd(imp, m, cmdkey, cmd) == -1)
		return;
	if ((fixed = model_proxy(imp, m, ymap_get(n, "proxy", NULL),
	    cmdkey->line)) == -1)
		return;
	model_upstream(imp, m, ymap_get(n, "useModelName", NULL),
	    cmdkey->line);
	model_kind(m, ymap_get(n, "capabilities", NULL));
	for (i = 0; i + 1 < n->nkid; i += 2)
		model_field(imp, m, n->kid[i], n->kid[i + 1]);
	if (!m->skip)
		model_memory(imp, m, cmdkey->line);
	if (fixed && !m->skip)
		imp_note(imp, m->notesf, "\t", fixed, m->id, "proxy: agency "
		    "gives each model server a port of its own range (%%p), "
		    "written in cmd where the fixed port was");
}

/* cmd: expanded and split; its program must be one agency can run. */
static int
model_cmd(struct imp *imp, struct imodel *m, const struct ynode *key,
    const struct ynode *cmd)
{
	const char	*prog;
	char		*s;

	if ((s = expand(imp, m, cmd, "cmd", EX_CMD | EX_PORTS)) == NULL)
		return (-1);
	if (words_split(s, &m->argv) == -1) {
		free(s);
		imp_err(imp, cmd->line, "model \"%s\": cmd has more than %d "
		    "words", m->id, CMD_WORDS_MAX);
		return (-1);
	}
	free(s);
	if (m->argv.n == 0) {
		imp_err(imp, cmd->line, "model \"%s\": cmd is empty", m->id);
		return (-1);
	}
	prog = m->argv.w[0];
	if (prog[0] == '\0' || word_marked(prog, MARK_PORT) ||
	    word_marked(prog, MARK_MODEL))
		model_skip(imp, m, key->line, "its program \"%s\" is empty or "
		    "made from ${PORT} or ${MODEL_ID}", prog);
	else if (prog[0] != '/' && strchr(prog, '/') != NULL)
		model_skip(imp, m, key->line, "its program %s is a relative "
		    "path: agency runs an absolute path, or a name it looks "
		    "up in PATH", prog);
	return (0);
}

/* The port of a server that listens where cmd says: replaced by %p. */
static int
port_replace(struct imodel *m, const char *port)
{
	char		*w, *prev, *e, *c1, *c2, *nw;
	size_t		 i, plen = strlen(port);
	int		 n = 0;

	for (i = 1; i < m->argv.n; i++) {
		w = m->argv.w[i];
		prev = m->argv.w[i - 1];
		nw = NULL;
		if (strcmp(w, port) == 0 && prev[0] == '-')
			nw = strdup("\001");
		else if (w[0] == '-' && (e = strchr(w, '=')) != NULL &&
		    strcmp(e + 1, port) == 0) {
			if (asprintf(&nw, "%.*s\001", (int)(e + 1 - w), w) ==
			    -1)
				nw = NULL;
		} else if (strcmp(prev, "-p") == 0 ||
		    strcmp(prev, "--publish") == 0) {
			/* A container's: PORT:INNER or HOST:PORT:INNER. */
			c1 = strchr(w, ':');
			c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
			if (c1 != NULL && c2 == NULL &&
			    (size_t)(c1 - w) == plen &&
			    strncmp(w, port, plen) == 0) {
				if (asprintf(&nw, "\001%s", c1) == -1)
					nw = NULL;
			} else if (c2 != NULL && (size_t)(c2 - c1 - 1) ==
			    plen && strncmp(c1 + 1, port, plen) == 0) {
				if (asprintf(&nw, "%.*s\001%s",
				    (int)(c1 + 1 - w), w, c2) == -1)
					nw = NULL;
			}
		}
		if (nw != NULL) {
			free(m->argv.w[i]);
			m->argv.w[i] = nw;
			n++;
		}
	}
	return (n);
}

/*
 * proxy: where llama-swap sends the model's requests.  agency sends them
 * to 127.0.0.1 and the port it gave; a server elsewhere cannot be
 * carried over, and a fixed port becomes %p where cmd names it.  The
 * line of proxy when a fixed port was replaced, 0, or -1 on an error.
 */
static int
model_proxy(struct imp *imp, struct imodel *m, const struct ynode *n,
    int cmdline)
{
	const char	*host, *hend, *port, *path;
	char		*url, portbuf[8];
	size_t		 hlen, plen;
	int		 rv = 0;

	if (ynode_null(n)) {
		if (!m->uses_port) {
			imp_err(imp, cmdline, "model \"%s\": cmd has no "
			    "${PORT} and no proxy says where its server "
			    "listens", m->id);
			return (-1);
		}
		return (0);
	}
	if ((url = expand(imp, m, n, "proxy", 0)) == NULL)
		return (-1);
	if (strncmp(url, "http://", 7) != 0) {
		model_skip(imp, m, n->line, "proxy %s: agency reaches its "
		    "model servers over plain HTTP on this machine", url);
		goto done;
	}
	host = url + 7;
	if (*host == '[')
		hend = (hend = strchr(host, ']')) != NULL ? hend + 1 :
		    host + strlen(host);
	else
		hend = host + strcspn(host, ":/");
	hlen = hend - host;
	if (!((hlen == 9 && strncmp(host, "localhost", 9) == 0) ||
	    (hlen >= 4 && strncmp(host, "127.", 4) == 0) ||
	    (hlen == 7 && strncmp(host, "0.0.0.0", 7) == 0) ||
	    (hlen == 5 && strncmp(host, "[::1]", 5) == 0))) {
		model_skip(imp, m, n->line, "proxy %s: its server is on "
		    "another machine, and agency runs and reaches model "
		    "servers on this one", url);
		goto done;
	}
	port = "80";
	plen = 2;
	path = hend;
	if (*hend == ':') {
		port = hend + 1;
		plen = strcspn(port, "/");
		path = port + plen;
	}
	if (*path != '\0' && strcmp(path, "/") != 0) {
		model_skip(imp, m, n->line, "proxy %s: agency sends requests "
		    "to the paths the client asked for, not under %s", url,
		    path);
		goto done;
	}
	if (plen == 1 && port[0] == MARK_PORT)
		goto done;
	if (plen == 0 || plen >= sizeof(portbuf) ||
	    strspn(port, "0123456789") < plen) {
		imp_err(imp, n->line, "model \"%s\": proxy %s: not a port",
		    m->id, url);
		rv = -1;
		goto done;
	}
	memcpy(portbuf, port, plen);
	portbuf[plen] = '\0';
	if (m->uses_port)
		imp_note(imp, m->notesf, "\t", n->line, m->id, "proxy port %s: "
		    "agency connects to the port cmd is given (%%p)", portbuf);
	else if (port_replace(m, portbuf) == 0)
		model_skip(imp, m, n->line, "proxy port %s: agency gives each "
		    "model server a port of its own (%%p), and cmd has no %s "
		    "to give it in", portbuf, portbuf);
	else
		rv = n->line;
 done:
	free(url);
	return (rv);
}

/* The program's name without its directory. */
const char *
prog_base(const struct imodel *m)
{
	const char	*s = strrchr(m->argv.w[0], '/');

	return (s != NULL ? s + 1 : m->argv.w[0]);
}

static int
is_container(const struct imodel *m)
{
	const char	*b = prog_base(m);

	return (strcmp(b, "docker") == 0 || strcmp(b, "podman") == 0 ||
	    strcmp(b, "nerdctl") == 0);
}

/*
 * A name that is a model's file rather than a model's id: llama.cpp's
 * -m takes only files, and a relative path is no id though agency.conf
 * would take "models/x.gguf" for one.
 */
static int
model_file(const char *v)
{
	static const char *const ext[] = { ".gguf", ".bin", ".ggml",
	    ".safetensors", ".pt", ".pth", ".onnx", NULL };
	size_t	i, n = strlen(v), e;

	for (i = 0; ext[i] != NULL; i++) {
		e = strlen(ext[i]);
		if (n > e && strcmp(v + n - e, ext[i]) == 0)
			return (1);
	}
	return (v[0] == '.');
}

/*
 * upstream: the model's file or id from cmd (-m, --model, -hf, vllm
 * serve ID), which becomes %u; useModelName, when it is the model agency
 * sends (send model upstream); else the model's name stands in.
 */
static void
model_upstream(struct imp *imp, struct imodel *m, const struct ynode *use,
    int line)
{
	static const char *const mopts[] = { "-m", "--model", NULL };
	static const char *const hfopts[] = { "-hf", "-hfr", "--hf-repo",
	    NULL };
	char		*v = NULL, *name = NULL, *why = NULL, *s, *w;
	ssize_t		 i;
	int		 eq = 0, usable = 0, path = 0, relative = 0;
	size_t		 k;

	if (m->skip)
		return;
	if ((i = words_option(&m->argv, mopts, &eq)) != -1)
		path = strcmp(m->argv.w[eq ? i : i - 1], "-m") == 0 ||
		    strncmp(m->argv.w[i], "-m=", 3) == 0;
	else
		i = words_option(&m->argv, hfopts, &eq);
	if (i == -1 && strcmp(prog_base(m), "vllm") == 0 && m->argv.n > 2 &&
	    strcmp(m->argv.w[1], "serve") == 0 && m->argv.w[2][0] != '-') {
		i = 2;
		eq = 0;
	}
	if (i != -1) {
		w = m->argv.w[i];
		s = eq ? strchr(w, '=') + 1 : w;
		/* ${MODEL_ID} in the path: the name, as agency has it. */
		if ((v = malloc(strlen(s) + strlen(m->id) * strlen(s) + 1)) ==
		    NULL)
			return;
		for (k = 0; *s != '\0'; s++) {
			if (*s == MARK_MODEL) {
				memcpy(v + k, m->id, strlen(m->id));
				k += strlen(m->id);
			} else
				v[k++] = *s;
		}
		v[k] = '\0';
		if (word_marked(v, MARK_PORT))
			why = "its model is named with ${PORT}";
		else if (is_container(m))
			why = "its model's file is inside the container";
		else if (v[0] != '/' && (path || !valid_id(v) ||
		    model_file(v)))
			relative = 1;
		else if (strlen(v) >= AGENCY_PATH_MAX)
			why = "its model's path is too long";
		else
			usable = 1;
		if (usable && v[0] == '/' && !is_container(m))
			m->file = strdup(v);
	} else
		why = "cmd names no model file (-m, --model, -hf)";

	if (!ynode_null(use) && (name = expand(imp, m, use, "useModelName",
	    0)) != NULL && name[0] != '\0') {
		if (usable && strcmp(name, v) == 0)
			m->send_upstream = 1;
		else if (valid_id(name) || (name[0] == '/' &&
		    str_ok(name, AGENCY_PATH_MAX))) {
			/* The file stays in cmd as it is; agency sends this. */
			m->upstream = strdup(name);
			m->send_upstream = 1;
			usable = 0;
		} else
			imp_note(imp, m->notesf, "\t", use->line, m->id,
			    "useModelName \"%s\": agency sends a model's name, "
			    "its upstream or the client's value, and this can "
			    "be no upstream (an absolute path or a model id)",
			    name);
	}
	free(name);
	if (usable) {
		m->upstream = v;
		v = NULL;
		w = m->argv.w[i];
		if (eq) {
			if (asprintf(&s, "%.*s\003", (int)(strchr(w, '=') + 1 -
			    w), w) == -1)
				s = NULL;
		} else
			s = strdup("\003");
		if (s != NULL) {
			free(m->argv.w[i]);
			m->argv.w[i] = s;
		}
	}
	if (relative)
		imp_note(imp, m->notesf, "\t", line, m->id, "cmd: %s is relative "
		    "to where llama-swap ran, and agency starts model servers "
		    "in the model user's home: write it absolute%s", v,
		    m->upstream != NULL ? "" : "; the model's name stands in "
		    "for upstream, and agency sizes the model by its headroom "
		    "alone unless memory is set");
	free(v);
	if (m->upstream != NULL)
		return;
	if (valid_id(m->id))
		m->upstream = strdup(m->id);
	else if ((m->upstream = strdup(m->id)) != NULL) {
		for (s = m->upstream; *s != '\0'; s++)
			if (*s == '/')
				*s = '_';
		if (strcmp(m->upstream, ".") == 0 ||
		    strcmp(m->upstream, "..") == 0)
			m->upstream[0] = '_';
	}
	if (why != NULL && !relative)
		imp_note(imp, m->notesf, "\t", line, m->id, "upstream: %s; "
		    "the model's name stands in, and agency sizes the model "
		    "by its headroom alone unless memory is set", why);
}

static int
has_word(const struct imodel *m, const char *w)
{
	size_t	i;

	for (i = 1; i < m->argv.n; i++)
		if (strcmp(m->argv.w[i], w) == 0)
			return (1);
	return (0);
}

static int
list_has(const struct ynode *list, const char *s)
{
	size_t	i;

	if (list == NULL || list->kind != YN_SEQ)
		return (0);
	for (i = 0; i < list->nkid; i++)
		if (list->kid[i]->kind == YN_SCALAR &&
		    strcmp(list->kid[i]->str, s) == 0)
			return (1);
	return (0);
}

/* The runtime's kind, from llama-server's options or capabilities. */
static void
model_kind(struct imodel *m, const struct ynode *caps)
{
	const struct ynode	*in, *out, *rr;
	long long		 rerank = 0;

	if (m->skip)
		return;
	in = ymap_get(caps, "in", NULL);
	out = ymap_get(caps, "out", NULL);
	if ((rr = ymap_get(caps, "reranker", NULL)) != NULL &&
	    rr->kind == YN_SCALAR)
		(void)parse_bool(rr->str, &rerank);
	if (has_word(m, "--embedding") || has_word(m, "--embeddings"))
		m->kind = "embedding";
	else if (has_word(m, "--reranking") || has_word(m, "--rerank") ||
	    rerank)
		m->kind = "rerank";
	else if (list_has(in, "image") || has_word(m, "--mmproj") ||
	    has_word(m, "-mm"))
		m->kind = "vision";
	else if (list_has(in, "audio"))
		m->kind = "transcription";
	else if (list_has(out, "audio"))
		m->kind = "speech";
	else if (list_has(out, "image"))
		m->kind = "image";
}

/*
 * memory: a guess where cmd and the model's file tell: the file, and
 * for the context (-c) GUESS_KV_TOKEN a token, at least agency's 1G of
 * headroom.  Written with a comment that says it is one.
 */
static void
model_memory(struct imp *imp, struct imodel *m, int line)
{
	static const char *const copts[] = { "-c", "--ctx-size", NULL };
	static const char *const gopts[] = { "-ngl", "--n-gpu-layers",
	    "--gpu-layers", NULL };
	struct stat	 st;
	const char	*w, *errstr;
	char		 fs[32];
	ssize_t		 i;
	int		 eq;
	long long	 ctx = 0;
	int64_t		 ctxmem, need;

	if ((i = words_option(&m->argv, gopts, &eq)) != -1) {
		w = eq ? strchr(m->argv.w[i], '=') + 1 : m->argv.w[i];
		imp_note(imp, m->notesf, "\t", line, m->id, "%s %s: layers on "
		    "a GPU, which agency does not count yet: memory is the "
		    "host's", m->argv.w[eq ? i : i - 1], w);
	}
	if ((i = words_option(&m->argv, copts, &eq)) != -1) {
		w = eq ? strchr(m->argv.w[i], '=') + 1 : m->argv.w[i];
		ctx = strtonum(w, 0, 100000000LL, &errstr);
		if (errstr != NULL)
			ctx = 0;
	}
	if (m->file == NULL || stat(m->file, &st) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size <= 0) {
		if (ctx > 0)
			imp_note(imp, m->notesf, "\t", line, m->id, "context "
			    "of %lld tokens: agency counts the model's file "
			    "and 1G of headroom, not the context; set memory "
			    "if it needs more", ctx);
		return;
	}
	/* Without a context, only where agency cannot size the file. */
	if (ctx == 0 && m->upstream != NULL &&
	    strcmp(m->upstream, m->file) == 0)
		return;
	ctxmem = ctx * GUESS_KV_TOKEN;
	if (ctxmem < 1024LL * 1024 * 1024)
		ctxmem = 1024LL * 1024 * 1024;
	need = st.st_size + ctxmem;
	need = (need + (1 << 20) - 1) & ~(int64_t)((1 << 20) - 1);
	m->memory = need;
	fmt_size(fs, sizeof(fs), st.st_size);
	if (ctx > 0) {
		if (asprintf(&m->memory_why, "memory: a guess, the file's %s "
		    "and %lld tokens of context at %dK a token (at least 1G); "
		    "agency's estimate from the file will replace it", fs, ctx,
		    GUESS_KV_TOKEN / 1024) == -1)
			m->memory_why = NULL;
	} else if (asprintf(&m->memory_why, "memory: the file's %s and 1G "
	    "of headroom, as agency counts a model's file", fs) == -1)
		m->memory_why = NULL;
}

static int
alias_add(struct imp *imp, struct imodel *m, const char *a, int line)
{
	struct imodel	*o;

	if (!str_ok(a, AGENCY_NAME_MAX)) {
		imp_note(imp, m->notesf, "\t", line, m->id, "alias \"%s\": "
		    "agency's aliases are 1 to %d bytes on one line", a,
		    AGENCY_NAME_MAX - 1);
		return (0);
	}
	if ((o = model_find(imp, a)) != NULL) {
		if (o == m)
			return (0);
		if (strcmp(o->id, a) == 0) {
			imp_note(imp, m->notesf, "\t", line, m->id, "alias "
			    "\"%s\" is the name of another model, which "
			    "llama-swap serves under it", a);
			return (0);
		}
		imp_err(imp, line, "model \"%s\": alias \"%s\" is also model "
		    "\"%s\"'s", m->id, a, o->id);
		return (-1);
	}
	if (words_add(&m->aliases, a) == -1) {
		imp_err(imp, line, "model \"%s\": more than %d aliases",
		    m->id, CMD_WORDS_MAX);
		return (-1);
	}
	return (0);
}

static int
str_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* stripParams' fields as llama-swap takes them: trimmed, once, sorted. */
static void
strip_fields(struct imp *imp, struct imodel *m, const struct ynode *v,
    const char *key, struct words *fields)
{
	char	*s, *f, *p, *e;
	size_t	 j;

	memset(fields, 0, sizeof(*fields));
	if ((s = expand(imp, m, v, key, 0)) == NULL)
		return;
	for (p = s; (f = strsep(&p, ",")) != NULL; ) {
		while (*f == ' ' || *f == '\t')
			f++;
		for (e = f + strlen(f); e > f && (e[-1] == ' ' ||
		    e[-1] == '\t'); e--)
			e[-1] = '\0';
		/* llama-swap never strips "model". */
		if (*f == '\0' || strcmp(f, "model") == 0)
			continue;
		if (strlen(f) >= AGENCY_FIELD_MAX) {
			imp_note(imp, m->notesf, "\t", v->line, m->id, "%s: "
			    "field \"%s\" is longer than agency's %d bytes",
			    key, f, AGENCY_FIELD_MAX - 1);
			continue;
		}
		for (j = 0; j < fields->n; j++)
			if (strcmp(fields->w[j], f) == 0)
				break;
		if (j == fields->n)
			(void)words_add(fields, f);
	}
	free(s);
	if (fields->n > 1)
		qsort(fields->w, fields->n, sizeof(*fields->w), str_cmp);
}

/* setParamsByID: its ids (with the model's macros) become aliases. */
static void
set_by_id(struct imp *imp, struct imodel *m, const struct ynode *v)
{
	struct macros	*sc = &m->scope;
	struct imodel	*o;
	char		 err[256], *s;
	size_t		 j;

	if (v->kind != YN_MAP) {
		imp_err(imp, v->line, "model \"%s\": filters.setParamsByID: "
		    "a mapping, not %s", m->id, ynode_what(v));
		return;
	}
	for (j = 0; j + 1 < v->nkid; j += 2) {
		free(sc->m[0].value);
		if ((sc->m[0].value = strdup(m->id)) == NULL ||
		    (s = macro_expand(sc, v->kid[j]->str, err,
		    sizeof(err))) == NULL) {
			imp_err(imp, v->kid[j]->line, "model \"%s\": filters."
			    "setParamsByID: %s", m->id, sc->m[0].value == NULL ?
			    "out of memory" : err);
			continue;
		}
		if (strcmp(s, m->id) != 0) {
			if ((o = model_find(imp, s)) != NULL &&
			    strcmp(o->id, s) == 0)
				imp_err(imp, v->kid[j]->line, "model \"%s\": "
				    "filters.setParamsByID: \"%s\" is a model's "
				    "id", m->id, s);
			else
				(void)alias_add(imp, m, s, v->kid[j]->line);
		}
		free(s);
	}
}

static void
model_filters(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	const struct ynode	*k, *v, *strip;
	struct words		 fields;
	size_t			 i;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "model \"%s\": filters: a mapping, not "
		    "%s", m->id, ynode_what(n));
		return;
	}
	/* stripParams, or the older strip_params when it is empty. */
	if ((strip = ymap_get(n, "stripParams", NULL)) == NULL ||
	    ynode_null(strip))
		strip = ymap_get(n, "strip_params", NULL);
	for (i = 0; i + 1 < n->nkid; i += 2) {
		k = n->kid[i];
		v = n->kid[i + 1];
		if (strcmp(k->str, "stripParams") == 0 ||
		    strcmp(k->str, "strip_params") == 0) {
			if (v != strip || ynode_null(v))
				continue;
			strip_fields(imp, m, v, k->str, &fields);
			if (fields.n == 0)
				continue;
			if (imp->o->features.strip) {
				words_free(&m->strip);
				m->strip = fields;
				continue;
			}
			imp_note(imp, m->notesf, "\t", v->line, m->id, "filters."
			    "%s \"%s\": agency does not strip request fields "
			    "yet (its refuse refuses a request that has one)",
			    k->str, v->str);
			words_free(&fields);
		} else if (strcmp(k->str, "setParams") == 0)
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "setParams: agency sets no request fields");
		else if (strcmp(k->str, "setParamsByID") == 0) {
			if (ynode_null(v))
				continue;
			set_by_id(imp, m, v);
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "setParamsByID: its ids are aliases here, but "
			    "agency sets no request fields for them");
		} else
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "%s: not a filter of llama-swap's; left out",
			    k->str);
	}
}

/* cmdStop: a runtime's stop command, or agency's own stop. */
static void
model_stop(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	struct words	 w;
	char		*s, tmpl[AGENCY_CMD_MAX];

	if (ynode_null(n) || (s = expand(imp, m, n, "cmdStop",
	    EX_CMD | EX_PID)) == NULL)
		return;
	if (strstr(s, "${PID}") != NULL) {
		imp_note(imp, m->notesf, "\t", n->line, m->id, "cmdStop: "
		    "agency stops a model server itself (SIGTERM to its "
		    "process group, SIGKILL 5s later): nothing stands for "
		    "${PID}");
	} else if (!imp->o->features.stop) {
		imp_note(imp, m->notesf, "\t", n->line, m->id, "cmdStop: "
		    "agency has no stop command yet; it sends SIGTERM to the "
		    "server's process group, SIGKILL 5s later (a container "
		    "run with --init --rm stops with it)");
	} else if (words_split(s, &w) == 0) {
		if (w.n > 0 && words_template(&w, 0, w.n, tmpl,
		    sizeof(tmpl)) == 0)
			m->stop = strdup(tmpl);
		else
			imp_note(imp, m->notesf, "\t", n->line, m->id,
			    "cmdStop: empty, or too long for agency.conf");
		words_free(&w);
	}
	free(s);
}

/* A model's env: NAME=value words for its environment, or notes. */
static void
model_env(struct imp *imp, struct imodel *m, const struct ynode *v,
    const char *k)
{
	struct words	 list;
	char		*s;
	size_t		 i;

	if (get_list(imp, m, v, k, &list) == -1)
		return;
	for (i = 0; i < list.n; i++) {
		s = list.w[i];
		if (word_marked(s, MARK_PORT))
			imp_note(imp, m->notesf, "\t", v->kid[i]->line,
			    m->id, "env: ${PORT}: agency gives the port "
			    "in cmd (%%p) and as AGENCY_PORT, not in "
			    "env");
		else if (!str_ok(s, AGENCY_ENV_MAX) ||
		    strchr(s, '=') == NULL || s[0] == '=' ||
		    isdigit((unsigned char)s[0]) ||
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
		    "mnopqrstuvwxyz0123456789_") != (size_t)(strchr(s,
		    '=') - s))
			imp_note(imp, m->notesf, "\t", v->kid[i]->line,
			    m->id, "env \"%s\": agency takes NAME=value "
			    "(letters, digits and _), under %d bytes", s,
			    AGENCY_ENV_MAX);
		else
			(void)words_add(&m->env, s);
	}
	words_free(&list);
}

/* A model's checkEndpoint: agency's ready path, or a note. */
static void
model_ready(struct imp *imp, struct imodel *m, const struct ynode *v,
    const char *k)
{
	char		*s;

	if ((s = expand(imp, m, v, k, 0)) == NULL)
		return;
	if (strcmp(s, "none") == 0)
		imp_note(imp, m->notesf, "\t", v->line, m->id,
		    "checkEndpoint none: agency always waits for a "
		    "ready probe; it asks /health, so set ready get "
		    "for a server that has none");
	else if (s[0] != '/' || !str_ok(s, AGENCY_PATH_MAX))
		imp_note(imp, m->notesf, "\t", v->line, m->id,
		    "checkEndpoint \"%s\": agency's ready path begins "
		    "with / (it asks /health)", s);
	else if (strcmp(s, "/health") != 0) {
		free(m->ready);
		m->ready = s;
		s = NULL;
	}
	free(s);
}

/* One setting of a model, in the order of the file. */
static void
model_field(struct imp *imp, struct imodel *m, const struct ynode *key,
    const struct ynode *v)
{
	const char	*k = key->str;
	struct words	 list;
	char		*s;
	long long	 n;
	size_t		 i;
	int		 b;

	if (m->skip || strcmp(k, "macros") == 0 || strcmp(k, "cmd") == 0 ||
	    strcmp(k, "proxy") == 0 || strcmp(k, "useModelName") == 0)
		return;
	if (strcmp(k, "aliases") == 0) {
		if (get_list(imp, m, v, k, &list) == -1)
			return;
		for (i = 0; i < list.n; i++)
			if (alias_add(imp, m, list.w[i], v->kind == YN_SEQ ?
			    v->kid[i]->line : v->line) == -1)
				break;
		words_free(&list);
	} else if (strcmp(k, "env") == 0)
		model_env(imp, m, v, k);
	else if (strcmp(k, "checkEndpoint") == 0)
		model_ready(imp, m, v, k);
	else if (strcmp(k, "ttl") == 0) {
		if (get_int(imp, m, v, k, &n) == -1)
			return;
		if (n < -1)
			imp_err(imp, v->line, "model \"%s\": ttl %lld: 0 or "
			    "more, or -1 for globalTTL", m->id, n);
		else if (n >= 0)
			m->idle = n;
	} else if (strcmp(k, "concurrencyLimit") == 0) {
		if (get_int(imp, m, v, k, &n) == -1 || n <= 0)
			return;
		if (n > MAX_REQUESTS_LIMIT)
			n = MAX_REQUESTS_LIMIT;
		m->max_requests = n;
		imp_note(imp, m->notesf, "\t", v->line, m->id, "concurrencyLimit"
		    ": agency makes the requests past the limit wait for a "
		    "slot (queue timeout, max queue) where llama-swap answers "
		    "429");
	} else if (strcmp(k, "sendLoadingState") == 0) {
		if (get_bool(imp, m, v, k, &b) == 0)
			m->progress = b;
	} else if (strcmp(k, "unlisted") == 0) {
		if (get_bool(imp, m, v, k, &b) == -1 || !b)
			return;
		m->unlisted = 1;
		if (!imp->o->features.unlisted)
			imp_note(imp, m->notesf, "\t", v->line, m->id,
			    "unlisted: agency lists every model in /v1/models "
			    "(no unlisted yet)");
	} else if (strcmp(k, "cmdStop") == 0)
		model_stop(imp, m, v);
	else if (strcmp(k, "filters") == 0)
		model_filters(imp, m, v);
	else if (strcmp(k, "name") == 0 || strcmp(k, "description") == 0) {
		if ((s = expand(imp, m, v, k, 0)) == NULL)
			return;
		if (s[0] != '\0')
			imp_note(imp, m->notesf, "\t", v->line, m->id, "%s "
			    "\"%s\": agency's /v1/models has no display name or "
			    "description", k, s);
		free(s);
	} else if (strcmp(k, "capabilities") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "capabilities: "
		    "agency's /v1/models does not list them (they chose the "
		    "runtime's kind, %s)", m->kind);
	else if (strcmp(k, "metadata") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "metadata: "
		    "agency's /v1/models carries none");
	else if (strcmp(k, "unloadTimeout") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "unloadTimeout:"
		    " agency gives a model server 5s after SIGTERM before "
		    "SIGKILL");
	else if (strcmp(k, "timeouts") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "timeouts: "
		    "agency's request, header and body timeouts are global "
		    "(agency.conf(5))");
	else if (strcmp(k, "compat") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "compat: "
		    "agency forwards no websockets");
	else if (strcmp(k, "healthCheckTimeout") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id,
		    "healthCheckTimeout: llama-swap takes only the global one");
	else
		imp_note(imp, m->notesf, "\t", key->line, m->id, "%s: not a "
		    "setting of a llama-swap model; left out", k);
}

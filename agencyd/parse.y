/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency.conf(5): a hand-written lexer with include files and macros, a
 * byacc grammar, and the checks that need the whole file.  Every error is
 * reported as "FILE:LINE: message"; parse_config() returns NULL if there
 * was any.
 *
 * Calls: memory.c (sizes in messages), secrets.c, spawn.c (a command's
 * argv, to check it), common/config.c, common/log.c, common/sha256.c.
 */

%{
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"
#include "memory.h"	/* mem_fmt */
#include "sha256.h"

#define MAXINCLUDE	16	/* include depth; also stops include loops */
#define MAXUNGET	16
/* The largest size: 1024T, beyond any machine, and far enough below
 * INT64_MAX that sums of sizes cannot wrap. */
#define SIZE_LIMIT	(1LL << 50)
#define SIZE_LIMIT_STR	"1024T"

TAILQ_HEAD(files, file)		 files = TAILQ_HEAD_INITIALIZER(files);
static struct file {
	TAILQ_ENTRY(file)	 entry;
	FILE			*stream;
	char			*name;
	int			 lineno;
	int			 mode;		/* its permission bits */
	int			 unget[MAXUNGET];
	int			 nunget;
} *file;

/* Where something was written, for the checks made after parsing. */
struct pos {
	char			*file;
	int			 line;
};

TAILQ_HEAD(symhead, sym)	 symhead = TAILQ_HEAD_INITIALIZER(symhead);
struct sym {
	TAILQ_ENTRY(sym)	 entry;
	int			 persist;	/* from -D: the file cannot override */
	char			*name;
	char			*val;
};

typedef struct {
	union {
		int64_t		 number;
		char		*string;
	} v;
	int lineno;
} YYSTYPE;
#define YYSTYPE_IS_DECLARED 1

int		 yyparse(void);
int		 yylex(void);
int		 yyerror(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

static int		 conf_open(const char *, FILE **, int *, char *, size_t);
static struct file	*pushfile(const char *, int);
static int		 popfile(void);
static int		 lex(void);
static int		 lgetc(int);
static void		 lungetc(int);
static int		 findeol(void);
static int		 lookup(const char *);
static int		 kw_cmp(const void *, const void *);
static void		 syntax_say(const char *, ...)
			    __attribute__((__format__ (printf, 1, 2)));
static void		 syntax_error(void);
static void		 quoted_macros(const char *);
static void		 conf_verror(const char *, int, const char *, va_list)
			    __attribute__((__format__ (printf, 3, 0)));
static void		 conf_error(const struct pos *, const char *, ...)
			    __attribute__((__format__ (printf, 2, 3)));
static void		 conf_warn(const struct pos *, int, const char *, ...)
			    __attribute__((__format__ (printf, 3, 4)));
static int		 here(struct pos *);
static int		 symset(const char *, const char *, int);
static const char	*symget(const char *);
static void		 symclear(void);
static int		 setstr(char *, size_t, const char *, const char *);
static char		*xstrdup(const char *);
static char		*host_norm(const char *, const char *, const char *);
static char		*cors_origin(const char *);
static char		*proxy_addr(const char *);
static int		 addstr(struct strlist *, const char *, size_t,
			    const char *);
static int		 check_command(const char *);
static int		 check_upstream(const char *);
static int		 check_env(const char *);
static int64_t		 parse_size(const char *);
static int64_t		 parse_duration(const char *);
static int		 add_listen(const char *, int64_t, int, int);
static int		 add_unix_listen(const char *);
static void		 tls_set(char *, struct pos *, const char *,
			    const char *);
static void		 pending_clear(void);
static void		 name_add(const char *);
static void		 key_start(char *);
static void		 key_end(void);
static void		 key_secret_file(const char *);
static void		 key_secret_hash(const char *);
static void		 allow_add(enum allow_kind, const char *);
static int		 mode_octal(int64_t, mode_t *);
static void		 check_listeners(void);
static void		 check_tls(struct tls_files *, const struct pos *,
			    const struct pos *);
static void		 runtime_start(char *);
static void		 runtime_end(void);
static void		 model_start(char *);
static void		 model_end(void);
static void		 model_alias(char *);
static void		 block_abandon(void);
static void		 check_all(void);
static void		 pos_note(const void *, int);
static void		 pos_note_at(const void *, int, const struct pos *);
static const struct pos	*pos_find(const void *, int);
static void		 pos_free(void);
static void		 check_users(void);
static void		 check_budget(void);
static void		 check_program(const struct model_conf *,
			    struct strlist *);
static void		 check_runnable(void);

static struct agency_conf	*conf;
static int			 errors;
static int			 opts;
static int			 lex_error;	/* the lexer already said why */
static int			 last_token;
/*
 * What a syntax error names: the word it came at, and the first word
 * of its statement, each as written ("" for a token without one), and
 * whether the statement is inside a block.
 */
#define SYNTAX_WORD_MAX		64
static char			 lex_word[SYNTAX_WORD_MAX];
static char			 stmt_word[SYNTAX_WORD_MAX];
static int			 stmt_keyword;	/* stmt_word is one */
static int			 stmt_tokens;	/* tokens of it so far */
static int			 block_depth;
static char			 block_word[SYNTAX_WORD_MAX];

static struct runtime_conf	*rt;		/* the block being read */
static int			 rt_keep;
static int			 rt_command;	/* written, good or bad */
static struct pos		 rt_pos;
static struct model_conf	*model;
static int			 model_keep;
static int			 model_idle_set;
static int			 model_runtime;	/* written, good or bad */
static int			 model_upstream;
static struct pos		 model_pos;

static struct pos		*listen_pos;	/* one per listen statement */
static size_t			 nlisten_pos;
static struct key_conf		*kb;		/* the key block being read */
static int			 key_keep;
static int			 key_secret;	/* a secret was written */
static int			 key_secret_good;	/* and read */
static struct pos		 key_pos;

/*
 * What the statements inside a listen and an allow rule collected
 * before the statement ends: the files of a TLS listener's block, a
 * Unix socket's owner, group and mode, the models of an allow rule.
 */
static struct tls_files		 pend_tls;
static struct pos		 pend_cert_pos, pend_key_pos;
static char			 pend_owner[AGENCY_NAME_MAX];
static char			 pend_group[AGENCY_NAME_MAX];
static mode_t			 pend_mode = DEFAULT_UNIX_MODE;
static int			 pend_mode_set;
static struct strlist		 pend_names =
				    TAILQ_HEAD_INITIALIZER(pend_names);
static struct strlist		*names_into = &pend_names;
static int			 pend_admin;
static struct pos		 tls_cert_pos, tls_key_pos;	/* global */
static struct pos		 allow_pos;	/* the first allow rule */
static struct pos		 ports_pos;
static struct pos		 default_pos;
static struct pos		 rsocket_pos;
static struct pos		 user_pos;
static struct pos		 model_user_pos;
static char			*top_name;	/* the file given to agencyd */

/*
 * Where the statements of kept models and runtimes were written, for the
 * checks of whether they can run, made after parsing.
 */
#define POS_MEMORY	0
#define POS_UPSTREAM	1
#define POS_COMMAND	2
#define POS_TLS_CERT	3
#define POS_TLS_KEY	4
static struct notepos {
	const void		*key;	/* the model_conf or runtime_conf */
	int			 what;	/* POS_* */
	struct pos		 pos;
} *notes;
static size_t			 nnotes;
%}

%token	ADMIN ALIAS ALLOW ALWAYS ANY BODY BUDGET BUFFER CERTIFICATE CHAT
%token	CLOSE COMMAND CONNECTIONS CONSOLE CORS DEFAULT EMBEDDING ENV
%token	FAIRNESS GET GROUP HEADER IDLE IMAGE INCLUDE KEY KIND LAZY LISTEN
%token	LOAD LOADING MAX MEMORY MODE MODEL MODELS MOVE NAME NEVER NO ON
%token	ORIGIN OVERCOMMIT OWNER PART PASSTHROUGH PORT PORTS POST PROGRESS PROXY
%token	QUEUE READY REFUSE REQUEST REQUESTS RERANK RESERVE RESTRICTED ROUTE
%token	RUNTIME SECRET SECRETFILE SEND SERVER SHA256 SHARE SOCKET SPEECH
%token	SHUTDOWN STOPS
%token	STREAM TIMEOUT TLS TO TOKENS TRANSCRIPTION TRUSTED UNCHANGED UPSTREAM USER
%token	VISION WINDOW YES
%token	ERROR
%token	<v.string>	STRING
%token	<v.number>	NUMBER
%type	<v.number>	size duration yesno kind stops listentls sendmodel
%type	<v.string>	macroval macroname
/* Strings that error recovery throws away. */
%destructor	{ (void)msg; free($$); } <v.string>
%%

grammar		: /* empty */
		| grammar '\n'
		| grammar include '\n'
		| grammar varset '\n'
		| grammar main '\n'
		| grammar runtime '\n'
		| grammar model '\n'
		| grammar key '\n'
		| grammar error '\n'		{
			block_abandon();
			yyerrok;
		}
		;

include		: INCLUDE STRING		{
			struct file	*nfile;

			if ((nfile = pushfile($2, 1)) != NULL) {
				file = nfile;
				/* Ends the include statement in the new file. */
				lungetc('\n');
			}
			free($2);
		}
		;

varset		: macroname '=' macroval	{
			const char	*s;

			for (s = $1; *s != '\0'; s++)
				if (!isalnum((unsigned char)*s) && *s != '_')
					break;
			if (*$1 == '\0' || *s != '\0')
				yyerror("invalid macro name \"%s\"", $1);
			else if (symset($1, $3, 0) == -1)
				fatal("%s: symset", __func__);
			free($1);
			free($3);
		}
		;

/*
 * The keywords that came with keys, TLS and CORS were free words
 * before: files written then may name macros so (as the examples did
 * "models").
 */
macroname	: STRING			{ $$ = $1; }
		| ADMIN				{ $$ = xstrdup("admin"); }
		| ALLOW				{ $$ = xstrdup("allow"); }
		| CERTIFICATE			{ $$ = xstrdup("certificate"); }
		| CORS				{ $$ = xstrdup("cors"); }
		| GROUP				{ $$ = xstrdup("group"); }
		| KEY				{ $$ = xstrdup("key"); }
		| MODE				{ $$ = xstrdup("mode"); }
		| MODELS			{ $$ = xstrdup("models"); }
		| ORIGIN			{ $$ = xstrdup("origin"); }
		| OWNER				{ $$ = xstrdup("owner"); }
		| PROXY				{ $$ = xstrdup("proxy"); }
		| SECRET			{ $$ = xstrdup("secret"); }
		| SECRETFILE			{ $$ = xstrdup("file"); }
		| SHA256			{ $$ = xstrdup("sha256"); }
		| SHARE				{ $$ = xstrdup("share"); }
		| TLS				{ $$ = xstrdup("tls"); }
		| TRUSTED			{ $$ = xstrdup("trusted"); }
		;

macroval	: STRING			{ $$ = $1; }
		| NUMBER			{
			if (asprintf(&$$, "%lld", (long long)$1) == -1)
				fatal("%s: asprintf", __func__);
		}
		;

main		: LISTEN ON STRING PORT NUMBER listentls {
			(void)add_listen($3, $5, $6, $<lineno>1);
			pending_clear();
			free($3);
		}
		| LISTEN ON STRING unixopts	{
			(void)add_unix_listen($3);
			pending_clear();
			free($3);
		}
		| LISTEN ON STRING unixopts tlsyes {
			struct pos	 p = { file->name, $<lineno>1 };

			conf_error(&p, "listen on \"%s\": tls is for TCP "
			    "listeners (listen on ADDRESS port PORT tls)", $3);
			pending_clear();
			free($3);
		}
		| TLS CERTIFICATE STRING	{
			tls_set(conf->tls.cert, &tls_cert_pos, $3,
			    "tls certificate");
			free($3);
		}
		| TLS KEY STRING		{
			tls_set(conf->tls.key, &tls_key_pos, $3, "tls key");
			free($3);
		}
		| CORS ORIGIN STRING		{
			char	*origin;

			if ((origin = cors_origin($3)) != NULL &&
			    !strlist_contains(&conf->cors_origins, origin))
				(void)addstr(&conf->cors_origins, origin,
				    AGENCY_ORIGIN_MAX, "cors origin");
			free(origin);
			free($3);
		}
		| TRUSTED PROXY STRING		{
			char	*addr;

			if ((addr = proxy_addr($3)) != NULL &&
			    !strlist_contains(&conf->trusted_proxies, addr))
				(void)addstr(&conf->trusted_proxies, addr,
				    AGENCY_NAME_MAX, "trusted proxy");
			free(addr);
			free($3);
		}
		| ALLOW USER STRING allowopts	{
			allow_add(ALLOW_USER, $3);
			free($3);
		}
		| ALLOW GROUP STRING allowopts	{
			allow_add(ALLOW_GROUP, $3);
			free($3);
		}
		| LISTEN ON NUMBER PORT NUMBER	{
			yyerror("invalid listen address \"%lld\"",
			    (long long)$3);
		}
		| SOCKET STRING			{
			struct sockaddr_un	 sun;

			if ($2[0] != '/')
				yyerror("socket path must be absolute");
			else if (strlen($2) >= sizeof(sun.sun_path))
				yyerror("socket path too long");
			else
				(void)setstr(conf->socket, sizeof(conf->socket),
				    $2, "socket path");
			free($2);
		}
		| SOCKET STRING RESTRICTED	{
			struct sockaddr_un	 sun;

			if ($2[0] != '/')
				yyerror("socket path must be absolute");
			else if (strlen($2) >= sizeof(sun.sun_path))
				yyerror("socket path too long");
			else if (setstr(conf->rsocket, sizeof(conf->rsocket),
			    $2, "socket path") == 0) {
				free(rsocket_pos.file);
				(void)here(&rsocket_pos);
			}
			free($2);
		}
		| USER STRING			{
			if (setstr(conf->user, sizeof(conf->user), $2,
			    "user") == 0) {
				free(user_pos.file);
				(void)here(&user_pos);
			}
			free($2);
		}
		| MODEL USER STRING		{
			if (setstr(conf->model_user,
			    sizeof(conf->model_user), $3, "model user") == 0) {
				free(model_user_pos.file);
				(void)here(&model_user_pos);
			}
			free($3);
		}
		| PORTS NUMBER TO NUMBER	{
			if ($2 < 1 || $2 > 65535 || $4 < 1 || $4 > 65535)
				yyerror("port range %lld to %lld is outside "
				    "1 to 65535", (long long)$2, (long long)$4);
			else if ($2 > $4)
				yyerror("port range %lld to %lld is empty",
				    (long long)$2, (long long)$4);
			else {
				conf->port_lo = $2;
				conf->port_hi = $4;
				free(ports_pos.file);
				(void)here(&ports_pos);
			}
		}
		| MEMORY RESERVE size		{
			if ($3 >= 0)
				conf->reserve = $3;
		}
		| MEMORY BUDGET size		{
			if ($3 >= 0)
				conf->budget = $3;
		}
		| OVERCOMMIT yesno		{
			conf->overcommit = $2;
		}
		| CONSOLE yesno			{
			conf->console = $2;
		}
		| MAX BODY size			{
			if ($3 == 0)
				yyerror("max body must be more than 0");
			else if ($3 > 0)
				conf->max_body = $3;
		}
		| REQUEST TIMEOUT duration	{
			if ($3 == 0)
				yyerror("request timeout must be more than 0");
			else if ($3 > 0)
				conf->request_timeout = $3;
		}
		| HEADER TIMEOUT duration	{
			if ($3 == 0)
				yyerror("header timeout must be more than 0");
			else if ($3 > 0)
				conf->header_timeout = $3;
		}
		| BODY TIMEOUT duration		{
			if ($3 == 0)
				yyerror("body timeout must be more than 0");
			else if ($3 > 0)
				conf->body_timeout = $3;
		}
		| BODY BUFFER size		{
			if ($3 == 0)
				yyerror("body buffer must be more than 0");
			else if ($3 > 0)
				conf->body_buffer = $3;
		}
		| BODY SHARE NUMBER		{
			if ($3 < 1 || $3 > 100)
				yyerror("body share must be 1 to 100 "
				    "(percent)");
			else
				conf->body_share = $3;
		}
		| HEADER BUFFER size		{
			if ($3 == 0)
				yyerror("header buffer must be more than 0");
			else if ($3 > 0)
				conf->header_buffer = $3;
		}
		| HEADER SHARE NUMBER		{
			if ($3 < 1 || $3 > 100)
				yyerror("header share must be 1 to 100 "
				    "(percent)");
			else
				conf->header_share = $3;
		}
		| SERVER NAME STRING		{
			char	*name;

			if ((name = host_norm($3, "server name", $3)) != NULL &&
			    !strlist_contains(&conf->server_names, name))
				(void)addstr(&conf->server_names, name,
				    AGENCY_NAME_MAX, "server name");
			free(name);
			free($3);
		}
		| SERVER NAME ANY		{
			conf->host_any = 1;
		}
		| MAX CONNECTIONS NUMBER	{
			if ($3 < 1 || $3 > MAX_CONNECTIONS)
				yyerror("max connections must be 1 to %d",
				    MAX_CONNECTIONS);
			else
				conf->max_connections = $3;
		}
		| LOAD TIMEOUT duration		{
			if ($3 == 0)
				yyerror("load timeout must be more than 0");
			else if ($3 > 0)
				conf->load_timeout = $3;
		}
		| IDLE TIMEOUT duration		{
			if ($3 >= 0)
				conf->idle_timeout = $3;
		}
		| QUEUE TIMEOUT duration	{
			if ($3 >= 0)
				conf->queue_timeout = $3;
		}
		| MAX QUEUE NUMBER		{
			if ($3 < 1 || $3 > MAX_QUEUE_MAX)
				yyerror("max queue must be 1 to %d",
				    MAX_QUEUE_MAX);
			else
				conf->max_queue = $3;
		}
		| FAIRNESS WINDOW duration	{
			if ($3 >= 0)
				conf->fairness = $3;
		}
		| SHUTDOWN TIMEOUT duration	{
			if ($3 > PROTO_DRAIN_MAX)
				yyerror("shutdown timeout must be at most "
				    "24h");
			else if ($3 >= 0)
				conf->shutdown_timeout = $3;
		}
		| LOADING PROGRESS yesno	{
			conf->progress = $3;
		}
		| DEFAULT MODEL STRING		{
			if (setstr(conf->default_model,
			    sizeof(conf->default_model), $3, "model name") == 0) {
				free(default_pos.file);
				(void)here(&default_pos);
			}
			free($3);
		}
		;

listentls	: /* empty */			{ $$ = 0; }
		| tlsyes			{ $$ = 1; }
		;

tlsyes		: TLS
		| TLS '{' tlsbody tlslast '}'
		;

tlsbody		: /* empty */
		| tlsbody '\n'
		| tlsbody tlsopt '\n'
		| tlsbody error '\n'		{ yyerrok; }
		;

tlslast		: /* empty */
		| tlsopt
		;

tlsopt		: TLS CERTIFICATE STRING	{
			tls_set(pend_tls.cert, &pend_cert_pos, $3,
			    "tls certificate");
			free($3);
		}
		| TLS KEY STRING		{
			tls_set(pend_tls.key, &pend_key_pos, $3, "tls key");
			free($3);
		}
		;

unixopts	: /* empty */
		| unixopts unixopt
		;

unixopt		: OWNER STRING			{
			if (pend_owner[0] != '\0')
				yyerror("owner given twice");
			else
				(void)setstr(pend_owner, sizeof(pend_owner),
				    $2, "owner");
			free($2);
		}
		| GROUP STRING			{
			if (pend_group[0] != '\0')
				yyerror("group given twice");
			else
				(void)setstr(pend_group, sizeof(pend_group),
				    $2, "group");
			free($2);
		}
		| MODE NUMBER			{
			if (pend_mode_set++)
				yyerror("mode given twice");
			else if (mode_octal($2, &pend_mode) == -1)
				yyerror("mode %lld is not an octal mode from "
				    "0 to 0777", (long long)$2);
		}
		;

allowopts	: /* empty */
		| allowopts MODELS names
		| allowopts ADMIN		{ pend_admin = 1; }
		;

names		: STRING			{
			name_add($1);
			free($1);
		}
		| names STRING			{
			name_add($2);
			free($2);
		}
		;

key		: KEY STRING			{
			key_start($2);
			$2 = NULL;	/* freed; still on the stack */
		}
		    '{' kbody klast '}'		{ key_end(); }
		;

kbody		: /* empty */
		| kbody '\n'
		| kbody kopt '\n'
		| kbody error '\n'		{ yyerrok; }
		;

klast		: /* empty */
		| kopt
		;

kopt		: SECRET SECRETFILE STRING	{
			key_secret_file($3);
			free($3);
		}
		| SECRET SHA256 STRING		{
			key_secret_hash($3);
			free($3);
		}
		| MODELS names
		| ADMIN				{ kb->admin = 1; }
		| MAX REQUESTS NUMBER		{
			if ($3 < 1 || $3 > MAX_REQUESTS_MAX)
				yyerror("max requests must be 1 to %d",
				    MAX_REQUESTS_MAX);
			else
				kb->max_requests = $3;
		}
		;

runtime		: RUNTIME STRING		{
			runtime_start($2);
			$2 = NULL;	/* freed; still on the stack */
		}
		    '{' rtbody rtlast '}'	{ runtime_end(); }
		;

rtbody		: /* empty */
		| rtbody '\n'
		| rtbody rtopt '\n'
		| rtbody error '\n'		{ yyerrok; }
		;

rtlast		: /* empty */
		| rtopt
		;

rtopt		: COMMAND STRING		{
			rt_command = 1;
			if (check_command($2) == 0 &&
			    setstr(rt->command, sizeof(rt->command), $2,
			    "command") == 0 && rt_keep)
				pos_note(rt, POS_COMMAND);
			free($2);
		}
		| READY GET STRING		{
			if ($3[0] != '/')
				yyerror("ready path must begin with /");
			else if (setstr(rt->ready_path,
			    sizeof(rt->ready_path), $3, "ready path") == 0) {
				rt->ready_method = READY_GET;
				rt->ready_body[0] = '\0';
			}
			free($3);
		}
		| READY POST STRING		{
			if ($3[0] != '/')
				yyerror("ready path must begin with /");
			else if (setstr(rt->ready_path,
			    sizeof(rt->ready_path), $3, "ready path") == 0) {
				rt->ready_method = READY_POST;
				rt->ready_body[0] = '\0';
			}
			free($3);
		}
		| READY POST STRING BODY STRING	{
			if ($3[0] != '/')
				yyerror("ready path must begin with /");
			else if (setstr(rt->ready_path,
			    sizeof(rt->ready_path), $3, "ready path") == 0 &&
			    setstr(rt->ready_body, sizeof(rt->ready_body), $5,
			    "ready body") == 0)
				rt->ready_method = READY_POST;
			free($3);
			free($5);
		}
		| KIND kind			{ rt->kind = $2; }
		| STOPS ON CLOSE stops		{ rt->stops = $4; }
		| PASSTHROUGH yesno		{ rt->passthrough = $2; }
		| SEND MODEL sendmodel		{ rt->send_model = $3; }
		| LOADING PROGRESS yesno	{ rt->progress = $3; }
		| ENV STRING			{
			if (check_env($2) == 0)
				(void)addstr(&rt->env, $2, AGENCY_ENV_MAX,
				    "env");
			free($2);
		}
		| ROUTE STRING			{
			if ($2[0] != '/')
				yyerror("route must begin with /");
			else if (strlist_contains(&rt->routes, $2))
				yyerror("route \"%s\" given twice", $2);
			else
				(void)addstr(&rt->routes, $2, AGENCY_PATH_MAX,
				    "route");
			free($2);
		}
		| MOVE STRING TO STRING		{
			struct rule_move	*mv;

			if ($2[0] == '\0' || $4[0] == '\0')
				yyerror("empty field name");
			else if (strcmp($2, $4) == 0)
				yyerror("move \"%s\" to itself", $2);
			else if (strlen($2) >= AGENCY_FIELD_MAX ||
			    strlen($4) >= AGENCY_FIELD_MAX)
				yyerror("field name too long");
			else {
				if ((mv = calloc(1, sizeof(*mv))) == NULL)
					fatal("%s: calloc", __func__);
				(void)strlcpy(mv->from, $2, sizeof(mv->from));
				(void)strlcpy(mv->to, $4, sizeof(mv->to));
				TAILQ_INSERT_TAIL(&rt->moves, mv, entry);
			}
			free($2);
			free($4);
		}
		| REFUSE STRING			{
			if ($2[0] == '\0')
				yyerror("empty field name");
			else if (!strlist_contains(&rt->refuse, $2))
				(void)addstr(&rt->refuse, $2, AGENCY_FIELD_MAX,
				    "field name");
			free($2);
		}
		| PART STRING			{
			if ($2[0] == '\0')
				yyerror("empty part type");
			else if (!strlist_contains(&rt->parts, $2))
				(void)addstr(&rt->parts, $2, AGENCY_FIELD_MAX,
				    "part type");
			free($2);
		}
		| MAX TOKENS NUMBER		{
			if ($3 < 1)
				yyerror("max tokens must be more than 0");
			else
				rt->max_tokens = $3;
		}
		;

kind		: CHAT				{ $$ = KIND_CHAT; }
		| EMBEDDING			{ $$ = KIND_EMBEDDING; }
		| SPEECH			{ $$ = KIND_SPEECH; }
		| IMAGE				{ $$ = KIND_IMAGE; }
		| VISION			{ $$ = KIND_VISION; }
		| RERANK			{ $$ = KIND_RERANK; }
		| TRANSCRIPTION			{ $$ = KIND_TRANSCRIPTION; }
		;

stops		: ALWAYS			{ $$ = STOPS_ALWAYS; }
		| NEVER				{ $$ = STOPS_NEVER; }
		| STREAM			{ $$ = STOPS_STREAM; }
		;

sendmodel	: NAME				{ $$ = SEND_NAME; }
		| UPSTREAM			{ $$ = SEND_UPSTREAM; }
		| UNCHANGED			{ $$ = SEND_UNCHANGED; }
		;

model		: MODEL STRING			{
			model_start($2);
			$2 = NULL;	/* freed; still on the stack */
		}
		    '{' mbody mlast '}'		{ model_end(); }
		;

mbody		: /* empty */
		| mbody '\n'
		| mbody mopt '\n'
		| mbody error '\n'		{ yyerrok; }
		;

mlast		: /* empty */
		| mopt
		;

mopt		: RUNTIME STRING		{
			struct runtime_conf	*r;

			model_runtime = 1;
			if ((r = config_find_runtime(conf, $2)) == NULL)
				yyerror("unknown runtime \"%s\"", $2);
			else {
				(void)strlcpy(model->runtime, r->name,
				    sizeof(model->runtime));
				model->rt = r;
			}
			free($2);
		}
		| UPSTREAM STRING		{
			model_upstream = 1;
			if (check_upstream($2) == 0 &&
			    setstr(model->upstream, sizeof(model->upstream),
			    $2, "upstream") == 0 && model_keep)
				pos_note(model, POS_UPSTREAM);
			free($2);
		}
		| LAZY				{ model->lazy = 1; }
		| MEMORY size			{
			if ($2 >= 0) {
				model->memory = $2;
				if (model_keep)
					pos_note(model, POS_MEMORY);
			}
		}
		| IDLE TIMEOUT duration		{
			if ($3 >= 0) {
				model->idle_timeout = $3;
				model_idle_set = 1;
			}
		}
		| LOAD TIMEOUT duration		{
			if ($3 == 0)
				yyerror("load timeout must be more than 0");
			else if ($3 > 0)
				model->load_timeout = $3;
		}
		| MAX TOKENS NUMBER		{
			if ($3 < 1)
				yyerror("max tokens must be more than 0");
			else
				model->max_tokens = $3;
		}
		| QUEUE TIMEOUT duration	{
			if ($3 >= 0)
				model->queue_timeout = $3;
		}
		| MAX QUEUE NUMBER		{
			if ($3 < 1 || $3 > MAX_QUEUE_MAX)
				yyerror("max queue must be 1 to %d",
				    MAX_QUEUE_MAX);
			else
				model->max_queue = $3;
		}
		| MAX REQUESTS NUMBER		{
			if ($3 < 1 || $3 > MAX_REQUESTS_MAX)
				yyerror("max requests must be 1 to %d",
				    MAX_REQUESTS_MAX);
			else
				model->max_requests = $3;
		}
		| ALIAS STRING			{ model_alias($2); }
		| ENV STRING			{
			if (check_env($2) == 0)
				(void)addstr(&model->env, $2, AGENCY_ENV_MAX,
				    "env");
			free($2);
		}
		;

size		: NUMBER			{
			if ($1 > SIZE_LIMIT) {
				yyerror("size %lld is too large: at most "
				    SIZE_LIMIT_STR, (long long)$1);
				$$ = -1;
			} else
				$$ = $1;
		}
		| STRING			{
			$$ = parse_size($1);
			free($1);
		}
		;

duration	: STRING			{
			$$ = parse_duration($1);
			free($1);
		}
		| NUMBER			{
			yyerror("duration %lld needs a unit: ms, s, m or h",
			    (long long)$1);
			$$ = -1;
		}
		;

yesno		: YES				{ $$ = 1; }
		| NO				{ $$ = 0; }
		;

%%

struct keywords {
	const char	*k_name;
	int		 k_val;
};

static void
conf_verror(const char *name, int line, const char *fmt, va_list ap)
{
	char	*msg;

	errors++;
	if (vasprintf(&msg, fmt, ap) == -1)
		fatal("%s: vasprintf", __func__);
	/* Line 0: the whole file, as for one that cannot be read. */
	if (opts & AGENCYD_OPT_NOACTION) {
		if (line > 0)
			fprintf(stderr, "%s:%d: %s\n", name, line, msg);
		else
			fprintf(stderr, "%s: %s\n", name, msg);
	} else if (line > 0)
		log_warnx("%s:%d: %s", name, line, msg);
	else
		log_warnx("%s: %s", name, msg);
	free(msg);
}

/*
 * The parser's "syntax error", said with the word it came at and what
 * was expected where that can be told: a statement that begins with no
 * keyword, a keyword taken for a macro's name.
 */
static void
syntax_say(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	conf_verror(file->name, yylval.lineno, fmt, ap);
	va_end(ap);
}

static void
syntax_error(void)
{
	const char	*near;
	char		 at[SYNTAX_WORD_MAX + 16];
	char		 where[SYNTAX_WORD_MAX + 16] = "";

	if (block_depth > 0)
		(void)snprintf(where, sizeof(where), " in a %s block",
		    block_word);
	if (lex_word[0] != '\0')
		(void)snprintf(at, sizeof(at), "\"%s\"", lex_word);
	else
		(void)strlcpy(at, last_token == '\n' ? "the end of the line" :
		    last_token == 0 ? "the end of the file" : "a brace",
		    sizeof(at));
	near = at;
	if (!stmt_keyword && stmt_tokens <= 2 && stmt_word[0] != '\0')
		syntax_say("unknown statement "
		    "\"%s\"%s: a statement begins with a keyword (see "
		    "agency.conf(5)), and NAME = VALUE defines a macro",
		    stmt_word, where);
	else if (stmt_keyword && stmt_tokens == 2 && last_token == '=')
		syntax_say("\"%s\" is a keyword "
		    "and cannot name a macro", stmt_word);
	else if (stmt_keyword && stmt_tokens == 1)
		syntax_say("\"%s\" cannot begin a statement%s (nor, a keyword, "
		    "name a macro)", stmt_word, where);
	else if (stmt_word[0] != '\0' && stmt_tokens > 1)
		syntax_say("syntax error near %s "
		    "in the \"%s\" statement%s", near, stmt_word, where);
	else
		syntax_say("syntax error near %s%s",
		    near, where);
}

/* A defined macro named inside quotes, where it is not expanded: a
 * warning, since a command may well hold a $ of its own. */
static void
quoted_macros(const char *s)
{
	struct pos	 p;
	char		 name[AGENCY_NAME_MAX];
	size_t		 n;

	for (; (s = strchr(s, '$')) != NULL; s++) {
		for (n = 0; n + 1 < sizeof(name) &&
		    (isalnum((unsigned char)s[n + 1]) || s[n + 1] == '_'); n++)
			name[n] = s[n + 1];
		name[n] = '\0';
		if (n == 0 || symget(name) == NULL)
			continue;
		p.file = file->name;
		p.line = file->lineno;
		conf_warn(&p, 0, "macro $%s is not expanded inside quotes: "
		    "write it outside them", name);
	}
}

int
yyerror(const char *fmt, ...)
{
	va_list	ap;

	/* A token the lexer refused: its message is out already. */
	if (lex_error) {
		lex_error = 0;
		if (strcmp(fmt, "syntax error") == 0)
			return (0);
	}
	if (strcmp(fmt, "syntax error") == 0) {
		syntax_error();
		return (0);
	}
	va_start(ap, fmt);
	conf_verror(file->name, yylval.lineno, fmt, ap);
	va_end(ap);
	return (0);
}

static void
conf_error(const struct pos *p, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	conf_verror(p->file, p->line, fmt, ap);
	va_end(ap);
}

/*
 * What may yet work, such as an upstream file that is not there: a
 * warning, which does not make the file fail.  With error set, a
 * problem of the machine rather than of the file (a program that is
 * not installed): an error for -n, which must not call such a file OK,
 * and a warning for a running agencyd, which may see it installed
 * before the model loads.
 */
static void
conf_warn(const struct pos *p, int error, const char *fmt, ...)
{
	char	*msg;
	va_list	 ap;

	va_start(ap, fmt);
	if (error && (opts & AGENCYD_OPT_NOACTION)) {
		conf_verror(p->file, p->line, fmt, ap);
		va_end(ap);
		return;
	}
	if (vasprintf(&msg, fmt, ap) == -1)
		fatal("%s: vasprintf", __func__);
	va_end(ap);
	if (p->line == 0 && (opts & AGENCYD_OPT_NOACTION))
		fprintf(stderr, "%s: warning: %s\n", p->file, msg);
	else if (opts & AGENCYD_OPT_NOACTION)
		fprintf(stderr, "%s:%d: warning: %s\n", p->file, p->line, msg);
	else if (p->line == 0)
		logit(LOG_WARNING, "%s: warning: %s", p->file, msg);
	else
		logit(LOG_WARNING, "%s:%d: warning: %s", p->file, p->line,
		    msg);
	free(msg);
}

static int
here(struct pos *p)
{
	if ((p->file = strdup(file->name)) == NULL)
		fatal("%s: strdup", __func__);
	p->line = yylval.lineno;
	return (0);
}

static int
kw_cmp(const void *k, const void *e)
{
	return (strcmp(k, ((const struct keywords *)e)->k_name));
}

static int
lookup(const char *s)
{
	/* Sorted, for bsearch. */
	static const struct keywords keywords[] = {
		{ "admin",		ADMIN },
		{ "alias",		ALIAS },
		{ "allow",		ALLOW },
		{ "always",		ALWAYS },
		{ "any",		ANY },
		{ "body",		BODY },
		{ "budget",		BUDGET },
		{ "buffer",		BUFFER },
		{ "certificate",	CERTIFICATE },
		{ "chat",		CHAT },
		{ "close",		CLOSE },
		{ "command",		COMMAND },
		{ "connections",	CONNECTIONS },
		{ "console",		CONSOLE },
		{ "cors",		CORS },
		{ "default",		DEFAULT },
		{ "embedding",		EMBEDDING },
		{ "env",		ENV },
		{ "fairness",		FAIRNESS },
		{ "file",		SECRETFILE },
		{ "get",		GET },
		{ "group",		GROUP },
		{ "header",		HEADER },
		{ "idle",		IDLE },
		{ "image",		IMAGE },
		{ "include",		INCLUDE },
		{ "key",		KEY },
		{ "kind",		KIND },
		{ "lazy",		LAZY },
		{ "listen",		LISTEN },
		{ "load",		LOAD },
		{ "loading",		LOADING },
		{ "max",		MAX },
		{ "memory",		MEMORY },
		{ "mode",		MODE },
		{ "model",		MODEL },
		{ "models",		MODELS },
		{ "move",		MOVE },
		{ "name",		NAME },
		{ "never",		NEVER },
		{ "no",			NO },
		{ "on",			ON },
		{ "origin",		ORIGIN },
		{ "overcommit",		OVERCOMMIT },
		{ "owner",		OWNER },
		{ "part",		PART },
		{ "passthrough",	PASSTHROUGH },
		{ "port",		PORT },
		{ "ports",		PORTS },
		{ "post",		POST },
		{ "progress",		PROGRESS },
		{ "proxy",		PROXY },
		{ "queue",		QUEUE },
		{ "ready",		READY },
		{ "refuse",		REFUSE },
		{ "request",		REQUEST },
		{ "requests",		REQUESTS },
		{ "rerank",		RERANK },
		{ "reserve",		RESERVE },
		{ "restricted",		RESTRICTED },
		{ "route",		ROUTE },
		{ "runtime",		RUNTIME },
		{ "secret",		SECRET },
		{ "send",		SEND },
		{ "server",		SERVER },
		{ "sha256",		SHA256 },
		{ "share",		SHARE },
		{ "shutdown",		SHUTDOWN },
		{ "socket",		SOCKET },
		{ "speech",		SPEECH },
		{ "stops",		STOPS },
		{ "stream",		STREAM },
		{ "timeout",		TIMEOUT },
		{ "tls",		TLS },
		{ "to",			TO },
		{ "tokens",		TOKENS },
		{ "transcription",	TRANSCRIPTION },
		{ "trusted",		TRUSTED },
		{ "unchanged",		UNCHANGED },
		{ "upstream",		UPSTREAM },
		{ "user",		USER },
		{ "vision",		VISION },
		{ "window",		WINDOW },
		{ "yes",		YES },
	};
	const struct keywords	*p;

	p = bsearch(s, keywords, sizeof(keywords) / sizeof(keywords[0]),
	    sizeof(keywords[0]), kw_cmp);
	if (p != NULL)
		return (p->k_val);
	return (STRING);
}

/*
 * One character.  Outside quotes a backslash before a newline joins the
 * lines; inside quotes the string reader handles backslashes itself.
 */
static int
lgetc(int quoted)
{
	int	c, next;

	if (file->nunget > 0)
		return (file->unget[--file->nunget]);
	c = getc(file->stream);
	if (quoted)
		return (c);
	while (c == '\\') {
		next = getc(file->stream);
		if (next != '\n') {
			lungetc(next);
			break;
		}
		file->lineno++;
		c = getc(file->stream);
	}
	return (c);
}

static void
lungetc(int c)
{
	if (c == EOF)
		return;
	if (file->nunget >= MAXUNGET)
		fatalx("%s: too many characters pushed back", __func__);
	file->unget[file->nunget++] = c;
}

/* Skip the rest of a bad line, leaving its newline to end the statement. */
static int
findeol(void)
{
	int	c;

	while ((c = lgetc(0)) != '\n' && c != EOF)
		;
	lungetc(c);
	lex_error = 1;
	return (ERROR);
}

/* Characters of an unquoted word. */
static int
isword(int c)
{
	if (c == EOF || c <= ' ' || c == 0x7f)
		return (0);
	return (strchr("{}=#;\"$", c) == NULL);
}

int
yylex(void)
{
	int	prev = last_token;

	lex_word[0] = '\0';
	last_token = lex();
	if (last_token == '{' && block_depth++ == 0)
		(void)strlcpy(block_word, stmt_word, sizeof(block_word));
	else if (last_token == '}' && block_depth > 0)
		block_depth--;
	if (prev == '\n' || prev == '{' || prev == '}') {
		(void)strlcpy(stmt_word, lex_word, sizeof(stmt_word));
		stmt_keyword = last_token != STRING && last_token != NUMBER &&
		    lex_word[0] != '\0';
		stmt_tokens = 0;
	}
	stmt_tokens++;
	return (last_token);
}

static int
lex(void)
{
	char		 buf[8192], name[AGENCY_NAME_MAX];
	const char	*val;
	char		*p;
	const char	*errstr;
	int		 c, next, expanded, digits;
	size_t		 n;

top:
	p = buf;
	while ((c = lgetc(0)) == ' ' || c == '\t')
		;
	yylval.lineno = file->lineno;
	if (c == '#')
		while ((c = lgetc(0)) != '\n' && c != EOF)
			;
	if (c == EOF) {
		/* Every file's last statement ends, newline or not. */
		if (last_token != '\n')
			return ('\n');
		if (popfile() == EOF)
			return (0);
		goto top;
	}
	if (c == '\n') {
		yylval.lineno = file->lineno++;
		return ('\n');
	}
	if (c == ';') {
		/* Ends a statement as a newline does. */
		return ('\n');
	}
	if (c == '{' || c == '}' || c == '=')
		return (c);

	if (c == '"') {
		for (;;) {
			c = lgetc(1);
			if (c == EOF || c == '\n') {
				lungetc(c);
				yyerror("unterminated quoted string");
				return (findeol());
			}
			if (c == '"')
				break;
			if (c == '\\') {
				next = lgetc(1);
				if (next == '\n') {
					file->lineno++;
					continue;
				}
				if (next == '"' || next == '\\')
					c = next;
				else
					lungetc(next);
			} else if (c < ' ' && c != '\t') {
				yyerror("control character in string");
				return (findeol());
			}
			if (p + 1 >= buf + sizeof(buf)) {
				yyerror("string too long");
				return (findeol());
			}
			*p++ = c;
		}
		*p = '\0';
		(void)strlcpy(lex_word, buf, sizeof(lex_word));
		quoted_macros(buf);
		if ((yylval.v.string = strdup(buf)) == NULL)
			fatal("%s: strdup", __func__);
		return (STRING);
	}

	if (!isword(c) && c != '$') {
		yyerror("unexpected character '%c'", c);
		return (findeol());
	}

	/* A word; $name in it is replaced by the macro's value. */
	expanded = 0;
	do {
		if (c == '$') {
			n = 0;
			while ((c = lgetc(0)) != EOF &&
			    (isalnum(c) || c == '_')) {
				if (n + 1 >= sizeof(name)) {
					yyerror("macro name too long");
					return (findeol());
				}
				name[n++] = c;
			}
			lungetc(c);
			name[n] = '\0';
			if (n == 0) {
				yyerror("$ without a macro name");
				return (findeol());
			}
			if ((val = symget(name)) == NULL) {
				yyerror("macro \"%s\" not defined", name);
				return (findeol());
			}
			if (strlen(val) >= (size_t)(buf + sizeof(buf) - p)) {
				yyerror("string too long");
				return (findeol());
			}
			p += strlcpy(p, val, buf + sizeof(buf) - p);
			expanded = 1;
			continue;
		}
		if (p + 1 >= buf + sizeof(buf)) {
			yyerror("string too long");
			return (findeol());
		}
		*p++ = c;
	} while ((c = lgetc(0)) != EOF && (isword(c) || c == '$'));
	lungetc(c);
	*p = '\0';
	(void)strlcpy(lex_word, buf, sizeof(lex_word));

	/* An expanded word is never a keyword. */
	if (!expanded && lookup(buf) != STRING)
		return (lookup(buf));

	digits = buf[0] != '\0';
	for (p = buf; *p != '\0'; p++)
		if (!isdigit((unsigned char)*p))
			digits = 0;
	if (digits) {
		yylval.v.number = strtonum(buf, 0, INT64_MAX, &errstr);
		if (errstr != NULL) {
			yyerror("number %s is %s", buf, errstr);
			return (findeol());
		}
		return (NUMBER);
	}
	if ((yylval.v.string = strdup(buf)) == NULL)
		fatal("%s: strdup", __func__);
	return (STRING);
}

/*
 * Open a configuration file without blocking (a FIFO or a device would
 * hang agencyd on open or read), look at what it is through the open
 * descriptor, and only then read it.  As root, the file must also be
 * root's and written by no one else, as sshd and smtpd want theirs:
 * whoever can write it chooses the programs agencyd runs.  0 with *fp
 * and *mode (the permission bits) set, or -1 with why in why.
 */
static int
conf_open(const char *path, FILE **fp, int *mode, char *why, size_t whylen)
{
	struct stat	 st;
	int		 fd, flags;

	*fp = NULL;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1) {
		(void)strlcpy(why, strerror(errno), whylen);
		return (-1);
	}
	if (fstat(fd, &st) == -1)
		(void)strlcpy(why, strerror(errno), whylen);
	else if (S_ISDIR(st.st_mode))
		(void)strlcpy(why, strerror(EISDIR), whylen);
	else if (!S_ISREG(st.st_mode))
		(void)strlcpy(why, "not a regular file", whylen);
	else if (geteuid() == 0 && st.st_uid != 0)
		(void)snprintf(why, whylen, "owned by uid %lu, not by root",
		    (unsigned long)st.st_uid);
	else if (geteuid() == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)))
		(void)snprintf(why, whylen, "writable by %s (mode %04o)",
		    (st.st_mode & S_IWOTH) ? "others" : "its group",
		    (unsigned int)(st.st_mode & 07777));
	else if ((flags = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1 ||
	    (*fp = fdopen(fd, "r")) == NULL)
		(void)strlcpy(why, strerror(errno), whylen);
	if (*fp == NULL) {
		close(fd);
		return (-1);
	}
	*mode = st.st_mode & 07777;
	return (0);
}

static struct file *
pushfile(const char *name, int included)
{
	struct file	*nfile;
	char		*path = NULL;
	const char	*slash;
	char		 why[128];
	int		 depth = 0;

	TAILQ_FOREACH(nfile, &files, entry)
		depth++;
	if (depth >= MAXINCLUDE) {
		yyerror("include nested too deeply");
		return (NULL);
	}
	/* A relative include is found next to the file that includes it. */
	if (included && name[0] != '/' &&
	    (slash = strrchr(file->name, '/')) != NULL) {
		if (asprintf(&path, "%.*s/%s", (int)(slash - file->name),
		    file->name, name) == -1)
			fatal("%s: asprintf", __func__);
	} else if ((path = strdup(name)) == NULL)
		fatal("%s: strdup", __func__);

	if ((nfile = calloc(1, sizeof(*nfile))) == NULL)
		fatal("%s: calloc", __func__);
	nfile->name = path;
	if (conf_open(path, &nfile->stream, &nfile->mode, why,
	    sizeof(why)) == -1) {
		if (included)
			yyerror("%s: %s", path, why);
		else if (opts & AGENCYD_OPT_NOACTION) {
			fprintf(stderr, "%s: %s\n", path, why);
			errors++;
		} else {
			log_warnx("%s: %s", path, why);
			errors++;
		}
		free(nfile->name);
		free(nfile);
		return (NULL);
	}
	nfile->lineno = 1;
	TAILQ_INSERT_TAIL(&files, nfile, entry);
	return (nfile);
}

static int
popfile(void)
{
	struct file	*prev;

	if ((prev = TAILQ_PREV(file, files, entry)) == NULL)
		return (EOF);
	TAILQ_REMOVE(&files, file, entry);
	fclose(file->stream);
	free(file->name);
	free(file);
	file = prev;
	return (0);
}

static void
closefiles(void)
{
	struct file	*f;

	while ((f = TAILQ_FIRST(&files)) != NULL) {
		TAILQ_REMOVE(&files, f, entry);
		fclose(f->stream);
		free(f->name);
		free(f);
	}
	file = NULL;
}

static int
symset(const char *name, const char *val, int persist)
{
	struct sym	*sym;

	TAILQ_FOREACH(sym, &symhead, entry) {
		if (strcmp(sym->name, name) == 0)
			break;
	}
	if (sym != NULL) {
		if (sym->persist)
			return (0);	/* -D wins over the file */
		TAILQ_REMOVE(&symhead, sym, entry);
		free(sym->name);
		free(sym->val);
		free(sym);
	}
	if ((sym = calloc(1, sizeof(*sym))) == NULL)
		return (-1);
	if ((sym->name = strdup(name)) == NULL ||
	    (sym->val = strdup(val)) == NULL) {
		free(sym->name);
		free(sym);
		return (-1);
	}
	sym->persist = persist;
	TAILQ_INSERT_TAIL(&symhead, sym, entry);
	return (0);
}

static const char *
symget(const char *name)
{
	struct sym	*sym;

	TAILQ_FOREACH(sym, &symhead, entry) {
		if (strcmp(sym->name, name) == 0)
			return (sym->val);
	}
	return (NULL);
}

/* Macros from the file go; those from -D stay for a reload. */
static void
symclear(void)
{
	struct sym	*sym, *next;

	for (sym = TAILQ_FIRST(&symhead); sym != NULL; sym = next) {
		next = TAILQ_NEXT(sym, entry);
		if (sym->persist)
			continue;
		TAILQ_REMOVE(&symhead, sym, entry);
		free(sym->name);
		free(sym->val);
		free(sym);
	}
}

int
cmdline_symset(char *s)
{
	char		*eq, *name;
	const char	*c;
	int		 ret;

	if ((eq = strchr(s, '=')) == NULL || eq == s)
		return (-1);
	if ((name = strndup(s, eq - s)) == NULL)
		return (-1);
	for (c = name; *c != '\0'; c++)
		if (!isalnum((unsigned char)*c) && *c != '_') {
			free(name);
			return (-1);
		}
	ret = symset(name, eq + 1, 1);
	free(name);
	return (ret);
}

static char *
xstrdup(const char *s)
{
	char	*d;

	if ((d = strdup(s)) == NULL)
		fatal("%s: strdup", __func__);
	return (d);
}

/* Copy a string into one of the fixed arrays of config.h. */
static int
setstr(char *dst, size_t len, const char *s, const char *what)
{
	if (s[0] == '\0') {
		yyerror("empty %s", what);
		return (-1);
	}
	if (strlen(s) >= len) {
		yyerror("%s too long", what);
		return (-1);
	}
	(void)strlcpy(dst, s, len);
	return (0);
}

static int
addstr(struct strlist *list, const char *s, size_t max, const char *what)
{
	if (s[0] == '\0') {
		yyerror("empty %s", what);
		return (-1);
	}
	if (strlen(s) >= max) {
		yyerror("%s too long", what);
		return (-1);
	}
	if (strlist_add(list, s) == -1)
		fatal("%s: strlist_add", __func__);
	return (0);
}

/*
 * A trusted proxy's address as the proxy compares it with a client's:
 * an IPv4 or IPv6 address (no brackets, no port, no prefix), written
 * as inet_ntop writes it.  NULL, with the error said, if it is none.
 */
static char *
proxy_addr(const char *s)
{
	struct in6_addr	 in6;
	struct in_addr	 in4;
	char		 buf[INET6_ADDRSTRLEN];
	const char	*p = NULL;

	if (inet_pton(AF_INET, s, &in4) == 1)
		p = inet_ntop(AF_INET, &in4, buf, sizeof(buf));
	else if (inet_pton(AF_INET6, s, &in6) == 1)
		p = inet_ntop(AF_INET6, &in6, buf, sizeof(buf));
	if (p == NULL) {
		yyerror("trusted proxy \"%s\" is not an IPv4 or IPv6 address",
		    s);
		return (NULL);
	}
	return (xstrdup(p));
}

/*
 * A server name as the front door compares it with a request's Host: a
 * host name, an IPv4 address or an IPv6 address in brackets, then
 * optionally ":" and a port; in lower case, the port without leading
 * zeroes.  NULL, with the error said, if it is none of these.  What is
 * the statement's name for the error, whole what the statement gave
 * (of which s is the host part).
 */
static char *
host_norm(const char *s, const char *what, const char *whole)
{
	struct in6_addr	 in6;
	struct in_addr	 in4;
	const char	*p, *colon = NULL, *errstr;
	char		 host[AGENCY_NAME_MAX], *name;
	long long	 port = 0;
	size_t		 n, label = 0, i;

	if (s[0] == '[') {
		if ((p = strchr(s, ']')) == NULL)
			goto bad;
		if (p[1] == ':')
			colon = p + 1;
		else if (p[1] != '\0')
			goto bad;
		n = p + 1 - s;
	} else {
		if ((colon = strchr(s, ':')) != NULL &&
		    strchr(colon + 1, ':') != NULL) {
			yyerror("%s \"%s\": an IPv6 address needs "
			    "brackets", what, whole);
			return (NULL);
		}
		n = colon != NULL ? (size_t)(colon - s) : strlen(s);
	}
	if (n == 0 || n >= sizeof(host))
		goto bad;
	for (i = 0; i < n; i++)
		host[i] = tolower((unsigned char)s[i]);
	host[n] = '\0';
	if (colon != NULL) {
		if (strspn(colon + 1, "0123456789") != strlen(colon + 1))
			errstr = "invalid";
		else
			port = strtonum(colon + 1, 1, 65535, &errstr);
		if (errstr != NULL) {
			yyerror("%s \"%s\": port is %s", what, whole,
			    errstr);
			return (NULL);
		}
	}
	if (host[0] == '[') {
		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &in6) != 1)
			goto bad;
		host[n - 1] = ']';
	} else if (inet_pton(AF_INET, host, &in4) != 1) {
		/*
		 * A DNS name: labels of letters, digits and hyphens, not
		 * at either end of one.
		 */
		for (i = 0; i <= n; i++) {
			if (host[i] == '.' || host[i] == '\0') {
				if (label == 0 || label > 63 ||
				    host[i - 1] == '-')
					goto bad;
				label = 0;
			} else if (isalnum((unsigned char)host[i]) ||
			    (host[i] == '-' && label > 0))
				label++;
			else
				goto bad;
		}
	}
	if (colon != NULL) {
		if (asprintf(&name, "%s:%lld", host, port) == -1)
			fatal("%s: asprintf", __func__);
	} else if ((name = strdup(host)) == NULL)
		fatal("%s: strdup", __func__);
	return (name);
 bad:
	yyerror("invalid %s \"%s\"", what, whole);
	return (NULL);
}

/*
 * A CORS origin as browsers send it in Origin: http or https, "://",
 * a host as for a server name and an optional port; in lower case,
 * without the scheme's default port.  NULL, with the error said, if it
 * is not one (a wildcard never is).
 */
static char *
cors_origin(const char *s)
{
	const char	*rest;
	char		*host, *origin, *colon;
	int		 https;

	if (strcmp(s, "*") == 0) {
		yyerror("cors origin \"*\": list each origin; a wildcard is "
		    "never allowed");
		return (NULL);
	}
	if (strncasecmp(s, "https://", 8) == 0) {
		https = 1;
		rest = s + 8;
	} else if (strncasecmp(s, "http://", 7) == 0) {
		https = 0;
		rest = s + 7;
	} else {
		yyerror("cors origin \"%s\" is not http://HOST or "
		    "https://HOST, with an optional port", s);
		return (NULL);
	}
	if (strchr(rest, '/') != NULL || strchr(rest, '?') != NULL ||
	    strchr(rest, '#') != NULL) {
		yyerror("cors origin \"%s\" has a path: an origin is only "
		    "the scheme, host and port", s);
		return (NULL);
	}
	if ((host = host_norm(rest, "cors origin", s)) == NULL)
		return (NULL);
	/* The default port is what browsers leave out. */
	if ((colon = strrchr(host, ':')) != NULL && strchr(colon, ']') == NULL &&
	    strcmp(colon + 1, https ? "443" : "80") == 0)
		*colon = '\0';
	if (asprintf(&origin, "%s://%s", https ? "https" : "http", host) == -1)
		fatal("%s: asprintf", __func__);
	free(host);
	if (strlen(origin) >= AGENCY_ORIGIN_MAX) {
		yyerror("cors origin \"%s\" too long", s);
		free(origin);
		return (NULL);
	}
	return (origin);
}

/* %p port, %s socket, %u upstream, %m model name, %% a percent sign. */
static int
check_command(const char *cmd)
{
	struct spawn_tokens	 t = { "0", "/s", "u", "m" };
	const char		*s;
	char			**argv, err[SPAWN_ERR_MAX];
	int			 port = 0;

	for (s = cmd; *s != '\0'; s++) {
		if (*s != '%')
			continue;
		switch (s[1]) {
		case 'p':
		case 's':
			port = 1;
			break;
		case 'u':
		case 'm':
		case '%':
			break;
		case '\0':
			yyerror("command ends with a lone %%");
			return (-1);
		default:
			yyerror("unknown placeholder %%%c in command", s[1]);
			return (-1);
		}
		s++;
	}
	if (!port) {
		yyerror("command has neither %%p for the port nor %%s for "
		    "a socket");
		return (-1);
	}
	/* What spawn will make of it: quotes, an empty or relative program. */
	if (spawn_argv(cmd, &t, &argv, err, sizeof(err)) == -1) {
		yyerror("%s", err);
		return (-1);
	}
	spawn_argv_free(argv);
	return (0);
}

/*
 * An absolute path, or a bare model id ("name" or "org/name") that the
 * runtime resolves itself; anything else would depend on agencyd's
 * working directory.  One that looks like an id ("models/x.gguf") but
 * names a file beside the configuration file would be taken for an id:
 * refused, saying what it names.
 */
static int
check_upstream(const char *up)
{
	struct stat	 st;
	const char	*s, *comp, *slash;
	char		*near = NULL;
	const char	*path;
	size_t		 len;
	int		 ncomp = 0, rv = 0;

	if (up[0] == '/' || up[0] == '\0')
		return (0);	/* setstr reports the empty one */
	for (comp = up;; comp = s + 1) {
		if ((s = strchr(comp, '/')) == NULL)
			s = comp + strlen(comp);
		len = s - comp;
		ncomp++;
		if (len == 0 || (len == 1 && comp[0] == '.') ||
		    (len == 2 && comp[0] == '.' && comp[1] == '.') ||
		    ncomp > 2) {
			yyerror("upstream \"%s\" is a relative path: use an "
			    "absolute path or a model id", up);
			return (-1);
		}
		if (*s == '\0')
			break;
	}
	/* An id, unless a file by that name is beside the configuration
	 * file that says it (a name without a directory is beside us). */
	if ((slash = strrchr(file->name, '/')) != NULL &&
	    asprintf(&near, "%.*s/%s", (int)(slash - file->name), file->name,
	    up) == -1)
		fatal("%s: asprintf", __func__);
	path = near != NULL ? near : up;
	if (stat(path, &st) == 0) {
		yyerror("upstream \"%s\" would be taken as a model id, but "
		    "names the file %s: use its absolute path", up, path);
		rv = -1;
	}
	free(near);
	return (rv);
}

static int
check_env(const char *kv)
{
	const char	*s;

	for (s = kv; *s != '\0' && *s != '='; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			break;
	if (s == kv || *s != '=' || isdigit((unsigned char)kv[0])) {
		yyerror("env \"%s\" is not NAME=value", kv);
		return (-1);
	}
	return (0);
}

/* A number of bytes with an optional K, M, G or T (powers of 1024). */
static int64_t
parse_size(const char *s)
{
	const char	*errstr;
	char		*num;
	size_t		 len = strlen(s);
	int64_t		 v, mult = 1;

	if (len > 1) {
		switch (s[len - 1]) {
		case 'K':
		case 'k':
			mult = 1LL << 10;
			break;
		case 'M':
		case 'm':
			mult = 1LL << 20;
			break;
		case 'G':
		case 'g':
			mult = 1LL << 30;
			break;
		case 'T':
		case 't':
			mult = 1LL << 40;
			break;
		default:
			break;
		}
	}
	if ((num = strndup(s, mult == 1 ? len : len - 1)) == NULL)
		fatal("%s: strndup", __func__);
	if (num[0] == '\0' || strspn(num, "0123456789") != strlen(num)) {
		yyerror("invalid size \"%s\": a number with K, M, G or T", s);
		free(num);
		return (-1);
	}
	v = strtonum(num, 0, SIZE_LIMIT / mult, &errstr);
	free(num);
	if (errstr != NULL) {
		yyerror("size \"%s\" is too large: at most " SIZE_LIMIT_STR,
		    s);
		return (-1);
	}
	return (v * mult);
}

/* A duration in milliseconds: a number with ms, s, m or h. */
static int64_t
parse_duration(const char *s)
{
	const char	*errstr;
	char		*num;
	size_t		 n, len = strlen(s);
	int64_t		 v, mult;

	n = strspn(s, "0123456789");
	if (n == 0 || n == len)
		goto bad;
	if (strcmp(s + n, "ms") == 0)
		mult = 1;
	else if (strcmp(s + n, "s") == 0)
		mult = 1000;
	else if (strcmp(s + n, "m") == 0)
		mult = 60 * 1000;
	else if (strcmp(s + n, "h") == 0)
		mult = 60 * 60 * 1000;
	else
		goto bad;
	if ((num = strndup(s, n)) == NULL)
		fatal("%s: strndup", __func__);
	v = strtonum(num, 0, INT64_MAX / mult, &errstr);
	free(num);
	if (errstr != NULL) {
		yyerror("duration \"%s\" is too large", s);
		return (-1);
	}
	return (v * mult);
 bad:
	yyerror("invalid duration \"%s\": a number with ms, s, m or h", s);
	return (-1);
}

/* A listener's position: line, the line its statement began on. */
static void
listen_pos_add(int line)
{
	listen_pos = reallocarray(listen_pos, nlisten_pos + 1,
	    sizeof(*listen_pos));
	if (listen_pos == NULL)
		fatal("%s: reallocarray", __func__);
	(void)here(&listen_pos[nlisten_pos]);
	listen_pos[nlisten_pos++].line = line;
}

/*
 * A TCP listener, with TLS or not; a TLS one takes the files of its
 * block (pend_tls), if it had one.  line is where the statement began.
 */
static int
add_listen(const char *host, int64_t port, int tls, int line)
{
	struct addrinfo		 hints, *res;
	struct listen_conf	*lc, *l;
	struct in_addr		 in4;
	const char		*addr = host;
	int			 error;

	if (port < 1 || port > 65535) {
		yyerror("listen port %lld is outside 1 to 65535",
		    (long long)port);
		return (-1);
	}
	if (strlen(host) >= sizeof(lc->host)) {
		yyerror("listen address too long");
		return (-1);
	}
	/* No resolver: localhost is always the IPv4 loopback. */
	if (strcmp(host, "localhost") == 0)
		addr = "127.0.0.1";

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	if (strchr(addr, ':') != NULL)
		hints.ai_family = AF_INET6;
	else {
		/* getaddrinfo would take "1" or "127.1"; we do not. */
		hints.ai_family = AF_INET;
		if (inet_pton(AF_INET, addr, &in4) != 1) {
			yyerror("invalid listen address \"%s\"", host);
			return (-1);
		}
	}
	if ((error = getaddrinfo(addr, NULL, &hints, &res)) != 0) {
		yyerror("invalid listen address \"%s\"", host);
		return (-1);
	}
	if ((lc = calloc(1, sizeof(*lc))) == NULL)
		fatal("%s: calloc", __func__);
	memcpy(&lc->ss, res->ai_addr, res->ai_addrlen);
	lc->sslen = res->ai_addrlen;
	freeaddrinfo(res);
	if (lc->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&lc->ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&lc->ss)->sin6_port = htons(port);
	(void)strlcpy(lc->host, host, sizeof(lc->host));
	lc->port = port;
	lc->fd = -1;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (l->sslen == lc->sslen &&
		    memcmp(&l->ss, &lc->ss, lc->sslen) == 0) {
			yyerror("listen on %s port %lld given twice", host,
			    (long long)port);
			free(lc);
			return (-1);
		}
	}
	lc->tls = tls;
	if (tls && (pend_tls.cert[0] != '\0' || pend_tls.key[0] != '\0')) {
		lc->tls_own = 1;
		(void)strlcpy(lc->tlsf.cert, pend_tls.cert,
		    sizeof(lc->tlsf.cert));
		(void)strlcpy(lc->tlsf.key, pend_tls.key,
		    sizeof(lc->tlsf.key));
		/* Where they were written, for check_listeners. */
		if (pend_cert_pos.file != NULL)
			pos_note_at(&lc->tlsf, POS_TLS_CERT, &pend_cert_pos);
		if (pend_key_pos.file != NULL)
			pos_note_at(&lc->tlsf, POS_TLS_KEY, &pend_key_pos);
	}
	TAILQ_INSERT_TAIL(&conf->listens, lc, entry);
	listen_pos_add(line);
	return (0);
}

/*
 * A Unix-socket listener at path, with the owner, group and mode its
 * statement gave (pend_*), the names resolved now.
 */
static int
add_unix_listen(const char *path)
{
	struct sockaddr_un	*sun;
	struct listen_conf	*lc, *l;
	struct passwd		*pw;
	struct group		*gr;

	if (path[0] != '/') {
		yyerror("listen on \"%s\": a Unix socket's path must be "
		    "absolute (or give a port)", path);
		return (-1);
	}
	if ((lc = calloc(1, sizeof(*lc))) == NULL)
		fatal("%s: calloc", __func__);
	sun = (struct sockaddr_un *)&lc->ss;
	if (strlen(path) >= sizeof(sun->sun_path)) {
		yyerror("listen on \"%s\": path too long for a socket (at "
		    "most %zu bytes)", path, sizeof(sun->sun_path) - 1);
		free(lc);
		return (-1);
	}
	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (strcmp(l->path, path) == 0) {
			yyerror("listen on \"%s\" given twice", path);
			free(lc);
			return (-1);
		}
	}
	sun->sun_family = AF_UNIX;
	(void)strlcpy(sun->sun_path, path, sizeof(sun->sun_path));
	lc->sslen = sizeof(*sun);
	(void)strlcpy(lc->path, path, sizeof(lc->path));
	lc->fd = -1;
	lc->uid = geteuid();
	lc->gid = getegid();
	lc->mode = pend_mode;
	if (pend_owner[0] != '\0') {
		if ((pw = getpwnam(pend_owner)) == NULL) {
			yyerror("listen on \"%s\": unknown owner \"%s\"",
			    path, pend_owner);
			free(lc);
			return (-1);
		}
		lc->uid = pw->pw_uid;
		(void)strlcpy(lc->owner, pend_owner, sizeof(lc->owner));
	}
	if (pend_group[0] != '\0') {
		if ((gr = getgrnam(pend_group)) == NULL) {
			yyerror("listen on \"%s\": unknown group \"%s\"",
			    path, pend_group);
			free(lc);
			return (-1);
		}
		lc->gid = gr->gr_gid;
		(void)strlcpy(lc->group, pend_group, sizeof(lc->group));
	}
	TAILQ_INSERT_TAIL(&conf->listens, lc, entry);
	listen_pos_add(yylval.lineno);
	return (0);
}

/* A mode written in octal digits, which the lexer read as decimal. */
static int
mode_octal(int64_t n, mode_t *mode)
{
	mode_t	m = 0, bit = 1;

	if (n < 0 || n > 777)
		return (-1);
	for (; n > 0; n /= 10, bit *= 8) {
		if (n % 10 > 7)
			return (-1);
		m += (n % 10) * bit;
	}
	*mode = m;
	return (0);
}

/* A tls certificate or tls key path into dst, and where it was. */
static void
tls_set(char *dst, struct pos *p, const char *path, const char *what)
{
	if (path[0] != '/') {
		yyerror("%s \"%s\": the path must be absolute", what, path);
		return;
	}
	if (dst[0] != '\0') {
		yyerror("%s given twice", what);
		return;
	}
	if (setstr(dst, AGENCY_PATH_MAX, path, what) == 0) {
		free(p->file);
		(void)here(p);
	}
}

/* What a listen or allow statement collected, once it is used. */
static void
pending_clear(void)
{
	tls_files_clear(&pend_tls);
	memset(&pend_tls, 0, sizeof(pend_tls));
	free(pend_cert_pos.file);
	free(pend_key_pos.file);
	memset(&pend_cert_pos, 0, sizeof(pend_cert_pos));
	memset(&pend_key_pos, 0, sizeof(pend_key_pos));
	pend_owner[0] = pend_group[0] = '\0';
	pend_mode = DEFAULT_UNIX_MODE;
	pend_mode_set = 0;
	strlist_clear(&pend_names);
	pend_admin = 0;
}

/*
 * A model named by a key or an allow rule, into the list being read
 * (names_into): a model or an alias defined above, each model once.
 */
static void
name_add(const char *name)
{
	struct model_conf	*m;
	struct strent		*se;

	if ((m = config_find_model(conf, name)) == NULL) {
		yyerror("unknown model \"%s\" (models are defined before "
		    "the keys and allow rules that name them)", name);
		return;
	}
	TAILQ_FOREACH(se, names_into, entry) {
		if (config_find_model(conf, se->s) != m)
			continue;
		if (strcmp(se->s, name) == 0)
			yyerror("model \"%s\" given twice", name);
		else
			yyerror("model \"%s\" given twice, as \"%s\" and "
			    "\"%s\"", m->name, se->s, name);
		return;
	}
	if (strlist_add(names_into, name) == -1)
		fatal("%s: strlist_add", __func__);
}

/* Names of keys appear in logs and metric labels: keep them plain. */
static int
key_name_ok(const char *name)
{
	const char	*s;

	if (name[0] == '\0')
		return (0);
	for (s = name; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("._-@", *s) == NULL)
			return (0);
	return (1);
}

static void
key_start(char *name)
{
	if ((kb = calloc(1, sizeof(*kb))) == NULL)
		fatal("%s: calloc", __func__);
	TAILQ_INIT(&kb->models);
	kb->line = yylval.lineno;
	key_secret = key_secret_good = 0;
	(void)here(&key_pos);
	names_into = &kb->models;

	key_keep = 0;
	if (setstr(kb->name, sizeof(kb->name), name, "key name") == 0) {
		if (!key_name_ok(name))
			yyerror("key name \"%s\": use letters, digits and "
			    "\"._-@\" only", name);
		else if (config_find_key(conf, name) != NULL)
			yyerror("key \"%s\" defined twice", name);
		else
			key_keep = 1;
	}
	free(name);
	if (key_keep)
		TAILQ_INSERT_TAIL(&conf->keys, kb, entry);
}

static void
key_secret_file(const char *path)
{
	char	why[256];

	if (key_secret++) {
		yyerror("key \"%s\" has a secret already", kb->name);
		return;
	}
	if (path[0] != '/') {
		yyerror("secret file \"%s\": the path must be absolute",
		    path);
		return;
	}
	if (setstr(kb->secret_file, sizeof(kb->secret_file), path,
	    "secret file") == -1)
		return;
	if (secret_file_digest(path, kb->digest, why, sizeof(why)) == -1)
		yyerror("secret file \"%s\": %s", path, why);
	else
		key_secret_good = 1;
}

/*
 * A key by its SHA-256: unsalted and fast, so a file others may read
 * gives them any key short enough to guess.  For random keys only
 * (agency.conf(5)); in a file others may read, an error for -n and a
 * warning for a running agencyd, which must not refuse a file it ran
 * with before.
 */
static void
key_secret_hash(const char *hex)
{
	struct pos	 p;

	if (key_secret++) {
		yyerror("key \"%s\" has a secret already", kb->name);
		return;
	}
	if (file->mode & S_IROTH) {
		here(&p);
		conf_warn(&p, 1, "secret sha256 of key \"%s\" in a file "
		    "others may read (mode %04o): an unsalted SHA-256 gives "
		    "away a key short enough to guess; make the file 0600 "
		    "or 0640, or use secret file", kb->name,
		    (unsigned int)file->mode);
		free(p.file);
	}
	if (sha256_unhex(hex, kb->digest) == -1)
		yyerror("secret sha256 \"%.80s\" is not 64 hexadecimal "
		    "digits", hex);
	else
		key_secret_good = 1;
}

static void
key_end(void)
{
	struct key_conf	*k;

	if (!key_secret)
		conf_error(&key_pos, "key \"%s\" has no secret", kb->name);
	else if (key_keep && key_secret_good) {
		/* The proxy could not tell the two apart.  (A key whose
		 * secret could not be read has had its error.) */
		TAILQ_FOREACH(k, &conf->keys, entry)
			if (k != kb && sha256_equal(k->digest,
			    kb->digest)) {
				conf_error(&key_pos, "key \"%s\" has the "
				    "secret of key \"%s\"", kb->name,
				    k->name);
				break;
			}
	}
	if (!key_keep)
		config_key_free(kb);
	kb = NULL;
	names_into = &pend_names;
	free(key_pos.file);
	key_pos.file = NULL;
}

/* An allow rule, with the models and admin its statement gave. */
static void
allow_add(enum allow_kind kind, const char *name)
{
	struct allow_conf	*a;
	struct passwd		*pw;
	struct group		*gr;
	const char		*what = kind == ALLOW_USER ? "user" : "group";
	uint32_t		 id;

	if (strlen(name) >= AGENCY_NAME_MAX || name[0] == '\0') {
		yyerror("invalid %s name \"%.80s\"", what, name);
		goto done;
	}
	if (kind == ALLOW_USER) {
		if ((pw = getpwnam(name)) == NULL) {
			yyerror("allow user \"%s\": unknown user", name);
			goto done;
		}
		id = pw->pw_uid;
	} else {
		if ((gr = getgrnam(name)) == NULL) {
			yyerror("allow group \"%s\": unknown group", name);
			goto done;
		}
		id = gr->gr_gid;
	}
	TAILQ_FOREACH(a, &conf->allows, entry)
		if (a->kind == kind && a->id == id) {
			yyerror("allow %s \"%s\" given twice", what, name);
			goto done;
		}
	if ((a = calloc(1, sizeof(*a))) == NULL)
		fatal("%s: calloc", __func__);
	a->kind = kind;
	(void)strlcpy(a->name, name, sizeof(a->name));
	a->id = id;
	a->admin = pend_admin;
	TAILQ_INIT(&a->models);
	TAILQ_CONCAT(&a->models, &pend_names, entry);
	TAILQ_INSERT_TAIL(&conf->allows, a, entry);
	if (allow_pos.file == NULL)
		(void)here(&allow_pos);
 done:
	pending_clear();
}

static void
runtime_start(char *name)
{
	if ((rt = config_runtime_new()) == NULL)
		fatal("%s: calloc", __func__);
	rt->ready_method = READY_GET;
	(void)strlcpy(rt->ready_path, "/health", sizeof(rt->ready_path));
	rt->kind = KIND_CHAT;
	rt->stops = STOPS_ALWAYS;
	rt->send_model = SEND_NAME;
	rt->progress = -1;		/* the global one, after parsing */
	rt->line = yylval.lineno;
	rt_command = 0;
	(void)here(&rt_pos);

	/* A bad runtime is still read, for the errors inside it. */
	rt_keep = 0;
	if (setstr(rt->name, sizeof(rt->name), name, "runtime name") == 0) {
		if (config_find_runtime(conf, name) != NULL)
			yyerror("runtime \"%s\" defined twice", name);
		else
			rt_keep = 1;
	}
	free(name);
	if (rt_keep)
		TAILQ_INSERT_TAIL(&conf->runtimes, rt, entry);
}

static void
runtime_end(void)
{
	struct rule_move	*mv;

	/* A command that was written but wrong has had its error. */
	if (!rt_command)
		conf_error(&rt_pos, "runtime \"%s\" has no command", rt->name);
	if (!rt_keep) {
		strlist_clear(&rt->env);
		strlist_clear(&rt->routes);
		strlist_clear(&rt->parts);
		strlist_clear(&rt->refuse);
		while ((mv = TAILQ_FIRST(&rt->moves)) != NULL) {
			TAILQ_REMOVE(&rt->moves, mv, entry);
			free(mv);
		}
		free(rt);
	}
	rt = NULL;
	free(rt_pos.file);
	rt_pos.file = NULL;
}

static void
model_start(char *name)
{
	struct model_conf	*m;

	if ((model = config_model_new()) == NULL)
		fatal("%s: calloc", __func__);
	model->load_timeout = -1;	/* the global one, after parsing */
	model->queue_timeout = -1;	/* the same */
	model->line = yylval.lineno;
	model_idle_set = 0;
	model_runtime = model_upstream = 0;
	(void)here(&model_pos);

	model_keep = 0;
	if (setstr(model->name, sizeof(model->name), name, "model name") == 0) {
		if ((m = config_find_model(conf, name)) == NULL)
			model_keep = 1;
		else if (strcmp(m->name, name) == 0)
			yyerror("model \"%s\" defined twice", name);
		else
			yyerror("model \"%s\" is already an alias of "
			    "model \"%s\"", name, m->name);
	}
	free(name);
	if (model_keep)
		TAILQ_INSERT_TAIL(&conf->models, model, entry);
}

static void
model_alias(char *alias)
{
	struct model_conf	*m;

	if (alias[0] == '\0')
		yyerror("empty alias");
	else if (strlen(alias) >= AGENCY_NAME_MAX)
		yyerror("alias too long");
	else if ((m = config_find_model(conf, alias)) != NULL ||
	    strcmp(alias, model->name) == 0 ||
	    strlist_contains(&model->aliases, alias)) {
		if (m == NULL || strcmp(m->name, alias) != 0)
			yyerror("alias \"%s\" given twice", alias);
		else
			yyerror("alias \"%s\" is the name of a model", alias);
	} else if (strlist_add(&model->aliases, alias) == -1)
		fatal("%s: strlist_add", __func__);
	free(alias);
}

static void
model_end(void)
{
	if (!model_runtime)
		conf_error(&model_pos, "model \"%s\" has no runtime",
		    model->name);
	if (!model_upstream)
		conf_error(&model_pos, "model \"%s\" has no upstream",
		    model->name);
	if (model_idle_set && !model->lazy && model->idle_timeout != 0)
		conf_error(&model_pos, "model \"%s\" has an idle timeout "
		    "but is not lazy", model->name);
	if (!model_keep) {
		strlist_clear(&model->aliases);
		strlist_clear(&model->env);
		free(model);
	} else if (!model_idle_set)
		model->idle_timeout = -1;	/* the global one */
	model = NULL;
	free(model_pos.file);
	model_pos.file = NULL;
}

/*
 * A runtime or model block that a syntax error cut short (the error was
 * recovered outside it, or the file ended in it) never reaches its end
 * rule: drop what it held without more messages; the error is counted.
 */
static void
block_abandon(void)
{
	struct rule_move	*mv;

	if (rt != NULL && !rt_keep) {
		strlist_clear(&rt->env);
		strlist_clear(&rt->routes);
		strlist_clear(&rt->parts);
		strlist_clear(&rt->refuse);
		while ((mv = TAILQ_FIRST(&rt->moves)) != NULL) {
			TAILQ_REMOVE(&rt->moves, mv, entry);
			free(mv);
		}
		free(rt);
	}
	rt = NULL;
	free(rt_pos.file);
	rt_pos.file = NULL;
	if (model != NULL && !model_keep) {
		strlist_clear(&model->aliases);
		strlist_clear(&model->env);
		free(model);
	}
	model = NULL;
	free(model_pos.file);
	model_pos.file = NULL;
	if (kb != NULL && !key_keep)
		config_key_free(kb);
	kb = NULL;
	names_into = &pend_names;
	free(key_pos.file);
	key_pos.file = NULL;
	pending_clear();
}

/* Where key's what was written: at, or here when at is NULL. */
static void
pos_note_at(const void *key, int what, const struct pos *at)
{
	struct notepos	*n;
	size_t		 i;

	for (i = 0; i < nnotes; i++)
		if (notes[i].key == key && notes[i].what == what)
			break;
	if (i == nnotes) {
		n = reallocarray(notes, nnotes + 1, sizeof(*notes));
		if (n == NULL)
			fatal("%s: reallocarray", __func__);
		notes = n;
		notes[nnotes].key = key;
		notes[nnotes].what = what;
		nnotes++;
	} else
		free(notes[i].pos.file);	/* the last one counts */
	if (at == NULL)
		(void)here(&notes[i].pos);
	else {
		if ((notes[i].pos.file = strdup(at->file)) == NULL)
			fatal("%s: strdup", __func__);
		notes[i].pos.line = at->line;
	}
}

static void
pos_note(const void *key, int what)
{
	pos_note_at(key, what, NULL);
}

/* Where it was written; the whole file when it was not. */
static const struct pos *
pos_find(const void *key, int what)
{
	static struct pos	 whole;
	size_t			 i;

	for (i = 0; i < nnotes; i++)
		if (notes[i].key == key && notes[i].what == what)
			return (&notes[i].pos);
	whole.file = top_name;
	whole.line = 0;
	return (&whole);
}

static void
pos_free(void)
{
	size_t	i;

	for (i = 0; i < nnotes; i++)
		free(notes[i].pos.file);
	free(notes);
	notes = NULL;
	nnotes = 0;
}

/*
 * Neither user may be root, and they must differ: the proxy must not be
 * able to signal or trace the model servers, nor they it.  An unknown
 * user is agencyd's business at start-up (the -n of a file for another
 * machine may name users this one lacks).
 */
static void
check_users(void)
{
	struct pos	 whole = { top_name, 0 };
	const struct pos *up, *mp;
	struct passwd	*pw;
	uid_t		 uid = 0;
	int		 known = 0;

	up = user_pos.file != NULL ? &user_pos : &whole;
	mp = model_user_pos.file != NULL ? &model_user_pos : &whole;
	if ((pw = getpwnam(conf->user)) != NULL) {
		if (pw->pw_uid == 0)
			conf_error(up, "user \"%s\" has uid 0: the front door "
			    "never runs as root", conf->user);
		uid = pw->pw_uid;
		known = 1;
	}
	if ((pw = getpwnam(conf->model_user)) != NULL && pw->pw_uid == 0)
		conf_error(mp, "model user \"%s\" has uid 0: model "
		    "servers never run as root", conf->model_user);
	else if (strcmp(conf->user, conf->model_user) == 0)
		conf_error(mp, "model user \"%s\" is also the user of the "
		    "front door", conf->model_user);
	else if (pw != NULL && known && pw->pw_uid == uid)
		conf_error(mp, "model user \"%s\" has the uid of user "
		    "\"%s\"", conf->model_user, conf->user);
}

/*
 * Needs against the memory budget, as the pool will weigh them (see
 * make_room in pool_change.c): a lazy model loads only while the needs of
 * loaded ones and its own stay within the budget, and the models that
 * are not lazy are never stopped to make room.  A model that could never
 * load is an error; with overcommit the pool loads it anyway.  Only
 * needs written as memory count: one read from the disk may change, and
 * reading it here could walk a whole tree.
 */
static void
check_budget(void)
{
	struct model_conf	*m;
	char			 nbuf[MEM_FMT_LEN], bbuf[MEM_FMT_LEN];
	char			 fbuf[MEM_FMT_LEN];
	int64_t			 fixed = 0;

	if (conf->budget <= 0 || conf->overcommit)
		return;
	TAILQ_FOREACH(m, &conf->models, entry)
		if (!m->lazy && m->memory > 0)
			fixed = m->memory > INT64_MAX - fixed ? INT64_MAX :
			    fixed + m->memory;
	mem_fmt(bbuf, sizeof(bbuf), conf->budget);
	mem_fmt(fbuf, sizeof(fbuf), fixed);
	TAILQ_FOREACH(m, &conf->models, entry) {
		if (m->memory <= 0)
			continue;
		mem_fmt(nbuf, sizeof(nbuf), m->memory);
		if (m->memory > conf->budget)
			conf_error(pos_find(m, POS_MEMORY), "model \"%s\" needs "
			    "%s, more than the whole memory budget of %s",
			    m->name, nbuf, bbuf);
		else if (m->lazy && fixed > conf->budget - m->memory)
			conf_error(pos_find(m, POS_MEMORY), "model \"%s\" needs "
			    "%s, but the models that are not lazy take %s of "
			    "the memory budget of %s", m->name, nbuf, fbuf,
			    bbuf);
	}
}

/* 0 when path is a program that exec could start. */
static int
program_ok(const char *path, char *why, size_t len)
{
	struct stat	st;

	if (stat(path, &st) == -1) {
		(void)strlcpy(why, errno == ENOENT ? "does not exist" :
		    strerror(errno), len);
		return (-1);
	}
	if (!S_ISREG(st.st_mode)) {
		(void)strlcpy(why, "is not a regular file", len);
		return (-1);
	}
	/* For root any x bit does (the model user's rights are the
	 * kernel's to judge at exec); others ask the kernel. */
	if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0 ||
	    (geteuid() != 0 && access(path, X_OK) == -1)) {
		(void)strlcpy(why, "is not executable", len);
		return (-1);
	}
	return (0);
}

/*
 * The program a model's runtime starts, from the argv and environment
 * that spawn.c builds for it, found as the child's exec will look for
 * it.  Each runtime's program is reported once.
 */
static void
check_program(const struct model_conf *m, struct strlist *done)
{
	struct spawn_tokens t = { "0", "/s", NULL, NULL };
	char		**argv = NULL, **envp = NULL, err[SPAWN_ERR_MAX];
	char		  why[64], prog[PATH_MAX];
	const char	 *path = SPAWN_PATH, *dir, *e;
	const struct pos *p;
	size_t		  i, dlen;
	int		  found = 0;

	p = pos_find(m->rt, POS_COMMAND);
	t.upstream = m->upstream;
	t.model = m->name;
	if (spawn_argv(m->rt->command, &t, &argv, err, sizeof(err)) == -1 ||
	    spawn_env(NULL, NULL, m->name, "0", &m->rt->env, &m->env, &envp,
	    err, sizeof(err)) == -1) {
		conf_error(p, "model \"%s\": %s", m->name, err);
		goto done;
	}
	if (strlist_contains(done, m->rt->name))
		goto done;
	if (strchr(argv[0], '/') != NULL) {
		if (program_ok(argv[0], why, sizeof(why)) == -1)
			conf_warn(p, 1, "program \"%s\" %s", argv[0], why);
		goto report;
	}
	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (dir = path; !found; dir = e + 1) {
		if ((e = strchr(dir, ':')) == NULL)
			e = dir + strlen(dir);
		dlen = e - dir;
		if (dlen > 0 && (size_t)snprintf(prog, sizeof(prog), "%.*s/%s",
		    (int)dlen, dir, argv[0]) < sizeof(prog) &&
		    program_ok(prog, why, sizeof(why)) == 0)
			found = 1;
		if (*e == '\0')
			break;
	}
	if (!found)
		conf_warn(p, 1, "program \"%s\" is not found in PATH %s",
		    argv[0], path);
 report:
	if (strlist_add(done, m->rt->name) == -1)
		fatal("%s: strlist_add", __func__);
 done:
	spawn_argv_free(argv);
	spawn_argv_free(envp);
}

/* Whether the models can ever run, as far as the file and disk tell. */
static void
check_runnable(void)
{
	struct model_conf	*m;
	struct strlist		 done;
	struct stat		 st;

	if (TAILQ_EMPTY(&conf->models)) {
		/* After other errors the models may be what they cut. */
		if (errors == 0) {
			struct pos	whole = { top_name, 0 };

			conf_error(&whole, "no model is defined: there is "
			    "nothing to serve");
		}
		return;
	}
	TAILQ_INIT(&done);
	TAILQ_FOREACH(m, &conf->models, entry) {
		if (m->rt == NULL || m->upstream[0] == '\0' ||
		    m->rt->command[0] == '\0')
			continue;
		check_program(m, &done);
		if (m->upstream[0] == '/' && stat(m->upstream, &st) == -1)
			conf_warn(pos_find(m, POS_UPSTREAM), 0,
			    "upstream \"%s\": %s", m->upstream,
			    errno == ENOENT ? "does not exist (yet)" :
			    strerror(errno));
	}
	strlist_clear(&done);
	check_budget();
}

/*
 * A certificate and its key, both given, read and checked: cp and kp
 * are where each was written.
 */
static void
check_tls(struct tls_files *tf, const struct pos *cp, const struct pos *kp)
{
	char	why[512];
	int	bad_key;

	if (tf->cert[0] == '\0')
		conf_error(kp, "tls key \"%s\" without a tls certificate",
		    tf->key);
	else if (tf->key[0] == '\0')
		conf_error(cp, "tls certificate \"%s\" without a tls key",
		    tf->cert);
	else if (tls_files_read(tf, why, sizeof(why), &bad_key) == -1)
		conf_error(bad_key ? kp : cp, "%s \"%s\": %s",
		    bad_key ? "tls key" : "tls certificate",
		    bad_key ? tf->key : tf->cert, why);
}

/*
 * The listeners as a whole: each TLS one has a certificate and key (its
 * own or the global ones), read and checked here; global ones that no
 * listener uses are an error, as a forgotten "tls" would otherwise
 * serve in the clear.  A Unix socket is no control socket, and allow
 * rules need a Unix socket to apply to.
 */
static void
check_listeners(void)
{
	struct pos		 whole = { top_name, 0 };
	const struct pos	*lp;
	struct listen_conf	*lc;
	size_t			 i = 0;
	int			 global = 0, any_unix = 0;

	TAILQ_FOREACH(lc, &conf->listens, entry) {
		lp = i < nlisten_pos ? &listen_pos[i] : &whole;
		i++;
		if (lc->path[0] != '\0') {
			any_unix = 1;
			if (strcmp(lc->path, conf->socket) == 0 ||
			    strcmp(lc->path, conf->rsocket) == 0)
				conf_error(lp, "listen on \"%s\" is also a "
				    "control socket", lc->path);
			continue;
		}
		if (!lc->tls)
			continue;
		if (lc->tls_own)
			check_tls(&lc->tlsf, pos_find(&lc->tlsf, POS_TLS_CERT),
			    pos_find(&lc->tlsf, POS_TLS_KEY));
		else if (conf->tls.cert[0] == '\0' && conf->tls.key[0] == '\0')
			conf_error(lp, "listen on %s port %u tls has no "
			    "certificate: give tls certificate and tls key",
			    lc->host, lc->port);
		else
			global = 1;
	}
	if (global)
		check_tls(&conf->tls, &tls_cert_pos, &tls_key_pos);
	else if (conf->tls.cert[0] != '\0' || conf->tls.key[0] != '\0')
		conf_error(conf->tls.cert[0] != '\0' ? &tls_cert_pos :
		    &tls_key_pos, "no listener uses the global tls "
		    "certificate and key: add tls to a listen on");
	if (!TAILQ_EMPTY(&conf->allows) && !any_unix)
		conf_error(&allow_pos, "allow rules are for Unix-socket "
		    "listeners, and there is none");
}

/* What needs the whole file: defaults that depend on it, and checks. */
static void
check_all(void)
{
	struct listen_conf	*lc;
	struct model_conf	*m;
	struct runtime_conf	*r;
	size_t			 i;

	if (TAILQ_EMPTY(&conf->listens)) {
		if ((lc = calloc(1, sizeof(*lc))) == NULL)
			fatal("%s: calloc", __func__);
		((struct sockaddr_in *)&lc->ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&lc->ss)->sin_addr.s_addr =
		    htonl(INADDR_LOOPBACK);
		((struct sockaddr_in *)&lc->ss)->sin_port = htons(8080);
		lc->sslen = sizeof(struct sockaddr_in);
		(void)strlcpy(lc->host, "127.0.0.1", sizeof(lc->host));
		lc->port = 8080;
		lc->fd = -1;
		TAILQ_INSERT_TAIL(&conf->listens, lc, entry);
		if (lc->port >= conf->port_lo && lc->port <= conf->port_hi &&
		    ports_pos.file != NULL)
			conf_error(&ports_pos, "port range %u to %u holds the "
			    "default listen port %u", conf->port_lo,
			    conf->port_hi, lc->port);
	} else {
		i = 0;
		TAILQ_FOREACH(lc, &conf->listens, entry) {
			if (lc->port >= conf->port_lo &&
			    lc->port <= conf->port_hi)
				conf_error(&listen_pos[i], "listen port %u is "
				    "inside the model port range %u to %u",
				    lc->port, conf->port_lo, conf->port_hi);
			i++;
		}
	}

	if (conf->rsocket[0] != '\0' &&
	    strcmp(conf->rsocket, conf->socket) == 0)
		conf_error(&rsocket_pos, "restricted socket \"%s\" is also "
		    "the control socket", conf->rsocket);

	if (conf->default_model[0] != '\0' &&
	    config_find_model(conf, conf->default_model) == NULL)
		conf_error(&default_pos, "default model \"%s\" is not a model "
		    "or an alias", conf->default_model);

	TAILQ_FOREACH(m, &conf->models, entry) {
		if (m->load_timeout == -1)
			m->load_timeout = conf->load_timeout;
		if (m->idle_timeout == -1)
			m->idle_timeout = m->lazy ? conf->idle_timeout : 0;
		if (m->queue_timeout == -1)
			m->queue_timeout = conf->queue_timeout;
	}
	TAILQ_FOREACH(r, &conf->runtimes, entry)
		if (r->progress == -1)
			r->progress = conf->progress;

	check_listeners();
	check_users();
	check_runnable();
}

struct agency_conf *
parse_config(const char *filename, int xopts)
{
	size_t	i;

	opts = xopts;
	errors = 0;
	lex_error = 0;
	last_token = '\n';
	block_depth = 0;
	if ((conf = config_new()) == NULL)
		fatal("%s: config_new", __func__);

	if ((file = pushfile(filename, 0)) == NULL) {
		config_free(conf);
		return (NULL);
	}
	if ((top_name = strdup(filename)) == NULL)
		fatal("%s: strdup", __func__);
	yyparse();
	block_abandon();
	closefiles();
	check_all();
	symclear();

	for (i = 0; i < nlisten_pos; i++)
		free(listen_pos[i].file);
	free(listen_pos);
	listen_pos = NULL;
	nlisten_pos = 0;
	free(ports_pos.file);
	free(default_pos.file);
	free(rsocket_pos.file);
	free(user_pos.file);
	free(model_user_pos.file);
	free(tls_cert_pos.file);
	free(tls_key_pos.file);
	free(allow_pos.file);
	memset(&tls_cert_pos, 0, sizeof(tls_cert_pos));
	memset(&tls_key_pos, 0, sizeof(tls_key_pos));
	memset(&allow_pos, 0, sizeof(allow_pos));
	pending_clear();
	pos_free();
	free(top_name);
	top_name = NULL;
	memset(&rsocket_pos, 0, sizeof(rsocket_pos));
	memset(&user_pos, 0, sizeof(user_pos));
	memset(&model_user_pos, 0, sizeof(model_user_pos));
	memset(&ports_pos, 0, sizeof(ports_pos));
	memset(&default_pos, 0, sizeof(default_pos));

	if (errors) {
		config_free(conf);
		return (NULL);
	}
	return (conf);
}

/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The configuration, in its two forms: agencyd's (struct agency_conf,
 * as parse.y reads it) and the proxy's (struct pconf, what it keeps of
 * it: confimsg.c sends the one and builds the other).  The global
 * settings the proxy uses are declared once (CONF_PROXY_GLOBALS) in
 * both, and every global setting has a row in conf_globals[] (config.c),
 * which defaults, prints (agencyd -nv), sends and checks them all.
 *
 * A new global setting: its grammar (parse.y), its field here (in
 * CONF_PROXY_GLOBALS when the proxy uses it), its row in conf_globals[],
 * and the code that reads it.
 */
#ifndef AGENCY_CONFIG_H
#define AGENCY_CONFIG_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <stdint.h>

#define AGENCY_NAME_MAX		128	/* model, runtime, alias, user; with NUL */
#define AGENCY_PATH_MAX		1024	/* upstream, socket, probe path */
#define AGENCY_CMD_MAX		4096	/* a command template */
#define AGENCY_ENV_MAX		1024	/* one K=V */
#define AGENCY_FIELD_MAX	128	/* a JSON field name in a rule */
#define AGENCY_BODY_MAX		1024	/* a probe's request body */
#define AGENCY_ORIGIN_MAX	288	/* a CORS origin: scheme, host, port */
#define AGENCY_SECRET_MIN	16	/* bytes of an API key */
#define AGENCY_SECRET_MAX	512
#define AGENCY_DIGEST_LEN	32	/* SHA-256 */

#define AGENCY_CONF		"/etc/agency.conf"
#define AGENCY_SOCKET		"/run/agency.sock"
#define AGENCY_USER_DIR		".agency"	/* in ~, user mode's socket */
#define AGENCY_USER		"_agency"
#define AGENCY_MODEL_USER	"_agencym"

#define DEFAULT_PORT_LO		5800
#define DEFAULT_PORT_HI		5999
#define DEFAULT_MAX_BODY	(16LL * 1024 * 1024)
#define DEFAULT_LOAD_TIMEOUT	(10LL * 60 * 1000)	/* ms */
/* ms requests in flight have to finish when agencyd stops: with the
 * models' 5 s of grace, well inside systemd's and Kubernetes' 30 s */
#define DEFAULT_SHUTDOWN_TIMEOUT	(10LL * 1000)
#define DEFAULT_REQUEST_TIMEOUT	(10LL * 60 * 1000)	/* ms */
#define DEFAULT_HEADER_TIMEOUT	(10LL * 1000)		/* ms */
#define DEFAULT_BODY_TIMEOUT	(60LL * 1000)		/* ms */
#define DEFAULT_BODY_BUFFER	(256LL * 1024 * 1024)
#define DEFAULT_BODY_SHARE	50	/* percent */
#define DEFAULT_HEADER_BUFFER	(16LL * 1024 * 1024)
#define DEFAULT_HEADER_SHARE	50	/* percent */
#define DEFAULT_QUEUE_TIMEOUT	(5LL * 60 * 1000)	/* ms */
#define DEFAULT_MAX_QUEUE	512
#define DEFAULT_FAIRNESS	(-1LL)	/* from each model's loads (pool.h) */
#define MAX_CONNECTIONS		1000000
#define MAX_QUEUE_MAX		100000
#define MAX_REQUESTS_MAX	65535

enum model_kind {
	KIND_CHAT,
	KIND_EMBEDDING,
	KIND_SPEECH,
	KIND_IMAGE,
	KIND_VISION,
	KIND_RERANK,
	KIND_TRANSCRIPTION,
};

enum stops_on_close {
	STOPS_ALWAYS,
	STOPS_NEVER,
	STOPS_STREAM,		/* only when the body has "stream": true */
};

/* What a runtime's server is sent as the body's "model". */
enum send_model {
	SEND_NAME,		/* the model's name (%m) */
	SEND_UPSTREAM,		/* its upstream (%u) */
	SEND_UNCHANGED,		/* what the client sent, or nothing */
};

enum ready_method {
	READY_GET,
	READY_POST,
};

struct strent {
	TAILQ_ENTRY(strent)	 entry;
	char			*s;
};
TAILQ_HEAD(strlist, strent);

struct rule_move {
	TAILQ_ENTRY(rule_move)	 entry;
	char			 from[AGENCY_FIELD_MAX];
	char			 to[AGENCY_FIELD_MAX];
};
TAILQ_HEAD(rule_moves, rule_move);

/*
 * A certificate and its private key, as their files name them and as
 * agencyd read them (the bytes go to the proxy, which opens no file).
 */
struct tls_files {
	char			 cert[AGENCY_PATH_MAX];	/* "": none */
	char			 key[AGENCY_PATH_MAX];
	uint8_t			*cert_pem;	/* NULL until read */
	size_t			 cert_len;
	uint8_t			*key_pem;	/* secret: freed with freezero */
	size_t			 key_len;
};

/*
 * A listener: TCP (host and port, with TLS or not), or a Unix socket
 * (path, with its owner, group and mode; ss holds its sockaddr_un and
 * host is empty, port 0).
 */
struct listen_conf {
	TAILQ_ENTRY(listen_conf) entry;
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	char			 host[AGENCY_NAME_MAX];	/* as written */
	in_port_t		 port;			/* host order */
	int			 fd;			/* -1 until bound */
	int			 tls;
	int			 tls_own;	/* its own files, not the
						 * global ones */
	struct tls_files	 tlsf;		/* when tls_own */
	char			 path[AGENCY_PATH_MAX];	/* "": TCP */
	char			 owner[AGENCY_NAME_MAX]; /* "": agencyd's */
	char			 group[AGENCY_NAME_MAX]; /* "": agencyd's */
	uid_t			 uid;		/* of the socket file */
	gid_t			 gid;
	mode_t			 mode;
	dev_t			 sock_dev;	/* the file bind made */
	ino_t			 sock_ino;
};
TAILQ_HEAD(listen_list, listen_conf);

#define DEFAULT_UNIX_MODE	0666

/*
 * An API key: its name (for logs and metrics), the SHA-256 of its
 * secret (the secret itself is never kept), and what it may do.
 */
struct key_conf {
	TAILQ_ENTRY(key_conf)	 entry;
	char			 name[AGENCY_NAME_MAX];
	char			 secret_file[AGENCY_PATH_MAX]; /* "": the
							* digest was written */
	uint8_t			 digest[AGENCY_DIGEST_LEN];
	int			 admin;		/* may use the admin routes */
	int64_t			 max_requests;	/* in flight; 0: no bound */
	struct strlist		 models;	/* empty: every model */
	int			 line;
};
TAILQ_HEAD(key_list, key_conf);

/* Who may use a Unix-socket listener without a key, by peer credentials. */
enum allow_kind {
	ALLOW_USER,
	ALLOW_GROUP,
};

struct allow_conf {
	TAILQ_ENTRY(allow_conf)	 entry;
	enum allow_kind		 kind;
	char			 name[AGENCY_NAME_MAX];
	uint32_t		 id;		/* uid or gid */
	int			 admin;
	struct strlist		 models;	/* empty: every model */
};
TAILQ_HEAD(allow_list, allow_conf);

struct runtime_conf {
	TAILQ_ENTRY(runtime_conf) entry;
	char			 name[AGENCY_NAME_MAX];
	char			 command[AGENCY_CMD_MAX];
	enum ready_method	 ready_method;
	char			 ready_path[AGENCY_PATH_MAX];
	char			 ready_body[AGENCY_BODY_MAX];
	enum model_kind		 kind;
	enum stops_on_close	 stops;
	enum send_model		 send_model;
	int			 progress;	/* loading progress; -1 until
						 * the global one */
	int64_t			 max_tokens;	/* 0: no cap */
	int			 passthrough;	/* /upstream/MODEL/... */
	struct strlist		 env;		/* K=V */
	struct strlist		 routes;	/* empty: the kind's routes */
	struct strlist		 parts;		/* allowed content-part types */
	struct strlist		 refuse;	/* refused fields */
	struct rule_moves	 moves;
	int			 line;		/* where it was defined */
};
TAILQ_HEAD(runtime_list, runtime_conf);

struct model_conf {
	TAILQ_ENTRY(model_conf)	 entry;
	char			 name[AGENCY_NAME_MAX];
	char			 runtime[AGENCY_NAME_MAX];
	struct runtime_conf	*rt;		/* resolved after parsing */
	char			 upstream[AGENCY_PATH_MAX];
	int			 lazy;
	int64_t			 memory;	/* bytes; 0: from upstream size */
	int64_t			 idle_timeout;	/* ms; 0: never */
	int64_t			 load_timeout;	/* ms */
	int64_t			 max_tokens;	/* 0: the runtime's */
	int64_t			 queue_timeout;	/* ms; -1 until the global */
	int64_t			 max_queue;	/* 0: only the global bound */
	int64_t			 max_requests;	/* 0: no bound */
	struct strlist		 aliases;
	struct strlist		 env;
	int			 line;
};
TAILQ_HEAD(model_list, model_conf);

/*
 * The global settings the proxy is sent, as agencyd's configuration and
 * the proxy's hold them alike: each process reads conf->max_body.
 */
#define CONF_PROXY_GLOBALS						\
	int64_t		 max_body;	/* bytes */			\
	int64_t		 request_timeout;	/* ms */		\
	int64_t		 header_timeout;	/* ms */		\
	int64_t		 max_connections;	/* 0: from fd limit */	\
	int64_t		 body_timeout;		/* ms */		\
	int64_t		 body_buffer;	/* bytes, all bodies */		\
	int64_t		 body_share;	/* percent of it, a key's */	\
	int64_t		 header_buffer;	/* bytes, kept headers */	\
	int64_t		 header_share;	/* percent of it, a client's */	\
	int		 host_any;	/* server name any: no Host	\
					 * check */			\
	int		 console;	/* GET / serves the console */	\
	int64_t		 queue_timeout;	/* ms, default; a key's wait */	\
	char		 default_model[AGENCY_NAME_MAX];

struct agency_conf {
	CONF_PROXY_GLOBALS
	struct listen_list	 listens;
	char			 socket[AGENCY_PATH_MAX];
	char			 rsocket[AGENCY_PATH_MAX];	/* restricted */
	char			 user[AGENCY_NAME_MAX];
	char			 model_user[AGENCY_NAME_MAX];
	in_port_t		 port_lo;
	in_port_t		 port_hi;
	int64_t			 reserve;	/* bytes; -1: min(2G, 5%) */
	int64_t			 budget;	/* bytes; 0: none */
	int			 overcommit;
	int64_t			 load_timeout;		/* ms, default */
	int64_t			 idle_timeout;		/* ms, default; 0 */
	struct strlist		 server_names;	/* Host names, and
						 * name:port */
	int64_t			 max_queue;		/* waiting, in all */
	int64_t			 fairness;		/* ms */
	int64_t			 shutdown_timeout;	/* ms, the drain's */
	struct tls_files	 tls;		/* of TLS listeners without
						 * their own */
	struct strlist		 cors_origins;	/* normalized */
	struct strlist		 trusted_proxies;	/* addresses, as
							 * inet_ntop writes
							 * them */
	int			 progress;	/* loading progress, default */
	struct runtime_list	 runtimes;
	struct model_list	 models;
	struct key_list		 keys;
	struct allow_list	 allows;
};

/*
 * The proxy's form: what it keeps of the configuration, built by
 * confimsg.c from what agencyd sends (and by tests, with pconf_add_*).
 */
struct pstrs {
	char		**v;
	size_t		  n;
};

struct pmove {
	char		 from[AGENCY_FIELD_MAX];
	char		 to[AGENCY_FIELD_MAX];
};

struct pruntime {
	TAILQ_ENTRY(pruntime)	 entry;
	char			 name[AGENCY_NAME_MAX];
	int			 kind;		/* enum model_kind */
	int			 stops;		/* enum stops_on_close */
	int64_t			 max_tokens;	/* 0: no cap */
	int			 passthrough;	/* /upstream/MODEL/... */
	int			 progress;	/* loading progress */
	struct pstrs		 routes;
	struct pstrs		 parts;
	struct pstrs		 refuse;
	struct pmove		*moves;
	size_t			 nmoves;
};

struct pmodel {
	TAILQ_ENTRY(pmodel)	 entry;
	char			 name[AGENCY_NAME_MAX];
	char			 upstream[AGENCY_PATH_MAX];
	char			 label[AGENCY_PATH_MAX];
	int64_t			 max_tokens;	/* 0: the runtime's */
	int64_t			 created;	/* s since the epoch: when the
						 * proxy first served it */
	struct pruntime		*rt;
	struct pstrs		 aliases;
};

struct plisten {
	TAILQ_ENTRY(plisten)		 entry;
	int				 fd;
	char				 host[AGENCY_NAME_MAX];
	uint16_t			 port;
	char				 path[AGENCY_PATH_MAX]; /* Unix */
	int				 tls;
	uint8_t				*cert;	/* PEM, as the parent sent it */
	size_t				 certlen;
	uint8_t				*key;	/* wiped once used */
	size_t				 keylen;
	void				*lsn;	/* conn_listen's */
};

/* An API key: its name and digest, never the secret. */
struct pkey {
	TAILQ_ENTRY(pkey)		 entry;
	char				 name[AGENCY_NAME_MAX];
	uint8_t				 digest[AGENCY_DIGEST_LEN];
	int				 admin;
	int64_t				 max_requests;	/* 0: no bound */
	struct pstrs			 models;	/* model names (not
							 * aliases); none:
							 * every model */
};

/* An allow rule of the Unix-socket listeners. */
struct pallow {
	TAILQ_ENTRY(pallow)		 entry;
	int				 kind;		/* enum allow_kind */
	uint32_t			 id;		/* uid or gid */
	char				 name[AGENCY_NAME_MAX];
	int				 admin;
	struct pstrs			 models;	/* as for keys */
};

/* A user's name, for the log: the proxy cannot read the user database. */
struct puser {
	uint32_t			 uid;
	char				 name[AGENCY_NAME_MAX];
};

struct pconf {
	CONF_PROXY_GLOBALS
	struct pstrs			 names;		/* server names */
	struct pstrs			 cors;		/* CORS origins */
	struct pstrs			 proxies;	/* trusted proxies */
	TAILQ_HEAD(, pruntime)		 runtimes;
	TAILQ_HEAD(, pmodel)		 models;
	TAILQ_HEAD(, plisten)		 listens;
	TAILQ_HEAD(, pkey)		 keys;
	TAILQ_HEAD(, pallow)		 allows;
	struct puser			*users;
	size_t				 nusers;
};

/*
 * A global setting, as conf_globals[] has it: its keyword, the kind of
 * its value, where each form keeps it, its default, when -nv prints it,
 * and the least value the proxy takes.
 */
enum conf_kind {
	CK_SIZE,		/* int64_t bytes: 16M */
	CK_DURATION,		/* int64_t ms: 10m */
	CK_NUMBER,		/* int64_t */
	CK_BOOL,		/* int: "KEYWORD yes" or "KEYWORD no" */
	CK_FLAG,		/* int: "KEYWORD" when set */
	CK_STRING,		/* char[]: "KEYWORD \"s\"" */
	CK_NAMES,		/* strlist (pstrs): a line each */
	CK_PORTS,		/* two in_port_t: "KEYWORD lo to hi" */
};

enum conf_print {
	CP_ALWAYS,
	CP_CHANGED,		/* when it is not its default */
};

struct conf_global {
	const char	*keyword;
	enum conf_kind	 kind;
	enum conf_print	 print;
	size_t		 off;		/* in struct agency_conf */
	size_t		 off2;		/* CK_PORTS: the upper one */
	size_t		 size;		/* CK_STRING: its array's */
	ssize_t		 poff;		/* in struct pconf; -1: not sent */
	int64_t		 def;		/* numbers, flags */
	const char	*sdef;		/* CK_STRING */
	int64_t		 min;		/* numbers: the least sent */
};

extern const struct conf_global	 conf_globals[];

/* config.c */
struct agency_conf	*config_new(void);
void			 config_free(struct agency_conf *);
struct runtime_conf	*config_runtime_new(void);
struct model_conf	*config_model_new(void);
struct model_conf	*config_find_model(struct agency_conf *, const char *);
struct runtime_conf	*config_find_runtime(struct agency_conf *,
			    const char *);
struct key_conf		*config_find_key(struct agency_conf *, const char *);
void			 config_key_free(struct key_conf *);
/* The certificate and key of a TLS listener: its own or the global. */
const struct tls_files	*config_listen_tls(const struct agency_conf *,
			    const struct listen_conf *);
void			 tls_files_clear(struct tls_files *);
int			 strlist_add(struct strlist *, const char *);
void			 strlist_clear(struct strlist *);
int			 strlist_contains(const struct strlist *, const char *);
/* The control socket when none is configured; -1 if it does not fit
 * (or, in user mode, no home directory is known). */
int			 config_default_socket(char *, size_t);
/* Whether a global setting of agencyd's form is its default. */
int			 config_global_default(const struct conf_global *,
			    const struct agency_conf *);

/* config.c: the proxy's form */
struct pconf		*pconf_new(void);
void			 pconf_free(struct pconf *);
struct pruntime		*pconf_add_runtime(struct pconf *, const char *,
			    int, int, int64_t);
struct pmodel		*pconf_add_model(struct pconf *, const char *,
			    const char *, const char *, const char *, int64_t);
struct pmodel		*pconf_find_model(const struct pconf *, const char *);
size_t			 pconf_nmodels(const struct pconf *);
struct pkey		*pconf_add_key(struct pconf *, const char *,
			    const uint8_t [AGENCY_DIGEST_LEN], int, int64_t);
struct pallow		*pconf_add_allow(struct pconf *, int, uint32_t,
			    const char *, int);
int			 pconf_add_user(struct pconf *, uint32_t, const char *);
const char		*pconf_user_name(const struct pconf *, uint32_t);
void			 pconf_created(struct pconf *, const struct pconf *,
			    int64_t);
int			 pstrs_add(struct pstrs *, const char *);
int			 pstrs_has(const struct pstrs *, const char *);
void			 pstrs_clear(struct pstrs *);
int			 pruntime_add_move(struct pruntime *, const char *,
			    const char *);

/*
 * confimsg.c: the configuration from agencyd to the proxy, each part's
 * sending and receiving side by side.  agencyd sends, in this order,
 * config_set_globals, each config_set_listen, config_set_runtime,
 * config_set_model, config_set_key, config_set_allow, config_set_user,
 * then config_set_end; each returns 0, or -1 when it cannot be queued.
 * The proxy hands each IMSG_CONF_* to config_recv: -1 (why says it),
 * 0, or 1 at the end, the new configuration then in r->conf.
 */
struct imsgbuf;
struct imsg;

struct conf_recv {
	struct pconf		*conf;		/* being received */
	struct pruntime		*rt;		/* the last of each */
	struct pmodel		*model;
	struct plisten		*listen;
	struct pkey		*key;
	struct pallow		*allow;
	const char		*why;
};

int	 config_set_globals(struct imsgbuf *, const struct agency_conf *);
int	 config_set_listen(struct imsgbuf *, const struct listen_conf *,
	    const struct tls_files *, int);
int	 config_set_runtime(struct imsgbuf *, const struct runtime_conf *);
int	 config_set_model(struct imsgbuf *, const struct model_conf *,
	    const char *);
int	 config_set_key(struct imsgbuf *, const struct key_conf *);
int	 config_set_allow(struct imsgbuf *, const struct allow_conf *);
int	 config_set_user(struct imsgbuf *, uint32_t, const char *);
int	 config_set_end(struct imsgbuf *);
int	 config_recv(struct conf_recv *, struct imsg *);
void	 config_recv_clear(struct conf_recv *);

#endif /* AGENCY_CONFIG_H */

/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
#ifndef AGENCYD_H
#define AGENCYD_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <event.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "imsg.h"
#include "pool.h"
#include "proto.h"
#include "sockdir.h"
#include "spawn.h"

#define AGENCYD_OPT_VERBOSE	0x01
#define AGENCYD_OPT_VERBOSE2	0x02
#define AGENCYD_OPT_NOACTION	0x04

/* parse.y */
/* Returns the configuration, or NULL after printing each error as
 * "FILE:LINE: message" on stderr (or to the log when running). */
struct agency_conf	*parse_config(const char *, int);
int			 cmdline_symset(char *);

/* secrets.c: API keys and TLS files, read and checked for parse.y;
 * each returns 0, or -1 with why said */
int			 secret_ok(const char *, size_t, char *, size_t);
int			 secret_file_digest(const char *,
			    uint8_t [AGENCY_DIGEST_LEN], char *, size_t);
int			 tls_files_read(struct tls_files *, char *, size_t,
			    int *);

/* printconf.c: the normalized form, which parses back to the same. */
void			 print_config(FILE *, const struct agency_conf *);

/* One served model: its configuration, its pool plan, its process. */
struct model {
	TAILQ_ENTRY(model)	 entry;
	struct model_conf	*mc;		/* NULL once removed */
	struct pool_plan	 plan;
	struct ring		 ring;		/* the last lines it wrote */
	struct spawn_proc	 sp;
	int			 sp_open;
	int			 addr_in_use;	/* its output said so */
	uint64_t		 spawned_seq;	/* its ring's last line before
						 * this process started */
	/* what the proxy's events stream was last told (emit.c) */
	int32_t			 ev_state;
	int64_t			 ev_restart_at;
	struct proto_ev_queue	 ev_queue;
	int			 ev_changed;	/* replaced by the reload */
	int			 log_follow;	/* the proxy follows its lines
						 * (proxylink.c) */
	struct sockdir		 sock;		/* its process's socket, %s */
};
TAILQ_HEAD(model_head, model);

/* A readiness probe asked of the proxy, kept until it is answered so
 * that a new proxy gets it again. */
struct probe {
	TAILQ_ENTRY(probe)	 entry;
	struct proto_probe	 p;
};
TAILQ_HEAD(probe_head, probe);

/* Requests by API key (keystats.c). */
struct keystat {
	TAILQ_ENTRY(keystat)	 entry;
	char			 name[AGENCY_NAME_MAX];
	uint64_t		 requests;
};
TAILQ_HEAD(keystat_head, keystat);

struct agencyd {
	struct agency_conf	*conf;
	const char		*conffile;
	const char		*proxy_path;
	int			 debug;
	int			 verbose;
	struct pool		*pool;
	struct model_head	 models;
	struct model_head	 draining;	/* removed, until stopped */
	struct probe_head	 probes;
	struct keystat_head	 keystats;

	/* agency-proxy */
	struct imsgev		 proxy_iev;
	pid_t			 proxy_pid;
	uint32_t		 proxy_gen;	/* the owner of its holds */
	int			 proxy_up;	/* channel open */
	int			 proxy_ready;
	int			 proxy_batch;	/* in proxy_dispatch */
	int			 now_cached;	/* now_ms read in this batch */
	int64_t			 now_ms;	/* op_now's */
	int64_t			 proxy_started;	/* ms, monotonic */
	struct proto_ports	 proxy_ports;	/* those it may connect to */
	int			 proxy_quick_deaths;
	struct event		 proxy_restart_ev;

	struct sockdirs		 sockdirs;	/* the models' sockets */

	int			 stopping;
	int			 reloading;	/* in agencyd_reload */
};

/*
 * The files of agencyd, from the top down: each calls only files below
 * it, and what must reach up goes through a table or a callback given
 * to it at start-up (the pool's ops, a reload's reporter).
 *
 *   agencyd.c	main, signals, reaping, shutdown
 *   control.c	agency-ctl's sockets
 *   reload.c	a new configuration
 *   poolops.c	the pool's ops done for real (model_pool_ops)
 *   emit.c	the events for the proxy's events stream
 *   proxysvc.c	the proxy's messages to their owners; its services
 *   proxylink.c	the socketpair to agency-proxy: its life, its link
 *   model.c	the records of the served models (struct model)
 *   notify.c, printconf.c, privdrop.c, ports.c, spawn.c, memory.c,
 *   parse.y, and the pool (pool.h; its own files in pool_priv.h): below
 *   them all, calling none of them
 */

/* reload.c: 0 when the new configuration is in force.  Each line of
 * what it did or found goes to the log and to say (may be NULL). */
typedef void	(*reload_say_cb)(void *, const char *);
int		 agencyd_reload(struct agencyd *, reload_say_cb, void *);
void		 agencyd_pool_settings(const struct agency_conf *,
		    struct pool_settings *);

/* emit.c: what the proxy's events stream is made of */
void		 emit_init(struct agencyd *);
void		 emit_stop(void);
void		 emit_sync(struct agencyd *, int, int, const char *);
void		 emit_changed(struct agencyd *, const char *);
void		 emit_memory(struct agencyd *);

/* privdrop.c */
int		 agencyd_drop_caps(void);
uint64_t	 agencyd_caps_kept(void);

/* poolops.c: the pool's ops, done for real */
extern const struct pool_ops	model_pool_ops;
void		 models_reaped(struct agencyd *, pid_t, int);
/* Each line a model writes (arg, the model's name, the line's number
 * in its ring (ring_seq), the line), once its ring has it. */
typedef void	(*models_line_cb)(void *, const char *, uint64_t,
		    const char *);
void		 models_on_line(models_line_cb, void *);

/* model.c: the records of the served models */
int		 models_setup(struct agencyd *);
struct model	*model_new(struct model_conf *, const char *);
void		 model_free(struct model *);
int		 model_plan(struct model *, struct model_conf *, const char *,
		    struct pool_plan *);
void		 model_limits(const struct model_conf *, struct pool_plan *);
int		 model_env(const char *, const struct model_conf *,
		    const char *, const char **, char *, size_t, char ***,
		    char *, size_t);
struct model	*model_find(struct agencyd *, const char *);
struct model	*model_resolve(struct agencyd *, const char *);
struct model	*model_by_pid(struct agencyd *, pid_t);
struct model	*model_by_reaper(struct agencyd *, pid_t);
void		 models_free(struct agencyd *);
void		 models_fill_status(struct agencyd *, struct proto_status *);
void		 models_memory(struct agencyd *, struct proto_memory *);
void		 models_proxy_ports(struct agencyd *, struct proto_ports *);

/* ports.c: sets of model ports (struct proto_ports), pure */
void		 ports_init(struct proto_ports *, uint16_t, uint16_t);
void		 ports_add(struct proto_ports *, uint16_t);
int		 ports_has(const struct proto_ports *, uint16_t);
int		 ports_within(const struct proto_ports *,
		    const struct proto_ports *);
void		 ports_format(const struct proto_ports *, char *, size_t);

/* notify.c: sd_notify(3) to a service manager, when one waits for it */
int		 notify_init(void);
void		 notify_ready(void);
void		 notify_status(struct agencyd *);
void		 notify_stopping(void);

/* keystats.c: requests by key, for status */
void		 keystats_count(struct agencyd *, const char *);
void		 keystats_reload(struct agencyd *, const struct agency_conf *);
void		 keystats_free(struct agencyd *);
void		 keystats_fill(const struct keystat *,
		    struct proto_key_status *);

/* listeners.c: the front door's sockets */
int		 listeners_bind(struct agency_conf *);
int		 listener_update(const struct listen_conf *,
		    struct listen_conf *);
void		 listener_close(struct listen_conf *);
void		 listeners_close(struct agency_conf *);
struct sockaddr_un;
/* 1: something answers at the socket; 0: none, a stale one removed;
 * -1: an error. */
int		 unix_stale_remove(const struct sockaddr_un *, const char *);

/* proxylink.c: agencyd's side of the socketpair */
#define PROXY_STATUS_MAX	4	/* status answers on their way out */
#define PROXY_STALL_MS		10000	/* no read of what it was sent */
#define PROXY_QUEUE_MAX		(16 * 1024 * 1024)	/* bytes sent, unread */
/* The end of a cancel: ok 0 when the proxy went away before it answered. */
typedef void	(*proxy_cancel_cb)(void *, int, uint32_t);
/* A new proxy is ready (arg, agencyd). */
typedef void	(*proxy_ready_cb)(void *, struct agencyd *);
/* A message from the proxy, read whole (type, its payload): -1 when the
 * proxy was killed.  And the end of a proxy, or the start of a new one. */
typedef int	(*proxy_message_cb)(struct agencyd *, uint32_t,
		    union proto_msg *);
typedef void	(*proxy_drop_cb)(struct agencyd *);
void		 proxy_on_ready(proxy_ready_cb, void *);
void		 proxy_on_message(proxy_message_cb, proxy_drop_cb);
int		 proxy_start(struct agencyd *);
int		 proxy_link_open(struct agencyd *, int);
uint64_t	 proxy_bound(void);
const char	*proxy_clean(char *, size_t, const char *);
int		 proxy_log_priority(uint32_t);
void		 proxy_died(struct agencyd *, int);
void		 proxy_stop(struct agencyd *);
int		 proxy_hostile(struct agencyd *, const char *, uint32_t);
int		 proxy_send_config(struct agencyd *);
void		 proxy_send_probe(struct agencyd *, const struct proto_probe *);
void		 proxy_compose(struct agencyd *, uint32_t, const void *,
		    size_t);
#define PORTS_NARROWED	1
#define PORTS_RESTART	2
int		 proxy_ports_check(struct agencyd *, char *, size_t);
/* the messages of the link itself, each -1 when the proxy was killed */
int		 proxy_hold(struct agencyd *, const struct proto_hold_req *);
int		 proxy_withdraw(struct agencyd *, const struct proto_reqid *);
int		 proxy_release(struct agencyd *, const struct proto_holdid *);
int		 proxy_probe_result(struct agencyd *,
		    const struct proto_probe_result *);
int		 proxy_logline(struct agencyd *, const struct proto_log *);
int		 proxy_ready(struct agencyd *);

/* proxysvc.c: the proxy's messages to their owners, and its services */
void		 proxysvc_init(struct agencyd *);
void		 proxy_cancel(struct agencyd *, const char *, proxy_cancel_cb,
		    void *);
void		 proxy_cleanup(void);
void		 proxy_model_line(struct agencyd *, const char *, uint64_t,
		    const char *);

#endif /* AGENCYD_H */

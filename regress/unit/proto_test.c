/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for the messages of common/proto.h.
 *
 * ctl_numbers pins the control protocol (agency-ctl <-> agencyd): an
 * agency-ctl of one build talks to the agencyd of another, so each
 * message keeps its number for good.  A change here is a change of the
 * protocol, never a refactor.
 *
 * The rest read back what proto.c writes (msg.c's fields), and check
 * that its reader takes no less, no more, no string without its NUL
 * inside its bound and no value out of its range, from no one but the
 * message's sender.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"
#include "proto.h"

/* An imsg of type around a payload, as imsg_get hands one out. */
static struct imsg
mk_imsg(uint32_t type, const void *data, size_t len)
{
	struct imsg	 imsg;

	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = type;
	imsg.hdr.len = IMSG_HEADER_SIZE + len;
	imsg.fd = -1;
	imsg.data = len > 0 ? (void *)(uintptr_t)data : NULL;
	return (imsg);
}

/* Read a payload of len bytes as from's type: 0, or -1 with *why. */
static int
rd(enum proto_from from, uint32_t type, const void *data, size_t len,
    union proto_msg *u, const char **why)
{
	struct imsg	 imsg = mk_imsg(type, data, len);

	*why = NULL;
	return (proto_read(&imsg, from, u, sizeof(*u), why));
}

/* Write m (len bytes) as from's type into w; the test fails if it
 * cannot. */
static void
wr(struct msgw *w, enum proto_from from, uint32_t type, const void *m,
    size_t len)
{
	ATF_REQUIRE_MSG(proto_write(w, from, type, m, len) == 0,
	    "type %u does not write", type);
}

ATF_TC_WITHOUT_HEAD(ctl_numbers);
ATF_TC_BODY(ctl_numbers, tc)
{
	ATF_CHECK_EQ(IMSG_CTL_STATUS_REQ, 19);
	ATF_CHECK_EQ(IMSG_CTL_STATUS_MODEL, 20);
	ATF_CHECK_EQ(IMSG_CTL_STATUS_END, 21);
	ATF_CHECK_EQ(IMSG_CTL_LOAD, 26);
	ATF_CHECK_EQ(IMSG_CTL_UNLOAD, 27);
	ATF_CHECK_EQ(IMSG_CTL_CANCEL, 28);
	ATF_CHECK_EQ(IMSG_CTL_RELOAD, 29);
	ATF_CHECK_EQ(IMSG_CTL_VERBOSE, 30);
	ATF_CHECK_EQ(IMSG_CTL_LOGS, 31);
	ATF_CHECK_EQ(IMSG_CTL_LOGLINE, 32);
	ATF_CHECK_EQ(IMSG_CTL_OK, 33);
	ATF_CHECK_EQ(IMSG_CTL_ERROR, 34);
	ATF_CHECK_EQ(IMSG_CTL_INFO, 35);
	ATF_CHECK_EQ(IMSG_CTL_END, 36);
	ATF_CHECK_EQ(IMSG_CTL_PLAN, 39);
	ATF_CHECK_EQ(IMSG_CTL_STATUS, 42);
	ATF_CHECK_EQ(IMSG_CTL_STATUS_ALIAS, 43);
	ATF_CHECK_EQ(IMSG_CTL_STATUS_MEMORY, 44);
	ATF_CHECK_EQ(IMSG_CTL_FOLLOW, 45);
	ATF_CHECK_EQ(IMSG_CTL_FAILED, 46);
	ATF_CHECK_EQ(IMSG_CTL_STATUS_KEY, 55);
}

/* One message of each structure, its fields all set, as its sender
 * sends it. */
struct sample {
	enum proto_from	 from;
	uint32_t	 type;
	size_t		 len;
	union proto_msg	 m;
};

/* A memory of distinct figures, one of them unknown. */
static void
memory_fill(struct proto_memory *m)
{
	m->in_use = 1;
	m->budget = 2;
	m->available = -1;
	m->total = 4;
	m->reserve = 5;
}

static void
status_fill(struct proto_status *st)
{
	uint32_t	 i;

	st->reqid = 7;
	strlcpy(st->model, "qwen", sizeof(st->model));
	strlcpy(st->runtime, "llama", sizeof(st->runtime));
	st->state = STATE_UNLOADED;
	st->lazy = 1;
	strlcpy(st->error, "it failed", sizeof(st->error));
	st->in_progress = 3;
	st->last_used = -1;
	st->pid = 4242;
	st->port = 5801;
	st->need = 6LL << 30;
	st->requests = 11;
	st->loads = 2;
	st->restarts = 1;
	st->loaded_at = 1700000000000LL;
	st->evictions = 4;
	st->load_failures = 5;
	st->load_ms_sum = 1234;
	for (i = 0; i < PROTO_LOAD_NBOUNDS + 1; i++)
		st->load_hist[i] = i * 3;
	st->need_from = NEED_HEADROOM;
	st->queued = 9;
	st->waiting = WAIT_LOAD;
	st->oldest_wait = 77;
	st->max_requests = 8;
	st->idle_timeout = 60000;
	st->idle_stop_at = -1;
	st->restart_at = 99;
	st->change = CHANGE_LAST;
	strlcpy(st->change_for, "other", sizeof(st->change_for));
	st->nload_ms = PROTO_LOAD_HISTORY;
	for (i = 0; i < PROTO_LOAD_HISTORY; i++)
		st->load_ms[i] = 100 + i;
}

static size_t
samples(struct sample *s)
{
	size_t	 n = 0;

#define S(f, t, field) do {						\
	memset(&s[n], 0, sizeof(s[n]));					\
	s[n].from = (f);						\
	s[n].type = (t);						\
	s[n].len = sizeof(s[n].m.field);				\
} while (0)
#define M	(s[n].m)
	S(FROM_PROXY, IMSG_HOLD_REQ, hold_req);
	M.hold_req.reqid = 1ULL << 40;
	strlcpy(M.hold_req.model, "m", sizeof(M.hold_req.model));
	M.hold_req.flags = PROTO_HOLD_PROGRESS;
	strlcpy(M.hold_req.key, "k", sizeof(M.hold_req.key));
	n++;
	S(FROM_PROXY, IMSG_HOLD_WITHDRAW, reqid);
	M.reqid.reqid = 3;
	n++;
	S(FROM_PARENT, IMSG_HOLD_GRANT, hold_grant);
	M.hold_grant.reqid = 1;
	M.hold_grant.holdid = UINT64_MAX;
	M.hold_grant.port = 65535;
	strlcpy(M.hold_grant.upstream, "/srv/m.gguf",
	    sizeof(M.hold_grant.upstream));
	strlcpy(M.hold_grant.label, "model m", sizeof(M.hold_grant.label));
	n++;
	S(FROM_PARENT, IMSG_HOLD_REFUSE, hold_refuse);
	M.hold_refuse.reqid = 2;
	M.hold_refuse.reason = REFUSE_LAST;
	strlcpy(M.hold_refuse.message, "no", sizeof(M.hold_refuse.message));
	M.hold_refuse.retry_after = PROTO_RETRY_MAX;
	n++;
	S(FROM_PARENT, IMSG_HOLD_WAIT, hold_wait);
	M.hold_wait.reqid = 2;
	M.hold_wait.wait = WAIT_LOAD;
	M.hold_wait.ahead = 5;
	M.hold_wait.load_ms = 1500;
	n++;
	S(FROM_PROXY, IMSG_HOLD_RELEASE, holdid);
	M.holdid.holdid = 9;
	n++;
	S(FROM_PARENT, IMSG_PROBE, probe);
	M.probe.loadid = 4;
	M.probe.port = 5800;
	M.probe.method = READY_POST;
	strlcpy(M.probe.path, "/health", sizeof(M.probe.path));
	strlcpy(M.probe.body, "{}", sizeof(M.probe.body));
	strlcpy(M.probe.label, "model m", sizeof(M.probe.label));
	n++;
	S(FROM_PARENT, IMSG_PROBE_CANCEL, loadid);
	M.loadid.loadid = 4;
	n++;
	S(FROM_PROXY, IMSG_PROBE_RESULT, probe_result);
	M.probe_result.loadid = 4;
	M.probe_result.ok = 1;
	M.probe_result.status = 200;
	strlcpy(M.probe_result.body, "ok", sizeof(M.probe_result.body));
	n++;
	S(FROM_PROXY, IMSG_STATUS_REQ, reqid);
	M.reqid.reqid = 12;
	n++;
	S(FROM_PARENT, IMSG_STATUS_MODEL, status);
	status_fill(&M.status);
	n++;
	S(FROM_PARENT, IMSG_STATUS_END, status_end);
	M.status_end.reqid = 12;
	memory_fill(&M.status_end.mem);
	n++;
	S(FROM_PARENT, IMSG_CANCEL, cancel);
	M.cancel.reqid = 1ULL << 63 | 1;
	strlcpy(M.cancel.model, "m", sizeof(M.cancel.model));
	n++;
	S(FROM_PROXY, IMSG_CANCEL, cancel);
	M.cancel.reqid = 5;
	strlcpy(M.cancel.model, "m", sizeof(M.cancel.model));
	n++;
	S(FROM_PROXY, IMSG_CANCEL_DONE, cancel);
	M.cancel.reqid = 5;
	strlcpy(M.cancel.model, "m", sizeof(M.cancel.model));
	M.cancel.cancelled = 2;
	n++;
	S(FROM_PROXY, IMSG_ADMIN, admin);
	M.admin.reqid = 6;
	M.admin.op = ADMIN_UNLOAD;
	M.admin.wait = 1;
	strlcpy(M.admin.model, "m", sizeof(M.admin.model));
	n++;
	S(FROM_PARENT, IMSG_ADMIN_DONE, admin_done);
	M.admin_done.reqid = 6;
	M.admin_done.status = 503;
	strlcpy(M.admin_done.code, "stopping", sizeof(M.admin_done.code));
	strlcpy(M.admin_done.message, "stops",
	    sizeof(M.admin_done.message));
	n++;
	S(FROM_PROXY, IMSG_LOGS_REQ, logs_req);
	M.logs_req.reqid = 8;
	M.logs_req.follow = 1;
	strlcpy(M.logs_req.model, "m", sizeof(M.logs_req.model));
	n++;
	S(FROM_PARENT, IMSG_LOGS_LINE, logline);
	M.logline.seq = 3;
	strlcpy(M.logline.model, "m", sizeof(M.logline.model));
	strlcpy(M.logline.line, "listening", sizeof(M.logline.line));
	n++;
	S(FROM_PARENT, IMSG_LOGS_END, logs_end);
	M.logs_end.reqid = 8;
	M.logs_end.found = 1;
	strlcpy(M.logs_end.model, "m", sizeof(M.logs_end.model));
	n++;
	S(FROM_PROXY, IMSG_LOGS_UNFOLLOW, logs_req);
	strlcpy(M.logs_req.model, "m", sizeof(M.logs_req.model));
	n++;
	S(FROM_PARENT, IMSG_EV_SYNC_START, ev_sync);
	M.ev_sync.time = 1;
	M.ev_sync.reload = 1;
	strlcpy(M.ev_sync.error, "bad", sizeof(M.ev_sync.error));
	n++;
	S(FROM_PARENT, IMSG_EV_RECORD, ev_record);
	M.ev_record.changed = 1;
	status_fill(&M.ev_record.st);
	n++;
	S(FROM_PARENT, IMSG_EV_SYNC_END, ev_sync);
	M.ev_sync.ok = 1;
	n++;
	S(FROM_PARENT, IMSG_EV_STATE, ev_state);
	M.ev_state.time = 2;
	M.ev_state.from = -1;
	status_fill(&M.ev_state.st);
	n++;
	S(FROM_PARENT, IMSG_EV_QUEUE, ev_queue);
	M.ev_queue.time = 3;
	strlcpy(M.ev_queue.model, "m", sizeof(M.ev_queue.model));
	M.ev_queue.in_progress = 1;
	M.ev_queue.queued = 2;
	M.ev_queue.waiting = WAIT_SLOT;
	M.ev_queue.oldest_wait = 10;
	M.ev_queue.last_used = -1;
	n++;
	S(FROM_PARENT, IMSG_EV_MEMORY, ev_memory);
	M.ev_memory.time = 4;
	memory_fill(&M.ev_memory.mem);
	n++;
	S(FROM_PROXY, IMSG_LOG, log);
	M.log.pri = 3;
	strlcpy(M.log.line, "GET /health 200", sizeof(M.log.line));
	n++;
	S(FROM_PARENT, IMSG_PORTS, ports);
	M.ports.n = PROTO_PORT_RANGES;
	for (size_t i = 0; i < PROTO_PORT_RANGES; i++) {
		M.ports.r[i].lo = 5800 + 2 * i;
		M.ports.r[i].hi = 5801 + 2 * i;
	}
	n++;
	S(FROM_CTL, IMSG_CTL_STATUS_REQ, reqid);
	n++;
	S(FROM_CTL, IMSG_CTL_LOAD, ctl_model);
	strlcpy(M.ctl_model.model, "m", sizeof(M.ctl_model.model));
	M.ctl_model.wait = 1;
	n++;
	S(FROM_CTL, IMSG_CTL_VERBOSE, ctl_verbose);
	M.ctl_verbose.verbose = 3;
	n++;
	S(FROM_AGENCYD, IMSG_CTL_STATUS_MODEL, status);
	status_fill(&M.status);
	n++;
	S(FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, alias);
	strlcpy(M.alias.model, "qwen", sizeof(M.alias.model));
	strlcpy(M.alias.alias, "q", sizeof(M.alias.alias));
	n++;
	S(FROM_AGENCYD, IMSG_CTL_STATUS_MEMORY, memory);
	memory_fill(&M.memory);
	n++;
	S(FROM_AGENCYD, IMSG_CTL_STATUS_KEY, key_status);
	strlcpy(M.key_status.name, "ci", sizeof(M.key_status.name));
	M.key_status.requests = 17;
	n++;
	S(FROM_AGENCYD, IMSG_CTL_LOGLINE, log);
	M.log.pri = 6;
	strlcpy(M.log.line, "a line", sizeof(M.log.line));
	n++;
	S(FROM_AGENCYD, IMSG_CTL_INFO, ctl_result);
	strlcpy(M.ctl_result.message, "a", sizeof(M.ctl_result.message));
	n++;
#undef S
#undef M
	return (n);
}

ATF_TC_WITHOUT_HEAD(roundtrip);
ATF_TC_BODY(roundtrip, tc)
{
	static struct sample	 s[64];
	union proto_msg		 u;
	static struct msgw	 w, again;
	const char		*why;
	size_t			 i, n = samples(s);

	for (i = 0; i < n; i++) {
		wr(&w, s[i].from, s[i].type, &s[i].m, s[i].len);
		/* every field back (the samples are zeroes after strings) */
		memset(&u, 0, sizeof(u));
		ATF_CHECK_MSG(rd(s[i].from, s[i].type, w.buf, w.len, &u,
		    &why) == 0, "type %u: %s", s[i].type, why);
		ATF_CHECK_MSG(memcmp(&u, &s[i].m, s[i].len) == 0,
		    "type %u does not read back", s[i].type);
		/* and every field set by its reader, whatever was there:
		 * written again, the same bytes */
		memset(&u, 0xa5, sizeof(u));
		ATF_REQUIRE(rd(s[i].from, s[i].type, w.buf, w.len, &u,
		    &why) == 0);
		wr(&again, s[i].from, s[i].type, &u, s[i].len);
		ATF_CHECK_MSG(again.len == w.len && memcmp(again.buf, w.buf,
		    w.len) == 0, "type %u reads a field it does not set",
		    s[i].type);
	}
	/* messages of no payload */
	wr(&w, FROM_PROXY, IMSG_PROXY_READY, NULL, 0);
	ATF_CHECK_EQ(w.len, 0);
	ATF_CHECK(rd(FROM_PROXY, IMSG_PROXY_READY, w.buf, 0, &u, &why) == 0);
	ATF_CHECK(rd(FROM_CTL, IMSG_CTL_RELOAD, NULL, 0, &u, &why) == 0);
	ATF_CHECK(rd(FROM_AGENCYD, IMSG_CTL_END, NULL, 0, &u, &why) == 0);
}

/* A grant of a request is as long as its strings, not its arrays. */
ATF_TC_WITHOUT_HEAD(compact);
ATF_TC_BODY(compact, tc)
{
	struct proto_hold_grant	 g;
	struct msgw		 w;

	memset(&g, 0, sizeof(g));
	strlcpy(g.upstream, "u", sizeof(g.upstream));
	strlcpy(g.label, "l", sizeof(g.label));
	wr(&w, FROM_PARENT, IMSG_HOLD_GRANT, &g, sizeof(g));
	/* ids, port, "u", "l" and no socket ("") */
	ATF_CHECK_EQ(w.len, 8 + 8 + 2 + 2 + 2 + 1);
}

/* A model's socket (%s) is an absolute path, in grants and probes. */
ATF_TC_WITHOUT_HEAD(socket_paths);
ATF_TC_BODY(socket_paths, tc)
{
	struct proto_hold_grant	 g;
	struct proto_probe	 pr;
	union proto_msg		 u;
	struct msgw		 w;
	const char		*why;

	(void)tc;
	memset(&g, 0, sizeof(g));
	g.reqid = 1;
	strlcpy(g.sock, "/agency-models.1/abc/model.sock", sizeof(g.sock));
	wr(&w, FROM_PARENT, IMSG_HOLD_GRANT, &g, sizeof(g));
	ATF_REQUIRE(rd(FROM_PARENT, IMSG_HOLD_GRANT, w.buf, w.len, &u,
	    &why) == 0);
	ATF_CHECK_STREQ(u.hold_grant.sock, g.sock);
	strlcpy(g.sock, "abc/model.sock", sizeof(g.sock));
	wr(&w, FROM_PARENT, IMSG_HOLD_GRANT, &g, sizeof(g));
	ATF_CHECK(rd(FROM_PARENT, IMSG_HOLD_GRANT, w.buf, w.len, &u,
	    &why) == -1);

	memset(&pr, 0, sizeof(pr));
	pr.loadid = 1;
	pr.port = 5800;
	pr.method = READY_GET;
	strlcpy(pr.path, "/health", sizeof(pr.path));
	strlcpy(pr.sock, "/s/model.sock", sizeof(pr.sock));
	wr(&w, FROM_PARENT, IMSG_PROBE, &pr, sizeof(pr));
	ATF_REQUIRE(rd(FROM_PARENT, IMSG_PROBE, w.buf, w.len, &u, &why) == 0);
	ATF_CHECK_STREQ(u.probe.sock, pr.sock);
	strlcpy(pr.sock, "s/model.sock", sizeof(pr.sock));
	wr(&w, FROM_PARENT, IMSG_PROBE, &pr, sizeof(pr));
	ATF_CHECK(rd(FROM_PARENT, IMSG_PROBE, w.buf, w.len, &u, &why) == -1);
}

ATF_TC_WITHOUT_HEAD(short_and_long);
ATF_TC_BODY(short_and_long, tc)
{
	static struct sample	 s[64];
	union proto_msg		 u;
	struct msgw		 w;
	const char		*why;
	size_t			 i, k, n = samples(s);

	for (i = 0; i < n; i++) {
		wr(&w, s[i].from, s[i].type, &s[i].m, s[i].len);
		/* each length short of it */
		for (k = 0; k < w.len; k++)
			ATF_CHECK_MSG(rd(s[i].from, s[i].type, w.buf, k, &u,
			    &why) == -1, "type %u of %zu bytes of %zu read",
			    s[i].type, k, w.len);
		/* and a byte more */
		w.buf[w.len] = 0;
		ATF_CHECK_MSG(rd(s[i].from, s[i].type, w.buf, w.len + 1, &u,
		    &why) == -1 && strcmp(why, "bytes after its last field") ==
		    0, "type %u with a byte more read", s[i].type);
	}
	/* no payload where one is due, one where none is */
	ATF_CHECK(rd(FROM_PROXY, IMSG_HOLD_RELEASE, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_PROXY, IMSG_PROXY_READY, "x", 1, &u, &why) == -1);
	ATF_CHECK(rd(FROM_CTL, IMSG_CTL_RELOAD, "", 1, &u, &why) == -1);
}

/* Only the sender of a message sends it, on its own channel; a writer
 * is held to the structure of its message. */
ATF_TC_WITHOUT_HEAD(senders);
ATF_TC_BODY(senders, tc)
{
	static struct sample	 s[64];
	union proto_msg		 u;
	struct msgw		 w, other;
	const char		*why;
	size_t			 i, n = samples(s);
	enum proto_from		 f;

	for (i = 0; i < n; i++) {
		wr(&w, s[i].from, s[i].type, &s[i].m, s[i].len);
		for (f = FROM_PARENT; f <= FROM_AGENCYD; f++) {
			if (f == s[i].from || (s[i].type == IMSG_CANCEL &&
			    f <= FROM_PROXY))
				continue;
			ATF_CHECK_MSG(rd(f, s[i].type, w.buf, w.len, &u,
			    &why) == -1, "type %u read from %d", s[i].type,
			    f);
			ATF_CHECK(proto_write(&other, f, s[i].type, &s[i].m,
			    s[i].len) == -1);
		}
		ATF_CHECK(proto_write(&other, s[i].from, s[i].type, &s[i].m,
		    s[i].len - 1) == -1);
	}
	/* nothing of no known type, nor of the configuration's */
	ATF_CHECK(rd(FROM_PROXY, IMSG_NONE, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_PROXY, IMSG_MAXTYPE, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_PROXY, UINT32_MAX, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_PARENT, IMSG_CONF_END, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_CTL, 22, NULL, 0, &u, &why) == -1);
	ATF_CHECK(rd(FROM_CTL, IMSG_CTL_MAXTYPE, NULL, 0, &u, &why) == -1);
	/* a reader too small for its message */
	wr(&w, FROM_PARENT, IMSG_STATUS_END, &s[0].m,
	    sizeof(s[0].m.status_end));
	{
		struct imsg	 im = mk_imsg(IMSG_STATUS_END, w.buf, w.len);
		uint32_t	 small;

		ATF_CHECK(proto_read(&im, FROM_PARENT, &small, sizeof(small),
		    &why) == -1);
	}
}

/* A string ends inside its array, or the message is refused. */
ATF_TC_WITHOUT_HEAD(strings_bounded);
ATF_TC_BODY(strings_bounded, tc)
{
	union proto_msg		 u;
	struct proto_alias	 al;
	struct msgw		 w;
	const char		*why;
	size_t			 i;

	/* the longest an alias may be reads; one more byte does not */
	memset(&al, 0, sizeof(al));
	strlcpy(al.model, "m", sizeof(al.model));
	memset(al.alias, 'y', sizeof(al.alias) - 1);
	wr(&w, FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, &al, sizeof(al));
	ATF_CHECK(rd(FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, w.buf, w.len, &u,
	    &why) == 0);
	ATF_CHECK_EQ(strlen(u.alias.alias), sizeof(al.alias) - 1);
	msg_init(&w);
	msg_add_str(&w, "m");
	for (i = 0; i < sizeof(al.alias); i++)
		msg_add_bytes(&w, "y", 1);
	msg_add_bytes(&w, "", 1);
	ATF_CHECK(rd(FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, w.buf, w.len, &u,
	    &why) == -1);
	ATF_CHECK_STREQ(why, "a string too long");
	/* one that runs to the end of the message without its NUL */
	msg_init(&w);
	msg_add_str(&w, "m");
	msg_add_bytes(&w, "abc", 3);
	ATF_CHECK(rd(FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, w.buf, w.len, &u,
	    &why) == -1);
	ATF_CHECK_STREQ(why, "a string without its NUL");
}

/* Each field is checked as it is read: values out of their range and
 * ids that may not be 0 are refused. */
ATF_TC_WITHOUT_HEAD(ranges);
ATF_TC_BODY(ranges, tc)
{
	static struct sample	 s[64];
	union proto_msg		 u, m;
	struct msgw		 w;
	const char		*why;
	size_t			 n = samples(s);

#define REFUSED(F, T, field, expr) do {					\
	size_t	 i_;							\
	for (i_ = 0; i_ < n; i_++)					\
		if (s[i_].type == (T) && s[i_].from == (F))		\
			break;						\
	ATF_REQUIRE(i_ < n);						\
	m = s[i_].m;							\
	m.field expr;							\
	wr(&w, (F), (T), &m, s[i_].len);				\
	ATF_CHECK_MSG(rd((F), (T), w.buf, w.len, &u, &why) == -1,	\
	    "%s%s read", #field, #expr);				\
} while (0)
	REFUSED(FROM_PROXY, IMSG_HOLD_REQ, hold_req.reqid, = 0);
	REFUSED(FROM_PROXY, IMSG_HOLD_REQ, hold_req.flags, |= 0x80);
	REFUSED(FROM_PARENT, IMSG_HOLD_REFUSE, hold_refuse.reason,
	    = REFUSE_LAST + 1);
	REFUSED(FROM_PARENT, IMSG_HOLD_REFUSE, hold_refuse.reason, = -1);
	REFUSED(FROM_PARENT, IMSG_HOLD_REFUSE, hold_refuse.retry_after,
	    = PROTO_RETRY_MAX + 1);
	REFUSED(FROM_PARENT, IMSG_HOLD_REFUSE, hold_refuse.retry_after, = -1);
	REFUSED(FROM_PARENT, IMSG_HOLD_WAIT, hold_wait.wait, = WAIT_NONE);
	REFUSED(FROM_PARENT, IMSG_HOLD_WAIT, hold_wait.wait, = WAIT_LAST + 1);
	REFUSED(FROM_PARENT, IMSG_HOLD_WAIT, hold_wait.load_ms, = -2);
	REFUSED(FROM_PARENT, IMSG_PROBE, probe.method, = READY_POST + 1);
	REFUSED(FROM_PARENT, IMSG_PROBE, probe.port, = 0);
	REFUSED(FROM_PARENT, IMSG_PROBE, probe.path[0], = 'h');
	REFUSED(FROM_PROXY, IMSG_PROBE_RESULT, probe_result.ok, = 2);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.state,
	    = STATE_UNLOADED + 1);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.lazy, = 2);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.waiting,
	    = WAIT_LAST + 1);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.need_from,
	    = NEED_HEADROOM + 1);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.change,
	    = CHANGE_LAST + 1);
	REFUSED(FROM_PARENT, IMSG_STATUS_MODEL, status.model[0], = '\0');
	REFUSED(FROM_PARENT, IMSG_EV_STATE, ev_state.from, = -2);
	REFUSED(FROM_PARENT, IMSG_EV_STATE, ev_state.st.state, = -1);
	REFUSED(FROM_PARENT, IMSG_EV_RECORD, ev_record.changed, = 2);
	REFUSED(FROM_PARENT, IMSG_EV_SYNC_START, ev_sync.reload, = 2);
	REFUSED(FROM_PARENT, IMSG_EV_SYNC_END, ev_sync.ok, = -1);
	REFUSED(FROM_PARENT, IMSG_EV_QUEUE, ev_queue.waiting, = -1);
	REFUSED(FROM_PROXY, IMSG_ADMIN, admin.reqid, = 0);
	REFUSED(FROM_PROXY, IMSG_ADMIN, admin.op, = ADMIN_UNLOAD + 1);
	REFUSED(FROM_PROXY, IMSG_ADMIN, admin.wait, = 2);
	REFUSED(FROM_PARENT, IMSG_ADMIN_DONE, admin_done.status, = 199);
	REFUSED(FROM_PARENT, IMSG_ADMIN_DONE, admin_done.status, = 600);
	REFUSED(FROM_PROXY, IMSG_LOGS_REQ, logs_req.reqid, = 0);
	REFUSED(FROM_PROXY, IMSG_LOGS_REQ, logs_req.follow, = 2);
	REFUSED(FROM_PARENT, IMSG_LOGS_END, logs_end.found, = 2);
	REFUSED(FROM_PARENT, IMSG_PORTS, ports.n, = 0);
	REFUSED(FROM_PARENT, IMSG_PORTS, ports.r[3].lo, = 0);
	REFUSED(FROM_PARENT, IMSG_PORTS, ports.r[3].hi, = 5000);
	REFUSED(FROM_CTL, IMSG_CTL_LOAD, ctl_model.wait, = 2);
	REFUSED(FROM_CTL, IMSG_CTL_VERBOSE, ctl_verbose.verbose, = 4);
	REFUSED(FROM_CTL, IMSG_CTL_VERBOSE, ctl_verbose.verbose, = -1);
	REFUSED(FROM_AGENCYD, IMSG_CTL_STATUS_KEY, key_status.name[0], = '\0');
#undef REFUSED
	/* more port ranges than there may be: written by hand, as proto.c
	 * writes no more than there are */
	msg_init(&w);
	msg_add_u32(&w, PROTO_PORT_RANGES + 1);
	ATF_CHECK(rd(FROM_PARENT, IMSG_PORTS, w.buf, w.len, &u, &why) == -1);
	/* an unfollow answers nothing: it needs no id */
	memset(&m, 0, sizeof(m));
	strlcpy(m.logs_req.model, "m", sizeof(m.logs_req.model));
	wr(&w, FROM_PROXY, IMSG_LOGS_UNFOLLOW, &m, sizeof(m.logs_req));
	ATF_CHECK(rd(FROM_PROXY, IMSG_LOGS_UNFOLLOW, w.buf, w.len, &u,
	    &why) == 0);
	/* a status may keep as many load times as a status keeps */
	memset(&m, 0, sizeof(m));
	status_fill(&m.status);
	m.status.nload_ms = PROTO_LOAD_HISTORY + 1;
	wr(&w, FROM_PARENT, IMSG_STATUS_MODEL, &m, sizeof(m.status));
	ATF_CHECK(rd(FROM_PARENT, IMSG_STATUS_MODEL, w.buf, w.len, &u,
	    &why) == -1);
}

/* A writer fails, rather than cut, what does not fit a message. */
ATF_TC_WITHOUT_HEAD(writer_bound);
ATF_TC_BODY(writer_bound, tc)
{
	static unsigned char	 big[MSG_PAYLOAD_MAX + 1];
	struct proto_alias	 al;
	struct msgw		 w;
	struct imsgbuf		 ib;

	msg_init(&w);
	msg_add_bytes(&w, big, MSG_PAYLOAD_MAX);
	ATF_CHECK_EQ(w.err, 0);
	msg_add_u16(&w, 1);
	ATF_CHECK_EQ(w.err, 1);
	ATF_CHECK_EQ(w.len, MSG_PAYLOAD_MAX);
	imsg_init(&ib, -1);
	errno = 0;
	ATF_CHECK(msg_compose(&ib, IMSG_LOG, 0, -1, &w) == -1 &&
	    errno == ERANGE);
	ATF_CHECK_EQ(ib.w.queued, 0);
	/* a string that does not end inside its array is not read past */
	memset(&al, 'y', sizeof(al));
	ATF_CHECK(proto_write(&w, FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, &al,
	    sizeof(al)) == -1);
	al.alias[sizeof(al.alias) - 1] = '\0';
	al.model[0] = '\0';
	ATF_CHECK(proto_write(&w, FROM_AGENCYD, IMSG_CTL_STATUS_ALIAS, &al,
	    sizeof(al)) == 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, ctl_numbers);
	ATF_TP_ADD_TC(tp, roundtrip);
	ATF_TP_ADD_TC(tp, compact);
	ATF_TP_ADD_TC(tp, socket_paths);
	ATF_TP_ADD_TC(tp, short_and_long);
	ATF_TP_ADD_TC(tp, senders);
	ATF_TP_ADD_TC(tp, strings_bounded);
	ATF_TP_ADD_TC(tp, ranges);
	ATF_TP_ADD_TC(tp, writer_bound);
	return (atf_no_error());
}

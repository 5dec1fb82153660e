/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The operator console: one events stream (GET /v1/agency/events) gives
 * a snapshot and then every change; the page applies a snapshot by
 * replacing what it shows, and an event by changing one thing.  The
 * streams are read with fetch (an admin key can go in a header, which
 * EventSource cannot send), and reconnected with backoff and
 * Last-Event-ID.  A refusal for want of an admin key is not an outage:
 * the page says what key it needs and waits for one.  A snapshot
 * brings each model's last reason (in its record) and the last changes
 * (its "recent"), so a page opened now says what just happened.  Data
 * from the server only ever reaches the page as text (textContent),
 * never as markup.  console/EVENTS.md is the contract.
 */
'use strict';

(function () {
	const EVENTS_URL = '/v1/agency/events';
	const BACKOFF_MIN = 500;		/* ms */
	const BACKOFF_MAX = 10000;
	const SILENCE_MS = 45000;		/* three missed pings */
	const OFFLINE_AFTER = 3;		/* failed attempts */
	const WINDOW_MS = 15 * 60 * 1000;	/* the charts' span */
	const LOG_MAX = 1000;			/* lines in the log pane */
	const FEED_MAX = 200;			/* entries in the feed */
	const NCOLOURS = 8;

	const $ = (id) => document.getElementById(id);

	const st = {
		stream: null,		/* the proxy's stream of the last snapshot */
		seq: 0,			/* of the last event applied, in it */
		models: new Map(),	/* name -> record */
		order: [],		/* names, in the server's order */
		colours: new Map(),	/* name -> colour index */
		memory: null,
		history: [],		/* summaries, oldest first */
		summaryMs: 5000,
		skew: 0,		/* server clock - our clock, ms */
		lostAt: 0,		/* when the stream was lost, or 0 */
		keyWanted: '',		/* why a key is asked for, or '' */
		pending: new Set(),	/* "act:model" being posted */
	};
	const rows = new Map();		/* name -> tr */

	/* --- small helpers ------------------------------------------- */

	function now() {
		return Date.now() + st.skew;
	}

	function el(tag, cls, text) {
		const e = document.createElement(tag);
		if (cls)
			e.className = cls;
		if (text !== undefined)
			e.textContent = text;
		return e;
	}

	function fmtBytes(n) {
		if (n === null || n === undefined || !isFinite(n))
			return '—';
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (Math.abs(n) >= 1024 && i < units.length - 1) {
			n /= 1024;
			i++;
		}
		return (i === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 1 : 0)) +
		    ' ' + units[i];
	}

	function fmtDur(ms) {
		if (ms === null || ms === undefined || !isFinite(ms))
			return '—';
		if (ms < 1000)
			return Math.round(ms) + ' ms';
		const s = ms / 1000;
		if (s < 60)
			return s.toFixed(s < 10 ? 1 : 0) + ' s';
		const m = Math.floor(s / 60);
		const rs = Math.floor(s % 60);
		if (m < 60)
			return m + ' m' + (rs ? ' ' + rs + ' s' : '');
		return Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + m % 60 +
		    ' m' : '');
	}

	function fmtAgo(t) {
		if (t === null || t === undefined)
			return 'never';
		const d = now() - t;
		return d < 1000 ? 'just now' : fmtDur(d) + ' ago';
	}

	function fmtClock(t) {
		const d = new Date(t);
		return d.toLocaleTimeString([], { hour12: false });
	}

	function fmtRate(r) {
		if (r === 0)
			return '0';
		return r < 1 ? r.toFixed(2) : r < 10 ? r.toFixed(1) :
		    r.toFixed(0);
	}

	function plural(n, one, many) {
		return n + ' ' + (n === 1 ? one : many);
	}

	function colour(name) {
		if (!st.colours.has(name)) {
			const used = new Set(st.colours.values());
			let c = 0;
			while (used.has(c) && c < NCOLOURS)
				c++;
			st.colours.set(name, c % NCOLOURS);
		}
		return st.colours.get(name);
	}

	/* --- the server ---------------------------------------------- */

	/*
	 * The admin key (issue 16): one the operator gave this tab when the
	 * admin routes asked for it (the key form), kept for the tab alone
	 * (sessionStorage, or this page where that is refused) and sent
	 * with every admin request.
	 */
	const KEY_ITEM = 'agency-admin-key';
	const KEY_CODES = new Set(['invalid_api_key', 'admin_key_required']);
	let pageKey = null;

	function keyGiven() {
		let key = pageKey;
		try {
			key = sessionStorage.getItem(KEY_ITEM) || pageKey;
		} catch (e) {
			/* storage refused: the page's own */
		}
		return key;
	}

	function authHeaders() {
		const key = keyGiven();
		return key ? { Authorization: 'Bearer ' + key } : {};
	}

	function keySet(key) {
		pageKey = key;
		try {
			sessionStorage.setItem(KEY_ITEM, key);
		} catch (e) {
			/* kept for this page only */
		}
	}

	/*
	 * What to say when the admin routes refused the page for its key
	 * (the code of the refusal): the connection line's words and the
	 * key form's.  agency's own message speaks of headers, which the
	 * page sends itself.
	 */
	function keyWords(code) {
		if (code === 'admin_key_required')
			return ['Up: that key is not an admin key',
			    'That key is not an admin key. The console needs ' +
			    'a key marked admin in agency.conf.'];
		if (keyGiven())
			return ['Up: that key was refused',
			    'That key was refused. The console needs an admin ' +
			    'key (a key marked admin in agency.conf).'];
		return ['Up: an admin key is needed',
		    'agency has API keys: the console needs an admin key ' +
		    '(a key marked admin in agency.conf) to show the models.'];
	}

	/* The admin routes refused us for want of an admin key: ask. */
	function keyAsk(message) {
		const f = $('key-form');
		setText($('key-why'), message);
		if (f.hidden) {
			f.hidden = false;
			$('key-input').focus();
		}
	}

	/* The code and message of an OpenAI-shaped error answer. */
	async function errorInfo(res) {
		try {
			const j = await res.json();
			if (j && j.error && typeof j.error.message === 'string')
				return { code: String(j.error.code || ''),
				    message: j.error.message };
		} catch (e) {
			/* not JSON */
		}
		return { code: '', message: 'HTTP ' + res.status };
	}

	/* The message of an OpenAI-shaped error answer, or the status. */
	async function errorText(res) {
		return (await errorInfo(res)).message;
	}

	async function post(path, body) {
		const res = await fetch(path, {
			method: 'POST',
			headers: Object.assign({
				'Content-Type': 'application/json'
			}, authHeaders()),
			body: JSON.stringify(body),
			cache: 'no-store'
		});
		if (!res.ok)
			throw new Error(await errorText(res));
		return res.json();
	}

	/*
	 * A Server-Sent Events reader over fetch, reconnecting with backoff
	 * and Last-Event-ID.  opts: url() for each attempt, onOpen(), onEvent
	 * (type, data, id), onLost(message, attempt, delay), done() saying
	 * whether to stop for good.
	 */
	class SseClient {
		constructor(opts) {
			this.opts = opts;
			this.lastId = '';
			this.attempt = 0;
			this.stopped = false;
			this.ctl = null;
			this.wake = null;
			this.retryAt = 0;
			this.refusal = null;	/* the key's, of the last try */
			this.kicked = false;	/* retryNow during a try */
		}

		start() {
			this.loop();
		}

		stop() {
			this.stopped = true;
			if (this.ctl)
				this.ctl.abort();
			if (this.wake)
				this.wake();
		}

		retryNow() {
			if (this.wake)
				this.wake();
			else
				this.kicked = true;
		}

		async loop() {
			while (!this.stopped) {
				let why;
				this.refusal = null;
				try {
					why = await this.once();
				} catch (e) {
					why = e && e.name === 'AbortError' ?
					    'no data for ' + SILENCE_MS / 1000 +
					    ' s' : (e && e.message) || String(e);
				}
				if (this.stopped)
					break;
				if (this.refusal !== null && this.opts.onKey) {
					/* agency is up and wants a key:
					 * nothing changes until one is given */
					this.attempt = 0;
					this.retryAt = 0;
					this.opts.onKey(this.refusal.code);
					await this.pause(-1);
					continue;
				}
				if (this.refusal !== null)
					keyAsk(this.refusal.message);
				this.attempt++;
				const delay = Math.min(BACKOFF_MAX,
				    BACKOFF_MIN * 2 ** (this.attempt - 1));
				this.retryAt = Date.now() + delay;
				this.opts.onLost(why, this.attempt, delay);
				if (this.stopped)
					break;
				await this.pause(delay);
			}
		}

		/* Until retryNow or stop, or delay ms (-1: no limit). */
		async pause(delay) {
			if (this.kicked) {
				this.kicked = false;
				return;
			}
			await new Promise((resolve) => {
				const t = delay < 0 ? null :
				    setTimeout(resolve, delay);
				this.wake = () => {
					clearTimeout(t);
					resolve();
				};
			});
			this.wake = null;
		}

		/* One connection, until it ends: the reason it ended. */
		async once() {
			const ctl = new AbortController();
			let silence = null;
			const quiet = () => {
				clearTimeout(silence);
				silence = setTimeout(() => ctl.abort(),
				    SILENCE_MS);
			};
			this.ctl = ctl;
			const headers = Object.assign({
				Accept: 'text/event-stream'
			}, authHeaders());
			if (this.lastId !== '')
				headers['Last-Event-ID'] = this.lastId;
			quiet();
			try {
				const res = await fetch(this.opts.url(), {
					headers: headers,
					cache: 'no-store',
					signal: ctl.signal
				});
				if (!res.ok) {
					const e = await errorInfo(res);
					if (KEY_CODES.has(e.code))
						this.refusal = e;
					return 'refused: ' + e.message;
				}
				const ct = res.headers.get('Content-Type') || '';
				if (!ct.startsWith('text/event-stream'))
					return 'not an event stream (' + ct + ')';
				this.attempt = 0;
				this.kicked = false;
				this.opts.onOpen();
				const rd = res.body.getReader();
				const dec = new TextDecoder();
				const p = { buf: '', event: '', data: null };
				for (;;) {
					const { value, done } = await rd.read();
					if (done)
						break;
					quiet();
					this.feed(p, dec.decode(value,
					    { stream: true }));
					if (this.stopped || this.opts.done())
						return 'stopped';
				}
				return 'the stream ended';
			} finally {
				clearTimeout(silence);
				this.ctl = null;
			}
		}

		/* The SSE framing: lines end in CR, LF or CRLF. */
		feed(p, text) {
			p.buf += text;
			for (;;) {
				const i = p.buf.search(/[\r\n]/);
				if (i < 0 || (p.buf[i] === '\r' &&
				    i === p.buf.length - 1))
					break;
				const n = p.buf[i] === '\r' &&
				    p.buf[i + 1] === '\n' ? 2 : 1;
				const line = p.buf.slice(0, i);
				p.buf = p.buf.slice(i + n);
				this.line(p, line);
			}
		}

		line(p, line) {
			if (line === '') {
				if (p.data !== null)
					this.opts.onEvent(p.event || 'message',
					    p.data, this.lastId);
				p.event = '';
				p.data = null;
				return;
			}
			if (line[0] === ':')
				return;
			const c = line.indexOf(':');
			const name = c < 0 ? line : line.slice(0, c);
			let value = c < 0 ? '' : line.slice(c + 1);
			if (value[0] === ' ')
				value = value.slice(1);
			if (name === 'event')
				p.event = value;
			else if (name === 'data')
				p.data = p.data === null ? value :
				    p.data + '\n' + value;
			else if (name === 'id' && value.indexOf('\0') < 0)
				this.lastId = value;
		}
	}

	/* --- the events ---------------------------------------------- */

	/*
	 * An entry in the feed, newest first, at its time t (our clock;
	 * default now): a change a snapshot brings goes below what the page
	 * said after it.
	 */
	function feed(text, cls, t) {
		const list = $('feed');
		const li = el('li', cls);
		const when = t === undefined ? Date.now() : t;
		const te = el('time', null, fmtClock(when));
		te.dateTime = new Date(when).toISOString();
		li.dataset.t = String(when);
		li.appendChild(te);
		li.appendChild(document.createTextNode(text));
		let at = list.firstChild;
		while (at && Number(at.dataset.t) > when)
			at = at.nextSibling;
		list.insertBefore(li, at);
		while (list.childElementCount > FEED_MAX)
			list.removeChild(list.lastChild);
	}

	function setModels(list) {
		st.models = new Map();
		st.order = [];
		for (const r of list) {
			st.models.set(r.model, r);
			st.order.push(r.model);
		}
		for (const name of st.colours.keys())
			if (!st.models.has(name))
				st.colours.delete(name);
	}

	function reasonText(ev) {
		switch (ev.reason) {
		case 'request':
			return 'loading for a request';
		case 'load':
			return 'loading: asked by an operator';
		case 'start':
			return 'loading at start';
		case 'restart':
			return 'restarting after a failure';
		case 'loaded':
			return 'loaded in ' + fmtDur(ev.loadMs);
		case 'evicted':
			return 'evicted for ' + (ev.for || 'another model');
		case 'idle':
			return 'stopped after its idle timeout';
		case 'reload':
			return ev.state === 'loading' ?
			    'loading its new configuration' :
			    'stopped by a reload';
		case 'refused':
			return 'not loaded: it did not fit';
		case 'stopped':
			return 'stopped';
		case 'shutdown':
			return 'stopped: agency is shutting down';
		case 'unload':
			return 'unloaded by an operator';
		case 'stop':
			return 'stopped by an operator; loads on demand';
		case 'load-failed':
		case 'exited':
			return (ev.error || 'failed') +
			    (ev.restartInS ? '; restarting in ' +
			    ev.restartInS + ' s' : '');
		default:
			return ev.reason || '';
		}
	}

	/* Why a model is in its state, from its record. */
	function recordReason(r) {
		if (!r.reason)
			return r.state === 'failed' && r.error ? r.error : '';
		const h = r.loadHistory || [];
		return reasonText({ state: r.state, reason: r.reason,
		    for: r.for, error: r.error, loadMs: h.length ?
		    h[h.length - 1] : null, restartInS: null });
	}

	function stateLine(ev) {
		const why = reasonText(ev);
		return [ev.model + ' ' + ev.state + (why ? ' — ' + why : ''),
		    ev.state === 'failed' ? 'bad' : null];
	}

	function reloadLine(ev) {
		if (!ev.ok)
			return ['Reload failed: ' + (ev.error || ''), 'bad'];
		const parts = [];
		if (ev.added && ev.added.length)
			parts.push('added ' + ev.added.join(', '));
		if (ev.removed && ev.removed.length)
			parts.push('removed ' + ev.removed.join(', '));
		if (ev.changed && ev.changed.length)
			parts.push('changed ' + ev.changed.join(', '));
		return ['Configuration reloaded' + (parts.length ? ': ' +
		    parts.join('; ') : ', nothing changed'), null];
	}

	function cancelLine(ev) {
		return [plural(ev.cancelled, 'request', 'requests') + ' of ' +
		    ev.model + ' cancelled', null];
	}

	const lines = { state: stateLine, reload: reloadLine,
	    cancel: cancelLine };

	/* An event's entry in the feed, at its time (the server's). */
	function feedEvent(type, ev) {
		const [text, cls] = lines[type](ev);
		feed(text, cls, typeof ev.time === 'number' ?
		    ev.time - st.skew : undefined);
	}

	/* "STREAM.SEQ" as [STREAM, SEQ], or null. */
	function parseId(id) {
		const m = /^([0-9a-f]{8})\.([0-9]+)$/.exec(id || '');
		return m ? [m[1], Number(m[2])] : null;
	}

	/*
	 * The changes a snapshot repeats that this page has not shown:
	 * all of them on a new page or from another proxy, else those after
	 * the last event it applied.
	 */
	function feedRecent(recent) {
		for (const e of recent || []) {
			if (!e || !lines[e.type])
				continue;
			const id = parseId(e.id);
			if (id && id[0] === st.stream && id[1] <= st.seq)
				continue;
			feedEvent(e.type, e);
		}
	}

	const handlers = {
		snapshot(ev) {
			if (st.stream !== null && ev.stream !== st.stream)
				feed('agency-proxy restarted: showing its ' +
				    'state afresh', 'note');
			else if (st.stream !== null)
				feed('Events were missed: showing the state ' +
				    'afresh', 'note');
			feedRecent(ev.recent);
			st.stream = ev.stream;
			setModels(ev.models || []);
			st.memory = ev.memory || null;
			st.summaryMs = ev.summaryMs || st.summaryMs;
			st.history = (ev.history || []).slice();
			renderAll();
		},
		state(ev) {
			const r = ev.record || Object.assign({},
			    st.models.get(ev.model), { state: ev.state });
			if (!('reason' in r)) {
				r.reason = ev.reason;
				r.for = ev.for;
			}
			if (!st.models.has(ev.model))
				st.order.push(ev.model);
			st.models.set(ev.model, r);
			if (ev.memory)
				st.memory = ev.memory;
			feedEvent('state', ev);
			syncRows();
			renderMemory();
		},
		queue(ev) {
			const r = st.models.get(ev.model);
			if (!r)
				return;
			for (const k of ['requestsInProgress', 'queued',
			    'oldestWaitMs', 'waitingFor', 'lastUsedAt'])
				if (k in ev)
					r[k] = ev[k];
			renderRow(ev.model);
		},
		reload(ev) {
			feedEvent('reload', ev);
			if (!ev.ok)
				return;
			setModels(ev.models || []);
			if (ev.memory)
				st.memory = ev.memory;
			renderAll();
		},
		cancel(ev) {
			feedEvent('cancel', ev);
		},
		summary(ev) {
			if (ev.memory)
				st.memory = ev.memory;
			st.history.push(ev);
			const old = ev.time - WINDOW_MS;
			while (st.history.length && st.history[0].time < old)
				st.history.shift();
			renderMemory();
			renderCharts();
		}
	};

	let lastRefusal = '';

	const events = new SseClient({
		url: () => EVENTS_URL,
		done: () => false,
		onOpen() {
			if (st.lostAt)
				feed('Reconnected after ' +
				    fmtDur(Date.now() - st.lostAt), 'note');
			st.lostAt = 0;
			st.keyWanted = '';
			lastRefusal = '';
			$('key-form').hidden = true;
			setConn('live', 'Live');
			document.body.classList.remove('stale');
			renderEmpty();
		},
		onEvent(type, data, id) {
			let ev;
			try {
				ev = JSON.parse(data);
			} catch (e) {
				return;		/* not ours to show */
			}
			if (typeof ev.time === 'number')
				st.skew = ev.time - Date.now();
			const h = handlers[type];
			if (h)
				h(ev);
			const sid = parseId(id);
			if (sid && sid[0] === st.stream)
				st.seq = sid[1];
			document.body.dataset.lastEventId = id;
		},
		onKey(code) {
			const [line, why] = keyWords(code);
			if (why !== st.keyWanted)
				feed(why, 'note');
			st.keyWanted = why;
			/* the server answered: no outage to count */
			st.lostAt = 0;
			lastRefusal = '';
			keyAsk(why);
			setConn('key', line);
			renderEmpty();
		},
		onLost(why, attempt, delay) {
			if (!st.lostAt) {
				st.lostAt = Date.now();
				feed('Connection lost: ' + why, 'bad');
			} else if (why !== lastRefusal && why.startsWith(
			    'refused'))
				feed('Connection ' + why, 'bad');
			lastRefusal = why;
			document.body.classList.add('stale');
			connTick();
			renderEmpty();
		}
	});

	/* --- the connection line ------------------------------------- */

	function setConn(state, text) {
		const c = $('conn');
		c.dataset.conn = state;
		if ($('conn-text').textContent !== text)
			$('conn-text').textContent = text;
		$('conn-retry').hidden = state === 'live' ||
		    state === 'connecting' || state === 'key';
	}

	function connTick() {
		if (!st.lostAt)
			return;
		const wait = Math.max(0, Math.ceil((events.retryAt -
		    Date.now()) / 1000));
		const since = 'since ' + fmtClock(st.lostAt);
		const next = wait > 0 ? 'retrying in ' + wait + ' s' :
		    'retrying now';
		if (events.attempt >= OFFLINE_AFTER)
			setConn('offline', 'Offline ' + since + '; ' + next);
		else
			setConn('reconnecting', 'Connection lost ' + since +
			    '; ' + next);
	}

	/* --- rendering ----------------------------------------------- */

	function syncRows() {
		const body = $('model-rows');
		for (const [name, tr] of rows)
			if (!st.models.has(name)) {
				tr.remove();
				rows.delete(name);
			}
		let prev = null;
		for (const name of st.order) {
			let tr = rows.get(name);
			if (!tr) {
				tr = newRow(name);
				rows.set(name, tr);
			}
			const want = prev ? prev.nextSibling : body.firstChild;
			if (want !== tr)
				body.insertBefore(tr, want);
			prev = tr;
			renderRow(name);
		}
		$('no-models').hidden = st.order.length > 0;
		$('models').hidden = st.order.length === 0;
		renderEmpty();
		syncLogChoice();
	}

	/* What the models pane says while it has no row: why. */
	function renderEmpty() {
		let t;
		if (st.stream !== null)
			t = 'No model is served.';
		else if (st.keyWanted)
			t = 'The models show once an admin key is given.';
		else if (st.lostAt)
			t = 'No models yet: agency has not answered.';
		else
			t = 'Waiting for agency…';
		setText($('no-models'), t);
	}

	function newRow(name) {
		const tr = $('row-tpl').content.firstElementChild
		    .cloneNode(true);
		tr.dataset.model = name;
		tr.querySelector('.name').textContent = name;
		for (const b of tr.querySelectorAll('button.act')) {
			const verb = b.textContent;
			b.setAttribute('aria-label', verb + ' ' + name);
		}
		return tr;
	}

	function busyCount(r) {
		return (r.requestsInProgress || 0) + (r.queued || 0);
	}

	function idleText(r) {
		if (!r.idleTimeoutMs)
			return 'never';
		if (r.state !== 'ready' || busyCount(r) > 0 ||
		    r.lastUsedAt === null || r.lastUsedAt === undefined)
			return 'after ' + fmtDur(r.idleTimeoutMs) + ' idle';
		const left = r.lastUsedAt + r.idleTimeoutMs - now();
		return left > 0 ? 'in ' + fmtDur(left) : 'due';
	}

	function setText(node, text) {
		if (node.textContent !== text)
			node.textContent = text;
	}

	function renderRow(name) {
		const tr = rows.get(name);
		const r = st.models.get(name);
		if (!tr || !r)
			return;
		if (tr.dataset.state !== r.state)
			tr.dataset.state = r.state;
		const q = (s) => tr.querySelector(s);
		setText(q('.aliases'), r.aliases && r.aliases.length ?
		    'also ' + r.aliases.join(', ') : '');
		/* a load that waits leaves its model stopped, with no
		 * process: it is queued, not loading */
		const waits = r.state === 'stopped' && r.queued > 0 &&
		    (r.waitingFor === 'memory' || r.waitingFor === 'turn');
		setText(q('.state'), waits ? 'queued' : r.state);
		let why = recordReason(r);
		if (r.state === 'failed' && r.restartAt) {
			const s = Math.max(0, Math.ceil((r.restartAt -
			    now()) / 1000));
			why = (r.error || 'failed') + '; restarting in ' +
			    s + ' s';
		}
		if (waits)
			why = 'waiting for ' + (r.waitingFor === 'turn' ?
			    'its turn to load' : 'memory');
		setText(q('.reason'), why);
		setText(q('.need'), fmtBytes(r.need));
		setText(q('.inflight'), String(r.requestsInProgress || 0));
		let queued = String(r.queued || 0);
		if (r.queued && r.oldestWaitMs !== null &&
		    r.oldestWaitMs !== undefined)
			queued += ' (oldest ' + fmtDur(r.oldestWaitMs) + ')';
		setText(q('.queued'), queued);
		setText(q('.lastused'), fmtAgo(r.lastUsedAt));
		setText(q('.idle'), idleText(r));
		const h = r.loadHistory || [];
		let loads = h.length ? h.slice(-3).map(fmtDur).join(' · ') :
		    '—';
		if (r.loads)
			loads += ' (' + plural(r.loads, 'load', 'loads') + ')';
		setText(q('.loads'), loads);
		const canLoad = r.state === 'stopped' ||
		    r.state === 'unloaded' || r.state === 'failed';
		const canUnload = r.state === 'ready' ||
		    r.state === 'loading' || r.state === 'failed';
		setEnabled(q('[data-act="load"]'), canLoad, 'load', name);
		setEnabled(q('[data-act="unload"]'), canUnload, 'unload',
		    name);
		setEnabled(q('[data-act="stop"]'), r.lazy && (canUnload ||
		    r.state === 'unloaded'), 'stop', name);
		setEnabled(q('[data-act="cancel"]'), busyCount(r) > 0,
		    'cancel', name);
	}

	function setEnabled(b, ok, act, name) {
		const busy = st.pending.has(act + ':' + name);
		const dis = !ok || busy;
		if (b.disabled !== dis)
			b.disabled = dis;
		if (busy)
			b.setAttribute('aria-busy', 'true');
		else
			b.removeAttribute('aria-busy');
	}

	function renderMemory() {
		const m = st.memory;
		const used = $('mem-used');
		const loaded = st.order.map((n) => st.models.get(n))
		    .filter((r) => r && (r.state === 'ready' ||
		    r.state === 'loading') && r.need > 0);
		const sum = loaded.reduce((a, r) => a + r.need, 0);
		const usedBytes = m && typeof m.inUse === 'number' ? m.inUse :
		    sum;
		const avail = m && typeof m.available === 'number' ?
		    m.available : 0;
		const budget = m && typeof m.budget === 'number' ?
		    m.budget : null;
		/* the bar spans what models could have at most */
		let scale = budget !== null ? Math.max(budget, usedBytes) :
		    usedBytes + avail;
		if (scale <= 0)
			scale = 1;
		while (used.childElementCount > loaded.length)
			used.removeChild(used.lastChild);
		while (used.childElementCount < loaded.length)
			used.appendChild(el('div'));
		loaded.forEach((r, i) => {
			const seg = used.children[i];
			seg.className = 'seg c' + colour(r.model) +
			    (r.state === 'loading' ? ' mem-loading' : '');
			seg.style.width = (100 * r.need / scale) + '%';
			seg.title = r.model + ': ' + fmtBytes(r.need) +
			    (r.state === 'loading' ? ' (loading)' : '');
		});
		const free = budget !== null ? Math.min(avail,
		    Math.max(0, budget - sum)) : avail;
		$('mem-avail').style.width = (100 * free / scale) + '%';
		$('mem-avail').title = 'available: ' + fmtBytes(avail);
		const mark = $('mem-budget');
		mark.hidden = budget === null || scale <= budget;
		if (!mark.hidden)
			mark.style.left = (100 * budget / scale) + '%';
		const pct = Math.round(100 * usedBytes / scale);
		$('mem-bar').setAttribute('aria-valuenow', String(pct));
		$('mem-bar').setAttribute('aria-valuetext', pct +
		    '% of ' + (budget !== null ? 'the budget' :
		    'what models could use'));
		if (!m) {
			setText($('mem-text'), 'No figures yet.');
			return;
		}
		let t = 'Models need ' + fmtBytes(usedBytes) +
		    (budget !== null ? ' of the ' + fmtBytes(budget) +
		    ' budget' : ' (no budget)') + '. Available on the ' +
		    'machine: ' + fmtBytes(avail);
		if (typeof m.total === 'number')
			t += ' of ' + fmtBytes(m.total);
		if (typeof m.reserve === 'number' && m.reserve > 0)
			t += ', keeping ' + fmtBytes(m.reserve) + ' in reserve';
		setText($('mem-text'), t + '.');
	}

	/* One chart: a polyline per model of f(summary entry) per second. */
	function renderChart(svgId, sumId, pick, unit) {
		const svg = $(svgId);
		const ns = 'http://www.w3.org/2000/svg';
		const W = 600, H = 160, PAD = 6;
		const end = now(), start = end - WINDOW_MS;
		const series = new Map();
		let max = 0;
		for (const name of st.order)
			series.set(name, []);
		for (const s of st.history) {
			const secs = (s.intervalMs || st.summaryMs) / 1000;
			for (const name of st.order) {
				const m = s.models && s.models[name];
				const v = m ? pick(m) / secs : 0;
				series.get(name).push([s.time, v]);
				if (v > max)
					max = v;
			}
		}
		const top = max > 0 ? niceCeil(max) : 1;
		while (svg.firstChild)
			svg.removeChild(svg.firstChild);
		for (const f of [0, 0.5, 1]) {
			const g = document.createElementNS(ns, 'line');
			const y = PAD + (H - 2 * PAD) * (1 - f);
			g.setAttribute('x1', '0');
			g.setAttribute('x2', String(W));
			g.setAttribute('y1', String(y));
			g.setAttribute('y2', String(y));
			g.setAttribute('class', 'grid');
			svg.appendChild(g);
		}
		const gapMs = 2.5 * st.summaryMs;
		const parts = [];
		for (const [name, pts] of series) {
			let d = '', lastT = null;
			for (const [t, v] of pts) {
				if (t < start)
					continue;
				const x = W * (t - start) / WINDOW_MS;
				const y = PAD + (H - 2 * PAD) * (1 - v / top);
				d += (lastT === null || t - lastT > gapMs ?
				    'M' : 'L') + x.toFixed(1) + ' ' +
				    y.toFixed(1) + ' ';
				lastT = t;
			}
			if (d) {
				const p = document.createElementNS(ns, 'path');
				p.setAttribute('d', d.trim());
				p.setAttribute('class', 'series l' +
				    colour(name));
				p.setAttribute('data-model', name);
				svg.appendChild(p);
			}
			const last = pts.length ? pts[pts.length - 1][1] : 0;
			const peak = pts.reduce((a, p) => Math.max(a, p[1]), 0);
			parts.push(name + ' ' + fmtRate(last) + ' now, peak ' +
			    fmtRate(peak));
		}
		setText($(sumId), st.history.length ? 'Scale 0 to ' +
		    fmtRate(top) + ' ' + unit + '. ' + parts.join('; ') +
		    '.' : 'No figures yet.');
	}

	function niceCeil(v) {
		const p = 10 ** Math.floor(Math.log10(v));
		for (const m of [1, 2, 2.5, 5, 10])
			if (v <= m * p)
				return m * p;
		return 10 * p;
	}

	function renderCharts() {
		renderChart('chart-req', 'chart-req-sum',
		    (m) => m.requests || 0, 'requests/s');
		renderChart('chart-tok', 'chart-tok-sum',
		    (m) => m.completionTokens || 0, 'tokens/s');
		const legend = $('legend');
		while (legend.firstChild)
			legend.removeChild(legend.firstChild);
		for (const name of st.order) {
			const li = el('li');
			li.appendChild(el('span', 'sw c' + colour(name)));
			li.appendChild(document.createTextNode(name));
			legend.appendChild(li);
		}
	}

	function renderAll() {
		syncRows();
		renderMemory();
		renderCharts();
	}

	/* Every second: the clocks (last used, idle, restarts, outage). */
	function tick() {
		for (const name of st.order)
			renderRow(name);
		connTick();
	}

	/* --- actions ------------------------------------------------- */

	function showAlert(text) {
		const a = $('alert');
		a.textContent = text;
		a.hidden = !text;
	}

	async function act(what, name) {
		const key = what + ':' + name;
		if (st.pending.has(key))
			return;
		st.pending.add(key);
		renderRow(name);
		showAlert('');
		try {
			if (what === 'load')
				await post('/v1/agency/load',
				    { model: name, wait: false });
			else if (what === 'unload')
				await post('/v1/agency/unload',
				    { model: name });
			else if (what === 'stop')
				await post('/v1/agency/stop',
				    { model: name });
			else if (what === 'cancel')
				await post('/v1/agency/cancel',
				    { model: name });
		} catch (e) {
			showAlert('Could not ' + what + ' ' + name + ': ' +
			    e.message);
			feed(what + ' ' + name + ' failed: ' + e.message,
			    'bad');
		} finally {
			st.pending.delete(key);
			renderRow(name);
		}
	}

	/* An unload or a stop (what) of a busy model asks first. */
	function confirmStop(what, name) {
		const r = st.models.get(name);
		if (!r || busyCount(r) === 0)
			return act(what, name);
		const dlg = $('confirm');
		const parts = [];
		if (r.requestsInProgress)
			parts.push(plural(r.requestsInProgress, 'request',
			    'requests') + ' in flight');
		if (r.queued)
			parts.push(plural(r.queued, 'request', 'requests') +
			    ' waiting');
		const verb = what === 'stop' ? 'Stop' : 'Unload';
		$('confirm-text').textContent = name + ' has ' +
		    parts.join(' and ') + '. ' + (what === 'stop' ?
		    'Stopping' : 'Unloading') + ' it ends them.';
		$('confirm-h').textContent = verb + ' a busy model?';
		$('confirm-yes').value = what;
		$('confirm-yes').textContent = verb;
		dlg.dataset.model = name;
		dlg.dataset.what = what;
		dlg.returnValue = '';
		dlg.showModal();
		return null;
	}

	function onConfirmClose() {
		const dlg = $('confirm');
		const name = dlg.dataset.model;
		delete dlg.dataset.model;
		const back = rows.get(name);
		const what = dlg.dataset.what;
		delete dlg.dataset.what;
		if (dlg.returnValue === what && name)
			act(what, name);
		if (back) {
			const b = back.querySelector('[data-act="' + what +
			    '"]');
			if (b && !b.disabled)
				b.focus();
		}
	}

	function onRowClick(e) {
		const b = e.target.closest('button.act');
		if (!b || b.disabled)
			return;
		const tr = b.closest('tr');
		const name = tr && tr.dataset.model;
		if (!name)
			return;
		const what = b.dataset.act;
		if (what === 'unload' || what === 'stop')
			confirmStop(what, name);
		else if (what === 'logs') {
			$('log-model').value = name;
			followLog(name);
			$('log').focus();
		} else
			act(what, name);
	}

	/* --- the log pane -------------------------------------------- */

	let logClient = null;
	let logModel = '';

	function syncLogChoice() {
		const sel = $('log-model');
		const have = Array.from(sel.options).map((o) => o.value);
		if (have.join('\n') !== st.order.join('\n')) {
			const keep = sel.value;
			while (sel.firstChild)
				sel.removeChild(sel.firstChild);
			for (const name of st.order) {
				const o = el('option', null, name);
				o.value = name;
				sel.appendChild(o);
			}
			if (st.order.includes(keep))
				sel.value = keep;
		}
		if (logModel && !st.models.has(logModel)) {
			logLine(logModel + ' is no longer served.', 'gap');
			stopLog();
			setText($('log-state'), 'model removed');
		}
		if (!logModel && !logClient && st.order.length)
			followLog(sel.value || st.order[0]);
	}

	function logLine(text, cls) {
		const pane = $('log');
		const atEnd = pane.scrollTop + pane.clientHeight >=
		    pane.scrollHeight - 4;
		const line = el('span', cls, text + '\n');
		pane.appendChild(line);
		while (pane.childElementCount > LOG_MAX)
			pane.removeChild(pane.firstChild);
		if ($('log-follow').checked && atEnd)
			pane.scrollTop = pane.scrollHeight;
	}

	function stopLog() {
		if (logClient)
			logClient.stop();
		logClient = null;
		logModel = '';
	}

	function followLog(name) {
		if (name === logModel && logClient)
			return;
		stopLog();
		const pane = $('log');
		while (pane.firstChild)
			pane.removeChild(pane.firstChild);
		if (!name)
			return;
		logModel = name;
		pane.dataset.model = name;
		let ended = false;
		const c = new SseClient({
			url: () => '/v1/agency/logs/' +
			    encodeURIComponent(name) + '?follow=1',
			done: () => ended,
			onOpen() {
				setText($('log-state'), 'following');
			},
			onEvent(type, data) {
				let ev;
				try {
					ev = JSON.parse(data);
				} catch (e) {
					return;
				}
				if (type === 'line')
					logLine(String(ev.line));
				else if (type === 'gap')
					logLine('… ' + plural(ev.missed,
					    'line', 'lines') + ' missed',
					    'gap');
				else if (type === 'end') {
					ended = true;
					setText($('log-state'), 'ended' +
					    (ev.reason ? ': ' + ev.reason :
					    ''));
				}
			},
			onLost(why) {
				if (ended) {
					c.stop();
					return;
				}
				setText($('log-state'), 'lost (' + why +
				    '); retrying');
			}
		});
		logClient = c;
		c.start();
	}

	/* --- start --------------------------------------------------- */

	function init() {
		$('model-rows').addEventListener('click', onRowClick);
		$('confirm').addEventListener('close', onConfirmClose);
		$('conn-retry').addEventListener('click', () =>
		    events.retryNow());
		$('key-form').addEventListener('submit', (e) => {
			e.preventDefault();
			const key = $('key-input').value.trim();
			if (key === '')
				return;
			keySet(key);
			$('key-input').value = '';
			events.retryNow();
		});
		$('log-model').addEventListener('change', (e) =>
		    followLog(e.target.value));
		$('log-follow').addEventListener('change', (e) => {
			if (e.target.checked)
				$('log').scrollTop = $('log').scrollHeight;
		});
		renderAll();
		setInterval(tick, 1000);
		events.start();
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', init);
	else
		init();
})();

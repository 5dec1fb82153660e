// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// A stand-in for agency's admin routes as console/EVENTS.md describes
// them, for working on the console without agencyd: the page's files
// from console/ (with the proxy's policy), the events stream with ids,
// snapshot, backlog, resume and pings, load/unload/stop/cancel, log rings
// with follow, and chat requests that take a while.  Models are fake: a load
// takes LOAD_MS, a request REQUEST_MS.  Only loopback.
//
//   node regress/browser/mock.mjs [--port N] [--summary-ms MS]
//
// prints "listening PORT" when it serves.  For tests it also has
//   POST /__mock/restart {"downMs": N}  a new stream, every connection
//                                       closed, nothing served for N ms
//   POST /__mock/drop                   the same stream, its backlog
//                                       forgotten, every subscriber cut
//                                       (so a reconnect gets a snapshot)
//   POST /__mock/reload {"add": [NAME], "remove": [NAME]}

import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const consoleDir = join(here, '..', '..', 'console');
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "img-src 'self'; connect-src 'self'; base-uri 'none'; " +
    "form-action 'none'; frame-ancestors 'none'";

const opt = { port: 0, summaryMs: 5000, pingMs: 15000, loadMs: 600,
    requestMs: 3000 };
for (let i = 2; i < process.argv.length; i += 2) {
	const k = process.argv[i].replace(/^--/, '').replace(/-(.)/g,
	    (m, c) => c.toUpperCase());
	if (!(k in opt))
		throw new Error('unknown option ' + process.argv[i]);
	opt[k] = Number(process.argv[i + 1]);
}

const GiB = 1024 ** 3, MiB = 1024 ** 2;
const memory = { total: 24 * GiB, available: 18 * GiB, reserve: GiB,
    budget: 2 * GiB };
let stream = randomBytes(4).toString('hex');
let seq = 0;
const backlog = [];		// {seq, text}
const recent = [];		// what a snapshot repeats (EVENTS.md)
const subscribers = new Set();	// http.ServerResponse
let down = false;

function model(name, lazy, need, extra) {
	return Object.assign({
		model: name, runtime: 'fake', state: lazy ? 'stopped' : 'ready',
		error: null, requestsInProgress: 0, lastUsedAt: null, lazy,
		pid: null, port: null, need, needFrom: 'configured',
		requests: 0, loads: lazy ? 0 : 1, restarts: 0,
		loadedAt: lazy ? null : Date.now(), evictions: 0,
		loadFailures: 0, queued: 0, oldestWaitMs: null,
		waitingFor: null, maxRequests: null, aliases: [],
		idleTimeoutMs: lazy ? 600000 : null,
		loadHistory: lazy ? [] : [420], restartAt: null,
		reason: lazy ? null : 'loaded', for: null,
	}, extra || {});
}

const models = new Map();
for (const m of [
	model('echo-small', false, 256 * MiB, { aliases: ['small'] }),
	model('echo-medium', true, 768 * MiB),
	model('echo-large', true, 1024 * MiB, { aliases: ['large'] }),
])
	models.set(m.model, m);

const rings = new Map();		// name -> {seq, lines: [{seq,line}]}
const followers = new Map();		// name -> Set(res)
const inflight = new Map();		// name -> Set({res, timer})
const counts = new Map();		// name -> {requests, prompt, completion}
const history = [];

function ring(name) {
	if (!rings.has(name))
		rings.set(name, { seq: 0, lines: [] });
	return rings.get(name);
}

function logLine(name, line) {
	const r = ring(name);
	const l = { seq: ++r.seq, line };
	r.lines.push(l);
	if (r.lines.length > 200)
		r.lines.shift();
	for (const res of followers.get(name) || [])
		sse(res, 'line', l, String(l.seq));
}

function memoryNow() {
	let used = 0;
	for (const m of models.values())
		if (m.state === 'ready' || m.state === 'loading')
			used += m.need;
	return Object.assign({}, memory, { inUse: used,
	    available: memory.available - used });
}

function sse(res, event, data, id) {
	let s = '';
	if (id)
		s += 'id: ' + id + '\n';
	s += 'event: ' + event + '\ndata: ' + JSON.stringify(data) + '\n\n';
	res.write(s);
}

function emit(event, data) {
	data = Object.assign({ time: Date.now() }, data);
	const id = stream + '.' + ++seq;
	const text = 'id: ' + id + '\nevent: ' + event + '\ndata: ' +
	    JSON.stringify(data) + '\n\n';
	backlog.push({ seq, text });
	if (backlog.length > 1024)
		backlog.shift();
	if (event === 'state' || event === 'reload' || event === 'cancel') {
		const e = { type: event, id };
		for (const [k, v] of Object.entries(data))
			if (k !== 'record' && k !== 'models' && k !== 'memory')
				e[k] = v;
		recent.push(e);
		if (recent.length > 100)
			recent.shift();
	}
	for (const res of subscribers)
		res.write(text);
}

function record(m) {
	return JSON.parse(JSON.stringify(m));
}

function setState(m, state, reason, more) {
	const from = m.state;
	m.state = state;
	m.reason = reason;
	m.for = (more && more.for) || null;
	emit('state', Object.assign({ model: m.model, state, from, reason },
	    more || {}, { record: record(m), memory: memoryNow() }));
}

function queueEvent(m) {
	emit('queue', { model: m.model,
	    requestsInProgress: m.requestsInProgress, queued: m.queued,
	    oldestWaitMs: null, waitingFor: null, lastUsedAt: m.lastUsedAt });
}

const waiters = new Map();		// name -> [resolve]

function load(m, reason) {
	if (m.state === 'ready')
		return Promise.resolve();
	if (m.state !== 'loading') {
		// make room: evict idle lazy models, oldest first
		let used = memoryNow().inUse;
		const idle = [...models.values()].filter((o) => o !== m &&
		    o.lazy && o.state === 'ready' && o.requestsInProgress === 0)
		    .sort((a, b) => (a.lastUsedAt || 0) - (b.lastUsedAt || 0));
		while (used + m.need > memory.budget && idle.length) {
			const o = idle.shift();
			used -= o.need;
			o.evictions++;
			o.loadedAt = null;
			setState(o, 'stopped', 'evicted', { for: m.model });
			logLine(o.model, 'stopped to make room for ' + m.model);
		}
		if (used + m.need > memory.budget)
			return Promise.reject(new Error('not enough memory'));
		m.error = null;
		setState(m, 'loading', reason);
		logLine(m.model, 'fakelm: loading model=' + m.model);
		const t0 = Date.now();
		setTimeout(() => {
			if (m.state !== 'loading')
				return;
			const ms = Date.now() - t0;
			m.loads++;
			m.loadedAt = Date.now();
			m.loadHistory = m.loadHistory.concat([ms]).slice(-10);
			logLine(m.model, 'fakelm: ready model=' + m.model);
			setState(m, 'ready', 'loaded', { loadMs: ms });
			for (const w of waiters.get(m.model) || [])
				w();
			waiters.delete(m.model);
		}, opt.loadMs);
	}
	return new Promise((resolve) => {
		if (!waiters.has(m.model))
			waiters.set(m.model, []);
		waiters.get(m.model).push(resolve);
	});
}

function endRequests(m, status) {
	const set = inflight.get(m.model) || new Set();
	let n = 0;
	for (const r of set) {
		clearTimeout(r.timer);
		if (!r.res.headersSent)
			json(r.res, status, { error: { message:
			    'The request was cancelled.', type:
			    'invalid_request_error', code: 'cancelled' } });
		else
			r.res.destroy();
		n++;
	}
	set.clear();
	m.requestsInProgress = 0;
	queueEvent(m);
	return n;
}

function json(res, status, obj, headers) {
	const body = JSON.stringify(obj);
	res.writeHead(status, Object.assign({
	    'Content-Type': 'application/json',
	    'Content-Length': Buffer.byteLength(body) }, headers || {}));
	res.end(body);
}

function error(res, status, code, message) {
	json(res, status, { error: { message, type: status >= 500 ?
	    'server_error' : 'invalid_request_error', code } });
}

async function body(req) {
	let s = '';
	for await (const c of req)
		s += c;
	try {
		return JSON.parse(s);
	} catch (e) {
		return null;
	}
}

async function chat(req, res) {
	const b = await body(req);
	const m = b && models.get(b.model);
	if (!m)
		return error(res, 404, 'model_not_found', 'No such model.');
	if (m.state === 'unloaded')
		return error(res, 503, 'not_loaded', m.model +
		    ' was unloaded.');
	m.requestsInProgress++;
	queueEvent(m);
	try {
		await load(m, 'request');
	} catch (e) {
		m.requestsInProgress--;
		queueEvent(m);
		return error(res, 503, 'not_enough_memory', e.message);
	}
	const n = ++m.requests;
	logLine(m.model, 'request ' + n + ': ' + JSON.stringify(
	    b.messages || []).slice(0, 80));
	const r = { res };
	if (!inflight.has(m.model))
		inflight.set(m.model, new Set());
	inflight.get(m.model).add(r);
	const ms = typeof b.mock_ms === 'number' ? b.mock_ms : opt.requestMs;
	r.timer = setTimeout(() => {
		inflight.get(m.model).delete(r);
		m.requestsInProgress--;
		m.lastUsedAt = Date.now();
		const c = counts.get(m.model) || { requests: 0,
		    promptTokens: 0, completionTokens: 0 };
		c.requests++;
		c.promptTokens += 12;
		c.completionTokens += 40;
		counts.set(m.model, c);
		logLine(m.model, 'request ' + n + ' done');
		queueEvent(m);
		json(res, 200, { id: 'chatcmpl-mock', object: 'chat.completion',
		    model: m.model, choices: [{ index: 0, message: { role:
		    'assistant', content: 'mock' }, finish_reason: 'stop' }],
		    usage: { prompt_tokens: 12, completion_tokens: 40,
		    total_tokens: 52 } });
	}, ms);
}

function snapshot() {
	return { time: Date.now(), stream, memory: memoryNow(),
	    models: [...models.values()].map(record),
	    summaryMs: opt.summaryMs, history, recent };
}

function events(req, res) {
	res.writeHead(200, { 'Content-Type': 'text/event-stream',
	    'Cache-Control': 'no-store' });
	res.write('retry: 2000\n\n');
	const last = req.headers['last-event-id'] || '';
	const m = /^([0-9a-f]{8})\.([0-9]+)$/.exec(last);
	const n = m ? Number(m[2]) : -1;
	const first = backlog.length ? backlog[0].seq : seq + 1;
	if (m && m[1] === stream && n <= seq && n >= first - 1) {
		for (const e of backlog)
			if (e.seq > n)
				res.write(e.text);
	} else
		sse(res, 'snapshot', snapshot(), stream + '.' + seq);
	subscribers.add(res);
	req.on('close', () => subscribers.delete(res));
}

function logs(req, res, name, follow) {
	const m = models.get(name);
	if (!m)
		return error(res, 404, 'model_not_found', 'No such model.');
	const r = ring(name);
	if (!follow)
		return json(res, 200, { model: name, lines: r.lines });
	res.writeHead(200, { 'Content-Type': 'text/event-stream',
	    'Cache-Control': 'no-store' });
	res.flushHeaders();
	const last = Number(req.headers['last-event-id'] || 0) || 0;
	const first = r.lines.length ? r.lines[0].seq : r.seq + 1;
	if (last && last + 1 < first)
		sse(res, 'gap', { missed: first - last - 1 });
	for (const l of r.lines)
		if (l.seq > last)
			sse(res, 'line', l, String(l.seq));
	if (!followers.has(name))
		followers.set(name, new Set());
	followers.get(name).add(res);
	req.on('close', () => followers.get(name) &&
	    followers.get(name).delete(res));
}

function asset(res, file, type) {
	const data = readFileSync(join(consoleDir, file));
	res.writeHead(200, { 'Content-Type': type,
	    'Content-Security-Policy': CSP,
	    'X-Content-Type-Options': 'nosniff',
	    'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-cache' });
	res.end(data);
}

async function admin(req, res, path) {
	if (req.method === 'POST' && !/^application\/json/.test(
	    req.headers['content-type'] || ''))
		return error(res, 415, 'unsupported_media_type',
		    'Admin POSTs need Content-Type: application/json.');
	if (path === '/v1/agency/events' && req.method === 'GET')
		return events(req, res);
	if (path === '/v1/agency/status' && req.method === 'GET')
		return json(res, 200, { models: [...models.values()]
		    .map(record) });
	const lm = /^\/v1\/agency\/logs\/([^/]+)$/.exec(path);
	if (lm && req.method === 'GET')
		return logs(req, res, decodeURIComponent(lm[1]),
		    /[?&]follow=1(&|$)/.test(req.url));
	if (req.method !== 'POST')
		return error(res, 404, 'not_found', 'No such admin route.');
	const b = await body(req);
	if (!b || typeof b.model !== 'string')
		return error(res, 400, 'model_required',
		    'The body must name a model.');
	const m = models.get(b.model);
	if (!m)
		return error(res, 404, 'model_not_found', 'The model \'' +
		    b.model + '\' does not exist.');
	switch (path) {
	case '/v1/agency/load':
		if (m.state === 'ready')
			return json(res, 200, { model: m.model,
			    state: 'ready' });
		try {
			const p = load(m, 'load');
			if (b.wait === false)
				return json(res, 202, { model: m.model,
				    state: 'loading' });
			await p;
			return json(res, 200, { model: m.model,
			    state: 'ready' });
		} catch (e) {
			return error(res, 503, 'not_enough_memory', e.message);
		}
	case '/v1/agency/unload':
		endRequests(m, 502);
		m.loadedAt = null;
		if (m.state !== 'unloaded')
			setState(m, 'unloaded', 'unload');
		logLine(m.model, 'unloaded');
		return json(res, 200, { model: m.model, state: 'unloaded' });
	case '/v1/agency/stop':
		if (!m.lazy)
			return error(res, 409, 'not_lazy', 'The model is not ' +
			    'lazy: nothing would load it again.');
		endRequests(m, 502);
		m.loadedAt = null;
		setState(m, 'stopped', 'stop');
		logLine(m.model, 'stopped');
		return json(res, 200, { model: m.model, state: 'stopped' });
	case '/v1/agency/cancel': {
		const n = endRequests(m, 499);
		emit('cancel', { model: m.model, cancelled: n });
		return json(res, 200, { cancelled: n });
	}
	default:
		return error(res, 404, 'not_found', 'No such admin route.');
	}
}

async function control(req, res, path) {
	const b = (await body(req)) || {};
	if (path === '/__mock/restart') {
		stream = randomBytes(4).toString('hex');
		seq = 0;
		backlog.length = 0;
		recent.length = 0;
		down = true;
		for (const s of subscribers)
			s.destroy();
		for (const set of followers.values())
			for (const s of set)
				s.destroy();
		setTimeout(() => { down = false; }, b.downMs || 0);
		return json(res, 200, { stream });
	}
	if (path === '/__mock/drop') {
		// an event the subscribers miss, and the backlog without it
		for (const s of subscribers)
			s.destroy();
		subscribers.clear();
		emit('cancel', { model: [...models.keys()][0], cancelled: 0 });
		backlog.length = 0;
		return json(res, 200, { stream });
	}
	if (path === '/__mock/reload') {
		for (const name of b.add || [])
			models.set(name, model(name, true, 512 * MiB));
		for (const name of b.remove || []) {
			models.delete(name);
			for (const s of followers.get(name) || []) {
				sse(s, 'end', { reason: 'removed' });
				s.end();
			}
			followers.delete(name);
		}
		emit('reload', { ok: true, added: b.add || [],
		    removed: b.remove || [], changed: [],
		    models: [...models.values()].map(record),
		    memory: memoryNow() });
		return json(res, 200, { ok: true });
	}
	return error(res, 404, 'not_found', 'No such mock route.');
}

const server = createServer((req, res) => {
	const path = req.url.split('?')[0];
	if (down && !path.startsWith('/__mock/')) {
		req.socket.destroy();
		return;
	}
	if (path.startsWith('/__mock/') && req.method === 'POST')
		return control(req, res, path);
	if (req.method === 'GET' && path === '/')
		return asset(res, 'index.html', 'text/html; charset=utf-8');
	if (req.method === 'GET' && path === '/console/console.css')
		return asset(res, 'console.css', 'text/css; charset=utf-8');
	if (req.method === 'GET' && path === '/console/console.js')
		return asset(res, 'console.js',
		    'text/javascript; charset=utf-8');
	if (req.method === 'GET' && path === '/console/icon.svg')
		return asset(res, 'icon.svg', 'image/svg+xml');
	if (path.startsWith('/v1/agency/'))
		return admin(req, res, path);
	if (req.method === 'POST' && path === '/v1/chat/completions')
		return chat(req, res);
	if (req.method === 'GET' && path === '/health')
		return json(res, 200, { status: 'ok' });
	return error(res, 404, 'not_found', 'No such route.');
});

setInterval(() => {
	const s = { time: Date.now(), intervalMs: opt.summaryMs,
	    memory: memoryNow(), models: {} };
	for (const name of models.keys())
		s.models[name] = counts.get(name) || { requests: 0,
		    promptTokens: 0, completionTokens: 0 };
	counts.clear();
	history.push(s);
	while (history.length > 180)
		history.shift();
	const { time, intervalMs, memory: mem, models: ms } = s;
	emit('summary', { time, intervalMs, memory: mem, models: ms });
}, opt.summaryMs).unref();

setInterval(() => {
	for (const res of subscribers)
		res.write(': ping\n\n');
	for (const set of followers.values())
		for (const res of set)
			res.write(': ping\n\n');
}, opt.pingMs).unref();

logLine('echo-small', 'fakelm: ready model=echo-small');
server.listen(opt.port, '127.0.0.1', () => {
	console.log('listening ' + server.address().port);
});
process.on('SIGTERM', () => process.exit(0));

// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// The operator console in headless Chromium, driven over the DevTools
// protocol (cdp.mjs), against a running front door at BASE: the page
// loads without errors or requests elsewhere; rows follow the events
// stream (load, in flight, cancel, unload with its confirmation, stop); the
// log pane follows a model; the keyboard works; every control has a
// name; charts draw; a reload adds and removes a row; a proxy restart
// is seen and recovered from; a phone-sized and a dark page render.
// Screenshots go to ARTIFACTS.
//
// The environment says what to drive:
//   BASE            the front door, http://127.0.0.1:PORT
//   CHROMIUM        the browser (default /usr/bin/chromium)
//   ARTIFACTS       where screenshots go
//   LAZY            a lazy model that may be loaded and unloaded
//   SMALL           a model that is always ready
//   RESTART_CMD     a shell command that restarts the proxy
//   DROP_CMD        a shell command that cuts the page's stream after an
//                   event it then forgets (the mock's only; its test is
//                   skipped without it)
//   RELOAD_ADD_CMD  a shell command that reloads with a model EXTRA more
//   RELOAD_DEL_CMD  a shell command that reloads without it again
//   EXTRA           that model's name
//   QUEUE_WAIT      a lazy model that does not fit beside LAZY busy
//                   (unset: that test is skipped, as against the mock)
//
// Run as: node --test console.test.mjs (one test after another: each
// starts from where the one before left the page).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser } from './cdp.mjs';

const BASE = process.env.BASE;
const ORIGIN = new URL(BASE).origin;
const LAZY = process.env.LAZY || 'echo-medium';
const SMALL = process.env.SMALL || 'echo-small';
const EXTRA = process.env.EXTRA || 'echo-extra';
const QUEUE_WAIT = process.env.QUEUE_WAIT;
const ART = process.env.ARTIFACTS || '.';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let b;
const requests = [];		// every URL the page asked for
const problems = [];		// console errors, exceptions, violations
const outages = [];		// [start, end] of each stream cut, Date.now()
const events = [];		// [type, data, arrival] from our own stream
let evAbort;

const row = (m) => `tr[data-model=${JSON.stringify(m)}]`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function js(v) {
	return JSON.stringify(v);
}

// Our own subscriber to the events stream, for the page to be compared
// with: every event with the time it arrived.
async function subscribe() {
	evAbort = new AbortController();
	const res = await fetch(BASE + '/v1/agency/events', {
	    signal: evAbort.signal });
	assert.equal(res.status, 200);
	const rd = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	(async () => {
		try {
			for (;;) {
				const { value, done } = await rd.read();
				if (done)
					return;
				buf += dec.decode(value, { stream: true });
				let i;
				while ((i = buf.indexOf('\n\n')) >= 0) {
					const block = buf.slice(0, i);
					buf = buf.slice(i + 2);
					let type = 'message', data = null;
					for (const l of block.split('\n')) {
						if (l.startsWith('event: '))
							type = l.slice(7);
						else if (l.startsWith('data: '))
							data = l.slice(6);
					}
					if (data !== null)
						events.push([type, JSON.parse(data),
						    Date.now()]);
				}
			}
		} catch (e) {
			/* aborted, or the proxy went away */
		}
	})();
}

// A chat request that stays in flight for about ms, whatever stands
// behind BASE (fakelm streams max_tokens tokens, one every token-ms;
// the mock holds it mock_ms).  Resolves with its status, 0 when the
// connection was closed under it, or 499 when a stream that had begun
// ended with agency's "cancelled" event.
function slowRequest(model, ms) {
	return fetch(BASE + '/v1/chat/completions', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ model, stream: true,
		    max_tokens: Math.ceil(ms / 100), mock_ms: ms,
		    messages: [{ role: 'user', content: 'hello' }] })
	}).then(async (res) => {
		let text;
		try {
			text = await res.text();
		} catch (e) {
			return 0;
		}
		return /"code":"cancelled"/.test(text) ? 499 : res.status;
	}, () => 0);
}

async function status() {
	const res = await fetch(BASE + '/v1/agency/status');
	assert.equal(res.status, 200);
	return (await res.json()).models;
}

async function rowState(m) {
	return b.eval(`(document.querySelector(${js(row(m))}) || {dataset:{}})
	    .dataset.state`);
}

async function waitState(m, state, ms = 15000) {
	await b.waitFor(`(document.querySelector(${js(row(m))}) || ` +
	    `{dataset:{}}).dataset.state === ${js(state)}`, ms,
	    `${m} ${state} in the page`);
}

async function text(sel) {
	return b.eval(`(document.querySelector(${js(sel)}) || {}).textContent`);
}

before(async () => {
	mkdirSync(ART, { recursive: true });
	b = await Browser.launch(CHROMIUM, { width: 1280, height: 900 });
	b.on((method, p) => {
		const t = Date.now();
		if (method === 'Network.requestWillBeSent')
			requests.push(p.request.url);
		else if (method === 'Runtime.exceptionThrown')
			problems.push({ t, what: 'exception', text:
			    (p.exceptionDetails.exception || {}).description ||
			    p.exceptionDetails.text });
		else if (method === 'Runtime.consoleAPICalled' &&
		    (p.type === 'error' || p.type === 'warning' ||
		    p.type === 'assert'))
			problems.push({ t, what: 'console.' + p.type, text:
			    p.args.map((a) => a.value).join(' ') });
		else if (method === 'Log.entryAdded' &&
		    (p.entry.level === 'error' || p.entry.level === 'warning'))
			problems.push({ t, what: 'log ' + p.entry.source,
			    text: p.entry.text + ' ' + (p.entry.url || '') });
	});
	await subscribe();
});

after(async () => {
	if (evAbort)
		evAbort.abort();
	if (b)
		await b.close();
});

test('the page loads with its policy, no errors and nothing from elsewhere',
    async () => {
	const res = await fetch(BASE + '/');
	assert.equal(res.status, 200);
	assert.match(res.headers.get('content-type'), /^text\/html/);
	const csp = res.headers.get('content-security-policy') || '';
	assert.match(csp, /default-src 'none'/);
	assert.doesNotMatch(csp, /unsafe/);
	await b.goto(BASE + '/');
	const names = (await status()).map((m) => m.model);
	await b.waitFor(`document.querySelectorAll('#model-rows tr')
	    .length === ${names.length}`, 10000, 'a row for each model');
	assert.deepEqual(await b.eval(`Array.from(document.querySelectorAll(
	    '#model-rows tr')).map((r) => r.dataset.model)`), names);
	await b.waitFor(`document.getElementById('conn').dataset.conn ===
	    'live'`, 10000, 'the connection live');
	for (const m of await status())
		assert.equal(await rowState(m.model), m.state, m.model);
	assert.ok(requests.length >= 4, 'requests seen: ' + requests);
	for (const u of requests)
		assert.equal(new URL(u).origin, ORIGIN, 'a request to ' + u);
	assert.deepEqual(problems, []);
});

test('load: the row goes loading, then ready, in step with the events; ' +
    'the log pane follows the model', async () => {
	assert.notEqual(await rowState(LAZY), 'ready',
	    LAZY + ' must start unloaded');
	// the log pane on LAZY first, through its row's button
	await b.click(row(LAZY) + ' [data-act="logs"]');
	await b.waitFor(`document.getElementById('log').dataset.model ===
	    ${js(LAZY)} && document.getElementById('log-model').value ===
	    ${js(LAZY)}`, 5000, 'the log pane on ' + LAZY);
	await b.eval(`window.seen = []; new MutationObserver((ms) => {
		for (const m of ms)
			window.seen.push([m.target.dataset.model,
			    m.target.dataset.state, Date.now()]);
	}).observe(document.getElementById('model-rows'), { subtree: true,
	    attributes: true, attributeFilter: ['data-state'] }); true`);
	const from = events.length;
	await b.click(row(LAZY) + ' [data-act="load"]');
	await waitState(LAZY, 'ready');
	await b.waitFor(`/fakelm: ready.*model=${LAZY}/.test(
	    document.getElementById('log').textContent)`, 10000,
	    'the ready line in the log pane');

	const seen = (await b.eval('window.seen')).filter((s) =>
	    s[0] === LAZY);
	assert.deepEqual(seen.map((s) => s[1]), ['loading', 'ready']);
	// our own subscriber saw the same changes, at about the same times
	const mine = events.slice(from).filter(([t, d]) => t === 'state' &&
	    d.model === LAZY);
	assert.deepEqual(mine.map(([, d]) => d.state), ['loading', 'ready']);
	assert.equal(mine[0][1].reason, 'load');
	assert.equal(typeof mine[1][1].loadMs, 'number');
	for (let i = 0; i < 2; i++)
		assert.ok(Math.abs(seen[i][2] - mine[i][2]) < 1000,
		    `${seen[i][1]}: page at ${seen[i][2]}, stream at ` +
		    mine[i][2]);
	assert.match(await text(row(LAZY) + ' .reason'), /loaded in/);
	assert.match(await text('#feed'), new RegExp(LAZY + ' ready'));
});

test('a request in flight shows, and cancel ends it', async () => {
	const req = slowRequest(LAZY, 20000);
	await b.waitFor(`document.querySelector(${js(row(LAZY) +
	    ' .inflight')}).textContent === '1'`, 10000, '1 in flight');
	await b.waitFor(`!document.querySelector(${js(row(LAZY) +
	    ' [data-act="cancel"]')}).disabled`, 5000, 'cancel enabled');
	await b.click(row(LAZY) + ' [data-act="cancel"]');
	const st = await Promise.race([req, sleep(10000).then(() => -1)]);
	assert.notEqual(st, -1, 'the request did not end');
	assert.notEqual(st, 200);
	await b.waitFor(`document.querySelector(${js(row(LAZY) +
	    ' .inflight')}).textContent === '0'`, 5000, '0 in flight');
	await b.waitFor(`/1 request of ${LAZY} cancelled/.test(
	    document.getElementById('feed').textContent)`, 5000,
	    'the cancel in the feed');
	assert.equal(await rowState(LAZY), 'ready');
});

test('unloading a busy model asks first; Escape keeps it', async () => {
	const req = slowRequest(LAZY, 20000);
	await b.waitFor(`document.querySelector(${js(row(LAZY) +
	    ' .inflight')}).textContent === '1'`, 10000, '1 in flight');
	await b.click(row(LAZY) + ' [data-act="unload"]');
	await b.waitFor(`document.getElementById('confirm').open`, 5000,
	    'the confirmation');
	assert.match(await text('#confirm-text'), /1 request in flight/);
	await b.key('Escape');
	await b.waitFor(`!document.getElementById('confirm').open`, 5000,
	    'the confirmation closed');
	await sleep(300);
	assert.equal(await rowState(LAZY), 'ready');
	assert.equal(await text(row(LAZY) + ' .inflight'), '1');

	await b.click(row(LAZY) + ' [data-act="unload"]');
	await b.waitFor(`document.getElementById('confirm').open`, 5000,
	    'the confirmation again');
	await b.click('#confirm-yes');
	await waitState(LAZY, 'unloaded');
	const st = await Promise.race([req, sleep(10000).then(() => -1)]);
	assert.notEqual(st, -1, 'the request outlived the unload');
	assert.equal((await status()).find((m) => m.model === LAZY).state,
	    'unloaded');
});

test('the keyboard alone loads a model', async () => {
	await b.eval(`document.activeElement && document.activeElement.blur();
	    document.body.focus(); true`);
	const target = row(LAZY) + ' [data-act="load"]';
	let found = false;
	for (let i = 0; i < 60 && !found; i++) {
		await b.key('Tab');
		found = await b.eval(`document.activeElement ===
		    document.querySelector(${js(target)})`);
	}
	assert.ok(found, 'Tab never reached ' + target);
	// the focus shows
	assert.notEqual(await b.eval(`getComputedStyle(
	    document.activeElement).outlineStyle`), 'none');
	await b.key('Enter');
	await waitState(LAZY, 'ready');
	// the pane still follows it: a second ready line
	await b.waitFor(`(document.getElementById('log').textContent
	    .match(/fakelm: ready.*model=${LAZY}/g) || []).length >= 2`, 10000,
	    'a second ready line in the log pane');
});

test('stop: the model stops, says why, and its next request loads it',
    async () => {
	await waitState(LAZY, 'ready');
	await b.click(row(LAZY) + ' [data-act="stop"]');
	await waitState(LAZY, 'stopped');
	await b.waitFor(`/stopped by an operator/.test(document.querySelector(
	    ${js(row(LAZY) + ' .reason')}).textContent)`, 5000,
	    'the reason of the stop');
	assert.equal((await status()).find((m) => m.model === LAZY).state,
	    'stopped');
	// not unloaded: a request loads it again
	assert.equal(await slowRequest(LAZY, 50), 200);
	await waitState(LAZY, 'ready');
});

test('every control has a name; the page has its landmarks', async () => {
	const { nodes } = await b.page('Accessibility.getFullAXTree');
	const buttons = nodes.filter((n) => !n.ignored && n.role &&
	    n.role.value === 'button');
	assert.ok(buttons.length >= 4 * (await status()).length);
	for (const n of buttons)
		assert.ok(n.name && n.name.value && n.name.value.trim(),
		    'a button without a name: ' + JSON.stringify(n));
	const names = buttons.map((n) => n.name.value);
	for (const verb of ['Load', 'Unload', 'Stop', 'Cancel'])
		assert.ok(names.includes(verb + ' ' + LAZY), verb + ' ' + LAZY);
	const roles = new Set(nodes.filter((n) => !n.ignored && n.role)
	    .map((n) => n.role.value));
	for (const r of ['main', 'banner', 'table', 'meter', 'log'])
		assert.ok(roles.has(r), 'no ' + r);
	assert.equal(await b.eval(`document.getElementById('log-model')
	    .labels.length`), 1);
});

test('the charts draw requests per second', async () => {
	for (let i = 0; i < 3; i++)
		assert.equal(await slowRequest(SMALL, 50), 200);
	await b.waitFor(`(() => {
		const p = document.querySelector('#chart-req path[data-model=' +
		    ${js(js(SMALL))} + ']');
		return p && /[ML][0-9.]+ (?!154\\.0)[0-9.]+/.test(
		    p.getAttribute('d'));
	})()`, 20000, 'a point above zero for ' + SMALL);
	assert.match(await text('#chart-req-sum'), new RegExp(SMALL +
	    ' [0-9.]+ now, peak [0-9.]*[1-9]'));
	// a request in flight for the picture
	const req = slowRequest(LAZY, 6000);
	await b.waitFor(`document.querySelector(${js(row(LAZY) +
	    ' .inflight')}).textContent === '1'`, 10000, '1 in flight');
	await b.screenshot(join(ART, 'console.png'));
	await req;
});

test('a reload adds a row and takes it away', async () => {
	execSync(process.env.RELOAD_ADD_CMD, { stdio: 'inherit' });
	await b.waitFor(`document.querySelector(${js(row(EXTRA))})`, 10000,
	    'a row for ' + EXTRA);
	assert.ok(await b.eval(`Array.from(document.getElementById(
	    'log-model').options).some((o) => o.value === ${js(EXTRA)})`));
	execSync(process.env.RELOAD_DEL_CMD, { stdio: 'inherit' });
	await b.waitFor(`!document.querySelector(${js(row(EXTRA))})`, 10000,
	    'the row of ' + EXTRA + ' gone');
	assert.match(await text('#feed'), new RegExp('removed ' + EXTRA));
});

test('a snapshot after missed events adds to the feed only what was missed',
    { skip: !process.env.DROP_CMD && 'no DROP_CMD' }, async () => {
	const entries = `Array.from(document.querySelectorAll('#feed li'))
	    .map((li) => li.textContent.slice(li.querySelector('time')
	    .textContent.length))`;
	const was = await b.eval(entries);
	const cut = [Date.now(), 0];
	outages.push(cut);
	execSync(process.env.DROP_CMD, { stdio: 'inherit' });
	await b.waitFor(`document.getElementById('feed').textContent
	    .includes('Events were missed')`, 10000, 'the missed events said');
	await b.waitFor(`document.getElementById('conn').dataset.conn ===
	    'live'`, 10000, 'the connection live');
	cut[1] = Date.now();
	const now = await b.eval(entries);
	// what came: the outage, its end, the snapshot's note, and the
	// one change the page missed; nothing it had shown already
	const added = now.slice(0, now.length - was.length);
	assert.deepEqual(now.slice(added.length), was);
	assert.equal(added.length, 4, JSON.stringify(added));
	for (const re of [/^Events were missed/, /^Reconnected after/,
	    /^Connection lost/, /^0 requests of \S+ cancelled$/])
		assert.equal(added.filter((t) => re.test(t)).length, 1,
		    re + ' in ' + JSON.stringify(added));
	// at its time, below what the page said after it (the snapshot
	// came after at least the 0.5 s of backoff), and the feed newest
	// first
	const at = (re) => added.findIndex((t) => re.test(t));
	assert.ok(at(/cancelled$/) > at(/^Events were missed/),
	    JSON.stringify(added));
	const times = await b.eval(`Array.from(document.querySelectorAll(
	    '#feed li time')).map((t) => Date.parse(t.dateTime))`);
	for (let i = 1; i < times.length; i++)
		assert.ok(times[i - 1] >= times[i], 'out of order: ' +
		    JSON.stringify(now));
});

test('a proxy restart is seen, said, and recovered from', async () => {
	const outage = [Date.now(), 0];
	outages.push(outage);
	execSync(process.env.RESTART_CMD, { stdio: 'inherit' });
	await b.waitFor(`document.getElementById('conn').dataset.conn !==
	    'live'`, 10000, 'the page to see the connection lost');
	assert.match(await text('#conn-text'), /lost|Offline/);
	await b.waitFor(`document.getElementById('conn').dataset.conn ===
	    'live'`, 20000, 'the page live again');
	assert.match(await text('#feed'), /Reconnected after/);
	// The stream is open (live) before its first event, the new
	// proxy's snapshot, has come: that says the restart, and redraws
	// every row with it.
	await b.waitFor(`/agency-proxy restarted/.test(
	    document.getElementById('feed').textContent)`, 20000,
	    'the restart said in the feed');
	outage[1] = Date.now();
	// what it shows is what agency says
	for (const m of await status())
		assert.equal(await rowState(m.model), m.state, m.model);
	// and it works: the log pane follows again, the buttons act
	await b.waitFor(`document.getElementById('log-state').textContent ===
	    'following'`, 15000, 'the log pane following again');
	assert.equal(await rowState(LAZY), 'ready', LAZY + ' ready before');
	await b.waitFor(`!document.querySelector(${js(row(LAZY) +
	    ' [data-act="unload"]')}).disabled`, 5000, 'unload enabled');
	await b.click(row(LAZY) + ' [data-act="unload"]');
	await waitState(LAZY, 'unloaded');
	assert.equal((await status()).find((m) => m.model === LAZY).state,
	    'unloaded');
});

test('a load that waits for memory shows as queued, not loading',
    { skip: !QUEUE_WAIT }, async () => {
	await b.click(row(LAZY) + ' [data-act="load"]');
	await waitState(LAZY, 'ready');
	const busy = slowRequest(LAZY, 20000);
	await b.waitFor(`document.querySelector(${js(row(LAZY) +
	    ' .inflight')}).textContent === '1'`, 10000, '1 in flight');
	const waiting = fetch(BASE + '/v1/chat/completions', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ model: QUEUE_WAIT, max_tokens: 2,
		    messages: [{ role: 'user', content: 'hello' }] })
	}).then((res) => res.status, () => 0);
	await b.waitFor(`document.querySelector(${js(row(QUEUE_WAIT) +
	    ' .reason')}).textContent === 'waiting for memory'`, 10000,
	    QUEUE_WAIT + ' waiting for memory');
	assert.equal(await text(row(QUEUE_WAIT) + ' .state'), 'queued');
	assert.equal(await rowState(QUEUE_WAIT), 'stopped');
	const m = (await status()).find((x) => x.model === QUEUE_WAIT);
	assert.equal(m.pid, null);
	// its memory is not in use yet: the bar shows LAZY and SMALL only
	assert.equal(await b.eval(`document.getElementById('mem-used')
	    .childElementCount`), 2);
	await b.click(row(LAZY) + ' [data-act="cancel"]');
	assert.equal(await Promise.race([busy, sleep(10000)
	    .then(() => -1)]), 499);
	assert.equal(await Promise.race([waiting, sleep(30000)
	    .then(() => -1)]), 200);
	await waitState(QUEUE_WAIT, 'ready');
});

test('a phone-sized screen and the dark setting', async () => {
	await b.viewport(390, 844, true);
	// laid out again for the phone: the table's head hidden
	await b.waitFor(`innerWidth === 390 && getComputedStyle(
	    document.querySelector('#models thead')).display === 'none'`,
	    5000, 'the phone layout');
	assert.ok(await b.eval(`document.documentElement.scrollWidth <=
	    innerWidth`), 'the page scrolls sideways on a phone');
	// the table became cards: each cell shows its label
	assert.equal(await b.eval(`getComputedStyle(document.querySelector(
	    '#models thead')).display`), 'none');
	await b.screenshot(join(ART, 'console-phone.png'));
	await b.colorScheme('dark');
	const bg = await b.eval(`getComputedStyle(document.documentElement)
	    .backgroundColor`);
	const [r, g, bl] = bg.match(/[0-9]+/g).map(Number);
	assert.ok(r + g + bl < 3 * 64, 'dark background, not ' + bg);
	await b.screenshot(join(ART, 'console-dark.png'));
	await b.colorScheme('light');
	await b.viewport(1280, 900);
});

test('nothing went wrong in the page, and it asked nothing elsewhere',
    async () => {
	for (const u of requests)
		assert.equal(new URL(u).origin, ORIGIN, 'a request to ' + u);
	// while the proxy was down or the stream cut, its failed fetches
	// are expected
	const bad = problems.filter((p) => !(p.what === 'log network' &&
	    outages.some(([from, to]) => p.t >= from && p.t <= to + 1000)));
	assert.deepEqual(bad, []);
});

// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// The console when the front door has API keys (issue 16), in headless
// Chromium over the DevTools protocol (cdp.mjs): the page itself loads
// without a key; the admin routes refuse it, and it asks for the admin
// key, saying that agency is up and what key it needs (not "Offline",
// not "No model is served": issue 33, item 13); a wrong key is refused
// and asked for again; the right one brings the models, the key is
// sent by the page and kept for the tab, and never shown.  Run by
// browser_test's keyed case with:
//   BASE       the front door, http://127.0.0.1:PORT
//   CHROMIUM   the browser (default /usr/bin/chromium)
//   ADMIN_KEY  an admin key of that front door
//   USER_KEY   a key that is not an admin one

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from './cdp.mjs';

const BASE = process.env.BASE;
const ADMIN_KEY = process.env.ADMIN_KEY;
const USER_KEY = process.env.USER_KEY;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!BASE || !ADMIN_KEY || !USER_KEY)
	throw new Error('BASE, ADMIN_KEY and USER_KEY are set by browser_test');

let b;
const problems = [];		// exceptions in the page

const js = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// What the page says of its connection and of its models, while it
// has none to show.
async function says() {
	return b.eval(`({
		conn: document.getElementById('conn').dataset.conn,
		text: document.getElementById('conn-text').textContent,
		empty: document.getElementById('no-models').hidden ? null :
		    document.getElementById('no-models').textContent,
		why: document.getElementById('key-why').textContent,
		feed: document.getElementById('feed').textContent,
		retry: !document.getElementById('conn-retry').hidden
	})`);
}

// The page says a key is needed, and of what kind, and nothing of an
// outage: the server is up.
function keyNeeded(s) {
	assert.equal(s.conn, 'key', JSON.stringify(s));
	assert.match(s.text, /^Up: an admin key is needed$/);
	assert.doesNotMatch(s.text + s.feed, /Offline|lost|retrying/);
	assert.equal(s.retry, false, 'a "Retry now" button');
	assert.ok(s.empty !== null, 'the models pane says nothing');
	assert.doesNotMatch(s.empty, /No model is served/);
	assert.match(s.empty, /admin key/);
	assert.match(s.why, /needs an admin key \(a key marked admin/);
}

// Type key into the key form and send it, as a person would.
async function give(key) {
	await b.eval(`(() => {
		document.getElementById('key-input').value = ${js(key)};
		document.getElementById('key-form').requestSubmit();
	})()`);
}

before(async () => {
	b = await Browser.launch(CHROMIUM, { width: 1280, height: 900 });
	b.exceptionsTo(problems);
});

after(async () => {
	if (b)
		await b.close();
});

test('the page needs no key, its data does', async () => {
	const res = await fetch(BASE + '/');
	assert.equal(res.status, 200);
	assert.match(res.headers.get('content-type'), /^text\/html/);
	const ev = await fetch(BASE + '/v1/agency/events');
	assert.equal(ev.status, 401);
	assert.equal((await ev.json()).error.code, 'invalid_api_key');
});

test('the page asks for the admin key, and refuses a wrong one', async () => {
	await b.goto(BASE + '/');
	await b.waitFor(`!document.getElementById('key-form').hidden`, 10000,
	    'the key form');
	assert.equal(await b.eval(`document.activeElement.id`), 'key-input');
	assert.equal(await b.eval(`document.querySelectorAll(
	    '#model-rows tr').length`), 0);
	keyNeeded(await says());
	// and still so after the time three failed connections took to
	// be called "Offline" (0.5 + 1 + 2 s of backoff)
	for (const end = Date.now() + 5000; Date.now() < end;
	    await sleep(250))
		keyNeeded(await says());
	// a key that is not an admin one: asked again, with the reason
	await give(USER_KEY);
	await b.waitFor(`document.getElementById('conn-text').textContent ===
	    'Up: that key is not an admin key'`, 10000,
	    'the admin key asked for again');
	assert.match((await says()).why, /not an admin key.*marked admin/);
	assert.equal(await b.eval(`document.getElementById('key-form')
	    .hidden`), false);
	assert.notEqual(await b.eval(`document.getElementById('conn')
	    .dataset.conn`), 'live');
});

test('the admin key brings the models, kept for the tab', async () => {
	await give(ADMIN_KEY);
	await b.waitFor(`document.getElementById('conn').dataset.conn ===
	    'live'`, 15000, 'the connection live');
	await b.waitFor(`document.querySelectorAll('#model-rows tr').length
	    > 0`, 10000, 'the models');
	assert.equal(await b.eval(`document.getElementById('key-form')
	    .hidden`), true);
	assert.equal(await b.eval(`document.getElementById('key-input')
	    .value`), '');
	assert.equal(await b.eval(`sessionStorage.getItem(
	    'agency-admin-key')`), ADMIN_KEY);
	// nothing the page shows holds the key
	assert.equal(await b.eval(`document.body.innerText.includes(
	    ${js(ADMIN_KEY)})`), false);
	// a reload of the page keeps it for the tab: no question again
	await b.goto(BASE + '/');
	await b.waitFor(`document.getElementById('conn').dataset.conn ===
	    'live'`, 15000, 'the connection live after a reload');
	assert.equal(await b.eval(`document.getElementById('key-form')
	    .hidden`), true);
	assert.deepEqual(problems, []);
});

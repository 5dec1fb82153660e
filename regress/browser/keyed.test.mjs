// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// The console when the front door has API keys (issue 16), in headless
// Chromium over the DevTools protocol (cdp.mjs): the page itself loads
// without a key; the admin routes refuse it, and it asks for the admin
// key; a wrong key is refused and asked for again; the right one brings
// the models, the key is sent by the page and kept for the tab, and
// never shown.  Run by browser_test's keyed case with:
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

// Type key into the key form and send it, as a person would.
async function give(key) {
	await b.eval(`(() => {
		document.getElementById('key-input').value = ${js(key)};
		document.getElementById('key-form').requestSubmit();
	})()`);
}

before(async () => {
	b = await Browser.launch(CHROMIUM, { width: 1280, height: 900 });
	b.on((method, p) => {
		if (method === 'Runtime.exceptionThrown')
			problems.push((p.exceptionDetails.exception || {})
			    .description || p.exceptionDetails.text);
	});
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
	// a key that is not an admin one: asked again, with the reason
	await give(USER_KEY);
	await b.waitFor(`/admin/i.test(document.getElementById('key-why')
	    .textContent)`, 10000, 'the admin key asked for again');
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

// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// What an operator sees on opening the console after things happened
// (issue 33, item 13), in headless Chromium over the DevTools protocol
// (cdp.mjs): each model says why it is in its state (evicted for whom,
// unloaded, failed) and the Events pane lists the changes made before
// the page opened, at the times they were made; at 1280 px no model's
// name breaks inside a word.  Run by browser_test's first case, which
// made those changes before, with:
//   BASE       the front door, http://127.0.0.1:PORT
//   CHROMIUM   the browser (default /usr/bin/chromium)
//   ARTIFACTS  where the screenshot goes
//   EVICTED    a model stopped to make room for FOR
//   FOR        that model, loaded
//   UNLOADED   a model an operator unloaded
//   FAILED     a model whose load failed
//   BEFORE     when those changes were done (ms since the epoch)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser } from './cdp.mjs';

const env = process.env;
const { BASE, EVICTED, FOR, UNLOADED, FAILED } = env;
const BEFORE = Number(env.BEFORE);
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const ART = env.ARTIFACTS || '.';
if (!BASE || !EVICTED || !FOR || !UNLOADED || !FAILED || !BEFORE)
	throw new Error('BASE, EVICTED, FOR, UNLOADED, FAILED and BEFORE ' +
	    'are set by browser_test');

let b;
let opened;			// when the page was opened
const problems = [];		// exceptions in the page

const js = (v) => JSON.stringify(v);
const row = (m) => `tr[data-model=${js(m)}]`;

async function reason(m) {
	return b.eval(`document.querySelector(${js(row(m) + ' .reason')})
	    .textContent`);
}

before(async () => {
	mkdirSync(ART, { recursive: true });
	b = await Browser.launch(CHROMIUM, { width: 1280, height: 900 });
	b.exceptionsTo(problems);
});

after(async () => {
	if (b)
		await b.close();
});

test('a page opened now says why each model is in its state', async () => {
	const res = await fetch(BASE + '/v1/agency/status');
	const names = (await res.json()).models.map((m) => m.model);
	opened = Date.now();
	await b.goto(BASE + '/');
	await b.waitFor(`document.querySelectorAll('#model-rows tr')
	    .length === ${names.length}`, 15000, 'a row for each model');
	assert.equal(await reason(EVICTED), 'evicted for ' + FOR);
	assert.equal(await reason(UNLOADED), 'unloaded by an operator');
	assert.match(await reason(FOR), /^loaded in [0-9.]+ m?s$/);
	assert.match(await reason(FAILED), /./);
});

test('the Events pane lists what happened before the page opened, ' +
    'newest first, at the times it happened', async () => {
	const feed = await b.eval(`Array.from(document.querySelectorAll(
	    '#feed li')).map((li) => [li.querySelector('time').dateTime,
	    li.textContent.slice(li.querySelector('time').textContent
	    .length)])`);
	const at = (text) => feed.findIndex(([, t]) => t === text);
	const evicted = at(EVICTED + ' stopped — evicted for ' + FOR);
	const unloaded = at(UNLOADED + ' unloaded — unloaded by an operator');
	const failed = feed.findIndex(([, t]) =>
	    t.startsWith(FAILED + ' failed — '));
	assert.ok(evicted >= 0 && unloaded >= 0 && failed >= 0,
	    'the changes are not in the feed: ' + js(feed));
	// newest first: the unload came after the eviction, the failure
	// after both
	assert.ok(failed < unloaded && unloaded < evicted, js(feed));
	// each once
	for (const i of [evicted, unloaded, failed])
		assert.equal(feed.filter(([, t]) => t === feed[i][1]).length,
		    1, feed[i][1]);
	// at the times they were made, before the page opened
	for (const i of [evicted, unloaded, failed]) {
		const t = Date.parse(feed[i][0]);
		assert.ok(t >= BEFORE - 1000 && t <= opened,
		    feed[i][1] + ' at ' + feed[i][0]);
	}
	const times = feed.map(([t]) => Date.parse(t));
	for (let i = 1; i < times.length; i++)
		assert.ok(times[i - 1] >= times[i], 'out of order: ' +
		    js(feed));
});

// The line breaks inside a name: for each, the character before it.
const BREAKS = `Array.from(document.querySelectorAll('#model-rows .name'))
    .map((n) => {
	const t = n.firstChild, s = t.textContent, r = document.createRange();
	const at = [];
	let top = null;
	for (let i = 0; i < s.length; i++) {
		r.setStart(t, i);
		r.setEnd(t, i + 1);
		const y = r.getClientRects()[0].top;
		if (top !== null && y > top + 1)
			at.push(s.slice(0, i));
		top = y;
	}
	const th = n.closest('th');
	return { name: s, at, over: th.scrollWidth > th.clientWidth };
    })`;

test('at 1280 px no model name breaks inside a word', async () => {
	await b.viewport(1280, 900);
	await b.waitFor('innerWidth === 1280', 5000, 'the width');
	const names = await b.eval(BREAKS);
	assert.ok(names.length >= 5);
	// the long names with no hyphen fit whole
	for (const n of names) {
		assert.equal(n.over, false, n.name + ' overflows');
		for (const head of n.at)
			assert.match(head, /-$/, n.name + ' broken after "' +
			    head + '"');
	}
	await b.screenshot(join(ART, 'console-first.png'));
	assert.deepEqual(problems, []);
});

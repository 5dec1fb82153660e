// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
// agency's front door through Anthropic's official client for Node
// (@anthropic-ai/sdk): the Messages API, streamed and not, count_tokens,
// the anthropic-* headers, errors, and a client that leaves.
//
// Run by openai_test (atf-sh) against an agencyd it started with the
// models its openai.test.mjs has; every fakelm runs --anthropic-strict,
// so a Messages request without its anthropic-version header is
// refused: what arrives shows that the header came through.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { BASE_URL, model, inProgress, waitFor } from './lib.mjs';

const client = new Anthropic({
	baseURL: BASE_URL,
	apiKey: 'unused',
	maxRetries: 0,
	timeout: 30_000,
});

const hello = [{ role: 'user', content: 'hello there' }];

test('messages.create', async () => {
	const m = await client.messages.create({
		model: 'fast',
		max_tokens: 5,
		system: 'be brief',
		messages: hello,
	});
	assert.equal(m.type, 'message');
	assert.equal(m.role, 'assistant');
	assert.equal(m.model, 'fast');
	assert.deepEqual(m.content, [{ type: 'text',
	    text: 'hello there tok3 tok4 tok5' }]);
	assert.equal(m.stop_reason, 'max_tokens');
	assert.deepEqual(m.usage, { input_tokens: 4, output_tokens: 5 });
});

test('the anthropic-version and anthropic-beta headers come through', async () => {
	const { data, response } = await client.beta.messages.create({
		model: 'fast',
		max_tokens: 1,
		messages: hello,
		betas: ['token-efficient-tools-2025-02-19'],
	}).withResponse();
	assert.equal(data.usage.output_tokens, 1);
	assert.match(response.headers.get('x-fakelm-anthropic-version'),
	    /^\d{4}-\d\d-\d\d$/);
	assert.equal(response.headers.get('x-fakelm-anthropic-beta'),
	    'token-efficient-tools-2025-02-19');
});

test('messages.stream: text as it is made, and the final message', async () => {
	const stream = client.messages.stream({
		model: 'slow',
		max_tokens: 6,
		messages: [{ role: 'user', content: 'x' }],
	});
	const stamps = [];
	let text = '';
	stream.on('text', (t) => {
		text += t;
		stamps.push(Date.now());
	});
	const m = await stream.finalMessage();
	assert.equal(text, 'x tok2 tok3 tok4 tok5 tok6');
	assert.equal(m.content[0].text, text);
	assert.equal(m.usage.output_tokens, 6);
	assert.equal(m.stop_reason, 'max_tokens');
	const spread = stamps.at(-1) - stamps[0];
	assert.ok(spread >= 400, `text arrived within ${spread} ms`);
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('messages.create with stream: the raw events', async () => {
	const stream = await client.messages.create({
		model: 'fast',
		max_tokens: 2,
		messages: hello,
		stream: true,
	});
	const types = [];
	for await (const e of stream)
		types.push(e.type);
	// the client drops the pings
	assert.deepEqual(types, ['message_start', 'content_block_start',
	    'content_block_delta', 'content_block_delta', 'content_block_stop',
	    'message_delta', 'message_stop']);
});

test('messages.countTokens', async () => {
	const r = await client.messages.countTokens({
		model: 'fast',
		system: 'a b',
		messages: [{ role: 'user', content: 'c d e' }],
	});
	assert.deepEqual(r, { input_tokens: 5 });
});

test('an unknown model is a NotFoundError, in Anthropic\'s shape', async () => {
	await assert.rejects(
	    client.messages.create({ model: 'nosuch', max_tokens: 1,
		messages: hello }),
	    (e) => {
		assert.ok(e instanceof Anthropic.NotFoundError,
		    `${e.constructor.name}: ${e.message}`);
		assert.equal(e.status, 404);
		assert.match(e.message, /nosuch/);
		// the body as Anthropic's API writes an error
		assert.equal(e.error.type, 'error');
		assert.equal(e.error.error.type, 'not_found_error');
		assert.match(e.error.error.message, /nosuch/);
		return true;
	    });
});

test('a refusal of the pool is an Anthropic overloaded_error', async () => {
	// as in openai.test.mjs: slow busy, other does not fit
	const ac = new AbortController();
	const stream = await client.messages.create({
		model: 'slow',
		max_tokens: 300,
		messages: hello,
		stream: true,
	}, { signal: ac.signal });
	const it = stream[Symbol.asyncIterator]();
	await it.next();
	try {
		await assert.rejects(
		    client.messages.create({ model: 'other', max_tokens: 1,
			messages: hello }),
		    (e) => {
			assert.ok(e instanceof Anthropic.InternalServerError,
			    `${e.constructor.name}: ${e.message}`);
			assert.equal(e.status, 503);
			assert.equal(e.error.error.type, 'overloaded_error');
			assert.match(e.error.error.message, /needs 600/);
			return true;
		    });
	} finally {
		ac.abort();
	}
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('an abort mid-stream leaves no request in progress', async () => {
	const stream = client.messages.stream({
		model: 'slow',
		max_tokens: 300,
		messages: [{ role: 'user', content: 'x' }],
	});
	let n = 0;
	await new Promise((resolve) => {
		stream.on('text', async () => {
			if (++n === 3) {
				stream.abort();
				resolve();
			}
		});
		stream.on('error', resolve);
		stream.on('abort', resolve);
	});
	assert.equal(n, 3);
	// slow stops on close: released at once, not after 30 s
	await waitFor(3000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0 after the abort');
	const s = await model('slow');
	assert.equal(s.state, 'ready');
});

test('an abort mid-stream from a runtime that does not stop on close', async () => {
	// drain generates on after its client leaves: the hold is kept
	// while the front door reads the answer to its end
	const ac = new AbortController();
	const stream = await client.messages.create({
		model: 'drain',
		max_tokens: 20,
		messages: hello,
		stream: true,
	}, { signal: ac.signal });
	let n = 0;
	for await (const e of stream) {
		if (e.type === 'content_block_delta' && ++n === 2)
			ac.abort();
	}
	assert.equal(n, 2);
	assert.equal((await model('drain')).requestsInProgress, 1,
	    'released while the model was still generating');
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0 once the answer was drained');
});

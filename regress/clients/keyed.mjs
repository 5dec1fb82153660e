// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
// The official OpenAI client for Node with an API key, as an operator's
// user would run it: run with node --test by regress/real/access_test
// against an agencyd in front of a real llama-server, over HTTPS (the
// test CA in NODE_EXTRA_CA_CERTS).
//
//   BASE_URL   the front door (https://127.0.0.1:PORT)
//   KEY        a key for the model "tiny" only
//   ADMIN_KEY  an admin key, for every model
// Models: "tiny" and "other".

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const BASE_URL = process.env.BASE_URL;
const KEY = process.env.KEY;
const ADMIN_KEY = process.env.ADMIN_KEY;
if (!BASE_URL || !KEY || !ADMIN_KEY)
	throw new Error('BASE_URL, KEY and ADMIN_KEY are set by access_test');

function client(apiKey) {
	return new OpenAI({
		baseURL: `${BASE_URL}/v1`,
		apiKey,
		maxRetries: 0,
		timeout: 60_000,
	});
}

const messages = [{ role: 'user', content: 'Say hello.' }];

test('the key is sent and a chat is answered by llama-server', async () => {
	const r = await client(KEY).chat.completions.create({
		model: 'tiny', messages, max_tokens: 4,
	});
	assert.equal(r.object, 'chat.completion');
	assert.equal(r.choices[0].message.role, 'assistant');
	assert.equal(r.usage.completion_tokens, 4);
});

test('a streamed chat with the key', async () => {
	const stream = await client(KEY).chat.completions.create({
		model: 'tiny', messages, max_tokens: 4, stream: true,
	});
	let chunks = 0;
	for await (const c of stream) {
		assert.equal(c.object, 'chat.completion.chunk');
		chunks++;
	}
	assert.ok(chunks >= 2, `${chunks} chunks`);
});

test('the key lists its own models only', async () => {
	const ids = [];
	for await (const m of client(KEY).models.list())
		ids.push(m.id);
	assert.deepEqual(ids, ['tiny']);
	const all = [];
	for await (const m of client(ADMIN_KEY).models.list())
		all.push(m.id);
	assert.deepEqual(all.sort(), ['other', 'tiny']);
});

test('a model outside the key is not found', async () => {
	await assert.rejects(client(KEY).chat.completions.create({
		model: 'other', messages, max_tokens: 2,
	}), (e) => {
		assert.ok(e instanceof OpenAI.NotFoundError, e.constructor.name);
		assert.equal(e.code, 'model_not_found');
		return true;
	});
});

test('a wrong key is an AuthenticationError', async () => {
	await assert.rejects(client('sk-wrong-0123456789abcdef').chat.completions
	    .create({ model: 'tiny', messages, max_tokens: 2 }), (e) => {
		assert.ok(e instanceof OpenAI.AuthenticationError,
		    e.constructor.name);
		assert.equal(e.status, 401);
		assert.equal(e.code, 'invalid_api_key');
		return true;
	});
});

// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
// The official clients through agency to a real llama.cpp llama-server
// (../real/apis_test starts it): Anthropic's Messages, OpenAI's
// Responses, and rerank.  The tiny models answer gibberish, so the
// shapes and counts are checked, not the words.
//
// The models:
//   tiny    llama-server, chat
//   rank    llama-server --reranking

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { BASE_URL, inProgress, waitFor } from './lib.mjs';

const anthropic = new Anthropic({
	baseURL: BASE_URL,
	apiKey: 'unused',
	maxRetries: 0,
	timeout: 60_000,
});
const openai = new OpenAI({
	baseURL: `${BASE_URL}/v1`,
	apiKey: 'unused',
	maxRetries: 0,
	timeout: 60_000,
});

const hello = [{ role: 'user', content: 'hello there' }];

test('anthropic: messages.create', async () => {
	const m = await anthropic.messages.create({
		model: 'tiny',
		max_tokens: 4,
		system: 'be brief',
		messages: hello,
	});
	assert.equal(m.type, 'message');
	assert.equal(m.role, 'assistant');
	assert.equal(m.content[0].type, 'text');
	assert.equal(typeof m.content[0].text, 'string');
	assert.ok(m.usage.input_tokens > 0);
	assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 4,
	    `${m.usage.output_tokens} tokens`);
});

test('anthropic: messages.stream', async () => {
	const stream = anthropic.messages.stream({
		model: 'tiny',
		max_tokens: 6,
		messages: hello,
	});
	let text = '';
	let n = 0;
	stream.on('text', (t) => {
		text += t;
		n++;
	});
	const m = await stream.finalMessage();
	assert.ok(n >= 1, 'no text event');
	assert.equal(m.content[0].text, text);
	assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 6);
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('anthropic: messages.countTokens', async () => {
	const short = await anthropic.messages.countTokens({
		model: 'tiny',
		messages: [{ role: 'user', content: 'a' }],
	});
	const long = await anthropic.messages.countTokens({
		model: 'tiny',
		messages: [{ role: 'user', content: 'a b c d e f g h' }],
	});
	assert.ok(short.input_tokens > 0);
	assert.ok(long.input_tokens > short.input_tokens,
	    `${long.input_tokens} <= ${short.input_tokens}`);
});

test('openai: responses.create', async () => {
	const r = await openai.responses.create({
		model: 'tiny',
		input: 'hello there',
		max_output_tokens: 3,
	});
	assert.equal(r.object, 'response');
	assert.equal(typeof r.output_text, 'string');
	assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 3);
});

test('openai: responses.create, streamed', async () => {
	// (the client's responses.stream helper wants an output array in
	// response.created, which llama-server leaves out: the raw events)
	const stream = await openai.responses.create({
		model: 'tiny',
		input: [{ role: 'user', content: 'one two' }],
		max_output_tokens: 4,
		stream: true,
	});
	const types = [];
	let text = '';
	let done;
	for await (const e of stream) {
		types.push(e.type);
		if (e.type === 'response.output_text.delta')
			text += e.delta;
		if (e.type === 'response.output_text.done')
			done = e.text;
	}
	assert.equal(types[0], 'response.created');
	assert.equal(types.at(-1), 'response.completed');
	assert.ok(types.includes('response.output_text.delta'));
	assert.equal(done, text);
});

test('openai: responses.inputTokens.count', async () => {
	const r = await openai.responses.inputTokens.count({
		model: 'tiny',
		input: 'a b c',
	});
	assert.ok(r.input_tokens > 0);
});

test('rerank on its three routes', async () => {
	for (const path of ['/v1/rerank', '/v1/reranking', '/rerank']) {
		const res = await fetch(new URL(path, BASE_URL), {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({
				model: 'rank',
				query: 'a',
				documents: ['a b', 'c', 'd e f'],
			}),
		});
		assert.equal(res.status, 200, `${path}: ${res.status}`);
		const body = await res.json();
		assert.equal(body.results.length, 3, path);
		assert.deepEqual(body.results.map((x) => x.index).sort(),
		    [0, 1, 2]);
		for (const x of body.results)
			assert.equal(typeof x.relevance_score, 'number');
	}
});

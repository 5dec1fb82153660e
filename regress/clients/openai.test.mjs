// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
// agency's front door through the official OpenAI client for Node.
//
// Run by openai_test (atf-sh) against an agencyd it started with the
// config in that file: BASE_URL is the front door (http://127.0.0.1:PORT).
// The models:
//   fast    chat, answers at once, not lazy
//   emb     embedding, not lazy
//   drain   chat, 50 ms a token, not lazy, does not stop on close
//   slow    chat, 100 ms a token, lazy, 600M, stops on close always
//   other   chat, lazy, 600M: with "memory budget 1G", it does not fit
//           while slow is busy, so its request is refused with 503.
//   whisper-1 (alias whisper)  transcription: fakelm answers an upload
//           with the size and digest of each file it got.
//   loader  chat, lazy, 100M, loads in 1.5 s, with loading progress: a
//           stream that waits for its load gets agency's header at once
//           and comment lines (": loading loader 1.0s") before the
//           model's chunks.
//   late    the same, 600M, queue timeout 1s: while slow is busy it
//           waits for memory, and its refusal after the header is the
//           stream's last event.
//
// The cases run one after another (node --test --test-concurrency=1, and
// one file): the 503 case and the abort case watch the same pool.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { BASE_URL, cksum, model, inProgress, waitFor } from './lib.mjs';

// No retries: a 503 must come back as it is, not be retried away.
const client = new OpenAI({
	baseURL: `${BASE_URL}/v1`,
	apiKey: 'unused',
	maxRetries: 0,
	timeout: 30_000,
});

const hello = [{ role: 'user', content: 'hello' }];

test('chat completion', async () => {
	const r = await client.chat.completions.create({
		model: 'fast',
		messages: hello,
		max_tokens: 5,
	});
	assert.equal(r.object, 'chat.completion');
	assert.equal(r.model, 'fast');
	assert.equal(r.choices.length, 1);
	assert.equal(r.choices[0].message.role, 'assistant');
	assert.equal(typeof r.choices[0].message.content, 'string');
	assert.ok(r.choices[0].message.content.length > 0);
	assert.equal(r.usage.completion_tokens, 5);
	assert.ok(r.usage.prompt_tokens > 0);
});

test('chat completion, with the raw response', async () => {
	const { data, response } = await client.chat.completions
	    .create({ model: 'fast', messages: hello, max_tokens: 2 })
	    .withResponse();
	assert.equal(response.status, 200);
	assert.match(response.headers.get('content-type'), /^application\/json/);
	assert.equal(data.usage.completion_tokens, 2);
});

test('streamed chat completion, with the usage chunk', async () => {
	const stream = await client.chat.completions.create({
		model: 'fast',
		messages: hello,
		max_tokens: 6,
		stream: true,
		stream_options: { include_usage: true },
	});
	const chunks = [];
	for await (const c of stream)
		chunks.push(c);
	assert.ok(chunks.length > 1, `${chunks.length} chunks`);
	for (const c of chunks)
		assert.equal(c.object, 'chat.completion.chunk');
	const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '')
	    .join('');
	assert.ok(text.length > 0, 'no text in the deltas');
	// The usage chunk is the last one: no choices, the token counts.
	const last = chunks.at(-1);
	assert.deepEqual(last.choices, []);
	assert.ok(last.usage, 'the last chunk has no usage');
	assert.equal(last.usage.completion_tokens, 6);
	assert.equal(last.usage.total_tokens,
	    last.usage.prompt_tokens + last.usage.completion_tokens);
	// And only that one carries usage.
	assert.equal(chunks.filter((c) => c.usage).length, 1);
	assert.ok(chunks.some((c) => c.choices[0]?.finish_reason),
	    'no chunk with a finish_reason');
});

test('streamed chat completion without usage', async () => {
	const stream = await client.chat.completions.create({
		model: 'fast',
		messages: hello,
		max_tokens: 3,
		stream: true,
	});
	let n = 0;
	for await (const c of stream) {
		n++;
		assert.ok(!c.usage, 'usage without include_usage');
	}
	assert.ok(n > 1, `${n} chunks`);
});

test('streamed chunks arrive as they are made, not at the end', async () => {
	// slow makes a token every 100 ms: the first chunk must come long
	// before the last.
	const stream = await client.chat.completions.create({
		model: 'slow',
		messages: hello,
		max_tokens: 6,
		stream: true,
	});
	const stamps = [];
	for await (const c of stream)
		if (c.choices[0]?.delta?.content)
			stamps.push(Date.now());
	assert.ok(stamps.length >= 6, `${stamps.length} content chunks`);
	const spread = stamps.at(-1) - stamps[0];
	assert.ok(spread >= 400, `chunks arrived within ${spread} ms`);
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('completions', async () => {
	const r = await client.completions.create({
		model: 'fast',
		prompt: 'Once upon a time',
		max_tokens: 4,
	});
	assert.equal(r.object, 'text_completion');
	assert.equal(r.model, 'fast');
	assert.equal(r.choices.length, 1);
	assert.equal(typeof r.choices[0].text, 'string');
	assert.ok(r.choices[0].text.length > 0);
	assert.equal(r.usage.completion_tokens, 4);
});

test('embeddings', async () => {
	const r = await client.embeddings.create({
		model: 'emb',
		input: ['one', 'two'],
		encoding_format: 'float',
	});
	assert.equal(r.object, 'list');
	assert.equal(r.data.length, 2);
	for (const [i, d] of r.data.entries()) {
		assert.equal(d.object, 'embedding');
		assert.equal(d.index, i);
		assert.ok(Array.isArray(d.embedding));
		assert.ok(d.embedding.length > 0);
		for (const x of d.embedding)
			assert.equal(typeof x, 'number');
	}
});

test('embeddings, in the client\'s default base64 encoding', async () => {
	// Without encoding_format the client asks for base64 and decodes it
	// itself; a server that answers floats anyway must still work.
	const r = await client.embeddings.create({ model: 'emb', input: 'one' });
	assert.equal(r.data.length, 1);
	assert.ok(r.data[0].embedding.length > 0);
	for (const x of r.data[0].embedding)
		assert.ok(Number.isFinite(x), `not a finite number: ${x}`);
});

test('the models list', async () => {
	const ids = [];
	for await (const m of client.models.list())
		ids.push(m.id);
	for (const name of ['fast', 'emb', 'slow', 'other'])
		assert.ok(ids.includes(name), `${name} not in ${ids}`);
});

test('an unknown model is a NotFoundError', async () => {
	await assert.rejects(
	    client.chat.completions.create({ model: 'nosuch', messages: hello }),
	    (e) => {
		assert.ok(e instanceof OpenAI.NotFoundError,
		    `${e.constructor.name}: ${e.message}`);
		assert.ok(e instanceof OpenAI.APIError);
		assert.equal(e.status, 404);
		// The message names the model and the served ones.
		assert.match(e.message, /nosuch/);
		assert.match(e.message, /fast/);
		return true;
	    });
});

test('a refusal of the pool is an APIError 503 with its message', async () => {
	// Keep slow busy for 30 s (600M of the 1G budget), then ask for
	// other (600M): it does not fit and slow may not be stopped.
	const ac = new AbortController();
	const stream = await client.chat.completions.create({
		model: 'slow',
		messages: hello,
		max_tokens: 300,
		stream: true,
	}, { signal: ac.signal });
	const it = stream[Symbol.asyncIterator]();
	await it.next();
	assert.equal((await model('slow')).requestsInProgress, 1);
	try {
		await assert.rejects(
		    client.chat.completions.create({
			model: 'other',
			messages: hello,
			max_tokens: 2,
		    }),
		    (e) => {
			assert.ok(e instanceof OpenAI.APIError,
			    `${e.constructor.name}: ${e.message}`);
			assert.ok(e instanceof OpenAI.InternalServerError);
			assert.equal(e.status, 503);
			assert.equal(e.code, 'not_enough_memory');
			// The pool's message: the need and who was kept why.
			assert.match(e.message, /needs 600/);
			assert.match(e.message, /slow \(busy\)/);
			assert.equal(e.error.message, e.message.replace(/^503 /, ''));
			return true;
		    });
		assert.equal((await model('slow')).state, 'ready');
		// other was not started (the pool may record the refusal as
		// its last error: stopped or failed, never loading or ready).
		const o = await model('other');
		assert.ok(['stopped', 'failed'].includes(o.state), o.state);
		assert.equal(o.pid, null);
	} finally {
		ac.abort();
	}
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('an abort mid-stream leaves no request in progress', async () => {
	const ac = new AbortController();
	// 300 tokens 100 ms apart: 30 s if nothing stopped it.
	const stream = await client.chat.completions.create({
		model: 'slow',
		messages: hello,
		max_tokens: 300,
		stream: true,
	}, { signal: ac.signal });
	const before = (await model('slow')).requests;
	// The client ends the iteration quietly when its signal aborts
	// (openai-node's Stream returns on an AbortError, it does not throw).
	let n = 0;
	for await (const c of stream) {
		if (c.choices[0]?.delta?.content && ++n === 3) {
			assert.equal((await model('slow')).requestsInProgress, 1);
			ac.abort();
		}
	}
	assert.ok(ac.signal.aborted);
	assert.equal(n, 3);
	// slow stops on close: the hold is released at once, long before
	// the 30 s the answer would have taken.
	const t0 = Date.now();
	await waitFor(3000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0 after the abort');
	assert.ok(Date.now() - t0 < 3000);
	const s = await model('slow');
	assert.equal(s.state, 'ready');
	assert.equal(s.requests, before);
	// And the model still answers.
	const r = await client.chat.completions.create({
		model: 'slow',
		messages: hello,
		max_tokens: 1,
	});
	assert.equal(r.usage.completion_tokens, 1);
});

test('an abort mid-stream from a runtime that does not stop on close', async () => {
	// drain goes on generating after its client leaves (stops on close
	// never): the front door keeps the hold and reads the answer to its
	// end, 20 tokens 50 ms apart, then releases it.
	const ac = new AbortController();
	const stream = await client.chat.completions.create({
		model: 'drain',
		messages: hello,
		max_tokens: 20,
		stream: true,
	}, { signal: ac.signal });
	let n = 0;
	for await (const c of stream) {
		if (c.choices[0]?.delta?.content && ++n === 2)
			ac.abort();
	}
	assert.equal(n, 2);
	assert.equal((await model('drain')).requestsInProgress, 1,
	    'released while the model was still generating');
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0 once the answer was drained');
	assert.equal((await model('drain')).state, 'ready');
});

// The Responses API (fakelm speaks it as OpenAI does).

test('responses.create', async () => {
	const r = await client.responses.create({
		model: 'fast',
		instructions: 'be brief',
		input: 'hello there',
		max_output_tokens: 4,
	});
	assert.equal(r.object, 'response');
	assert.equal(r.model, 'fast');
	// the client's own join of the output's text parts
	assert.equal(r.output_text, 'hello there tok3 tok4');
	assert.equal(r.status, 'incomplete');
	assert.equal(r.incomplete_details.reason, 'max_output_tokens');
	assert.deepEqual(r.usage, { input_tokens: 4, output_tokens: 4,
	    total_tokens: 8 });
	const items = await client.responses.create({
		model: 'fast',
		input: [{ role: 'user', content: [{ type: 'input_text',
		    text: 'one two' }] }],
	});
	assert.equal(items.status, 'completed');
	assert.match(items.output_text, /^one two tok3 /);
});

test('responses.create, streamed: the events in order', async () => {
	const stream = await client.responses.create({
		model: 'fast',
		input: 'a b',
		max_output_tokens: 3,
		stream: true,
	});
	const types = [];
	let text = '';
	for await (const e of stream) {
		types.push(e.type);
		if (e.type === 'response.output_text.delta')
			text += e.delta;
	}
	assert.deepEqual(types, ['response.created', 'response.in_progress',
	    'response.output_item.added', 'response.content_part.added',
	    'response.output_text.delta', 'response.output_text.delta',
	    'response.output_text.delta', 'response.output_text.done',
	    'response.content_part.done', 'response.output_item.done',
	    'response.incomplete']);
	assert.equal(text, 'a b tok3');
});

test('responses.stream: deltas as they are made, and the final response', async () => {
	const stream = client.responses.stream({
		model: 'slow',
		input: 'x',
		max_output_tokens: 6,
	});
	const stamps = [];
	stream.on('response.output_text.delta', () => stamps.push(Date.now()));
	const r = await stream.finalResponse();
	assert.equal(r.output_text, 'x tok2 tok3 tok4 tok5 tok6');
	assert.equal(stamps.length, 6);
	const spread = stamps.at(-1) - stamps[0];
	assert.ok(spread >= 400, `deltas arrived within ${spread} ms`);
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

test('responses.inputTokens.count', async () => {
	const r = await client.responses.inputTokens.count({
		model: 'fast',
		input: 'three short words',
	});
	assert.equal(r.object, 'response.input_tokens');
	assert.equal(r.input_tokens, 3);
});

test('responses.create for an unknown model is a NotFoundError', async () => {
	await assert.rejects(
	    client.responses.create({ model: 'nosuch', input: 'x' }),
	    (e) => {
		assert.ok(e instanceof OpenAI.NotFoundError,
		    `${e.constructor.name}: ${e.message}`);
		assert.match(e.message, /nosuch/);
		return true;
	    });
});

test('an abort mid-Response leaves no request in progress', async () => {
	const ac = new AbortController();
	const stream = await client.responses.create({
		model: 'slow',
		input: 'x',
		max_output_tokens: 300,
		stream: true,
	}, { signal: ac.signal });
	let n = 0;
	for await (const e of stream) {
		if (e.type === 'response.output_text.delta' && ++n === 2) {
			assert.equal((await model('slow')).requestsInProgress, 1);
			ac.abort();
		}
	}
	assert.equal(n, 2);
	await waitFor(3000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0 after the abort');
	assert.equal((await model('slow')).state, 'ready');
});

// Audio uploads: multipart/form-data through the front door.

test('audio.transcriptions.create: the file arrives intact', async () => {
	for (const size of [0, 1, 70_000, 3 << 20]) {
		const bytes = randomBytes(size);
		const r = await client.audio.transcriptions.create({
			// the alias: the model field goes on as the model's name
			model: 'whisper',
			file: await toFile(bytes, 'speech.wav',
			    { type: 'audio/wav' }),
			language: 'en',
		});
		assert.equal(typeof r.text, 'string');
		assert.equal(r.files.length, 1, JSON.stringify(r));
		assert.equal(r.files[0].filename, 'speech.wav');
		assert.equal(r.files[0].size, size);
		assert.equal(r.files[0].cksum, cksum(bytes));
		assert.equal(r.fields.model, 'whisper-1');
		assert.equal(r.fields.language, 'en');
	}
});

test('audio.transcriptions.create as text, and translations', async () => {
	const file = await toFile(Buffer.from('RIFF\r\n--x\r\n'), 'a.wav');
	const t = await client.audio.transcriptions.create({
		model: 'whisper-1',
		file,
		response_format: 'text',
	});
	assert.match(t, /^fakelm heard \d+ bytes in 1 files/);
	const r = await client.audio.translations.create({
		model: 'whisper-1',
		file: await toFile(Buffer.from('x'), 'b.wav'),
	});
	assert.equal(r.files[0].size, 1);
});

test('audio.transcriptions.create for a chat model is a NotFoundError', async () => {
	await assert.rejects(
	    client.audio.transcriptions.create({
		model: 'fast',
		file: await toFile(Buffer.from('x'), 'a.wav'),
	    }),
	    (e) => {
		assert.ok(e instanceof OpenAI.NotFoundError,
		    `${e.constructor.name}: ${e.message}`);
		assert.match(e.message, /does not serve \/v1\/audio\/transcriptions/);
		return true;
	    });
});

test('loading progress: a stream that waits for a load, comment lines and all', async () => {
	const t0 = Date.now();
	const { data: stream, response } = await client.chat.completions
	    .create({
		model: 'loader',
		messages: hello,
		max_tokens: 4,
		stream: true,
		stream_options: { include_usage: true },
	    })
	    .withResponse();
	// agency's own header, at once, long before the 1.5 s load is done.
	const header = Date.now() - t0;
	assert.ok(header < 1000, `the header came after ${header} ms`);
	assert.equal(response.status, 200);
	assert.equal(response.headers.get('x-accel-buffering'), 'no');
	assert.match(response.headers.get('content-type'),
	    /^text\/event-stream/);
	const chunks = [];
	for await (const c of stream)
		chunks.push(c);
	const total = Date.now() - t0;
	assert.ok(total >= 1400, `the stream ended after ${total} ms`);
	// The comment lines were skipped: only the model's chunks.
	for (const c of chunks)
		assert.equal(c.object, 'chat.completion.chunk');
	const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '')
	    .join('');
	assert.ok(text.length > 0, 'no text in the deltas');
	assert.equal(chunks.at(-1).usage.completion_tokens, 4);
	assert.equal((await model('loader')).state, 'ready');
});

test('loading progress: a refusal after the header is an APIError of the stream', async () => {
	// slow busy (600M of the 1G budget): late (600M) waits for memory,
	// 1 s at most.
	const ac = new AbortController();
	const busy = await client.chat.completions.create({
		model: 'slow',
		messages: hello,
		max_tokens: 300,
		stream: true,
	}, { signal: ac.signal });
	await busy[Symbol.asyncIterator]().next();
	try {
		const t0 = Date.now();
		const stream = await client.chat.completions.create({
			model: 'late',
			messages: hello,
			max_tokens: 2,
			stream: true,
		});
		assert.ok(Date.now() - t0 < 900, 'no header before the refusal');
		await assert.rejects(async () => {
			for await (const c of stream)
				assert.fail(`a chunk: ${JSON.stringify(c)}`);
		}, (e) => {
			assert.ok(e instanceof OpenAI.APIError,
			    `${e.constructor.name}: ${e.message}`);
			assert.equal(e.code, 'queue_timeout');
			assert.equal(e.type, 'server_error');
			assert.match(e.message,
			    /^late: no turn within the queue timeout \(1s\)/);
			return true;
		});
		assert.ok(Date.now() - t0 >= 900, 'refused before its timeout');
		const l = await model('late');
		assert.equal(l.queued, 0);
		assert.equal(l.pid, null);
	} finally {
		ac.abort();
	}
	await waitFor(5000, async () => (await inProgress()) === 0,
	    'requestsInProgress 0');
});

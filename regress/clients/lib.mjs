// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
// What the client tests share: the front door's address, agency's status
// through its admin route, and waiting for a condition with a deadline.

import assert from 'node:assert/strict';
import http from 'node:http';

export const BASE_URL = process.env.BASE_URL;
if (!BASE_URL)
	throw new Error('BASE_URL is not set (run through openai_test)');

// GET /v1/agency/status with the Host header the admin routes require.
export function status() {
	const u = new URL('/v1/agency/status', BASE_URL);
	return new Promise((resolve, reject) => {
		const req = http.get({
			host: u.hostname,
			port: u.port,
			path: u.pathname,
			headers: { Host: `127.0.0.1:${u.port}` },
		}, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { body += d; });
			res.on('end', () => {
				if (res.statusCode !== 200) {
					reject(new Error(`status: HTTP ${res.statusCode}: ${body}`));
					return;
				}
				try {
					resolve(JSON.parse(body));
				} catch (e) {
					reject(e);
				}
			});
		});
		req.on('error', reject);
	});
}

export async function model(name) {
	const m = (await status()).models.find((x) => x.model === name);
	assert.ok(m, `no model ${name} in the status`);
	return m;
}

export const inProgress = async () =>
	(await status()).models.reduce((n, m) => n + m.requestsInProgress, 0);

// Poll COND every 20 ms until it returns true, for at most MS.
export async function waitFor(ms, cond, what) {
	const end = Date.now() + ms;
	for (;;) {
		if (await cond())
			return;
		if (Date.now() > end)
			assert.fail(`timed out after ${ms} ms waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 20));
	}
}

// POSIX cksum(1) of bytes, "CRC LENGTH", as fakelm reports a digest.
export function cksum(bytes) {
	let crc = 0;
	const step = (c) => {
		crc ^= c << 24;
		for (let i = 0; i < 8; i++)
			crc = crc & 0x80000000 ? ((crc << 1) ^ 0x04c11db7) :
			    crc << 1;
		crc >>>= 0;
	};
	for (const b of bytes)
		step(b);
	for (let n = bytes.length; n > 0; n = Math.floor(n / 256))
		step(n & 0xff);
	return `${(~crc) >>> 0} ${bytes.length}`;
}

// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// Just enough of the Chrome DevTools Protocol to drive a page in
// headless Chromium, over --remote-debugging-pipe (fd 3 to the browser,
// fd 4 from it, each message JSON ended by a NUL): no npm package, no
// port, nothing but node and the browser.  One browser, one page.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The flags that work here as root, without a network (NOTES.md).
const FLAGS = [
	'--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
	'--no-first-run', '--no-default-browser-check',
	'--disable-background-networking', '--disable-component-update',
	'--disable-sync', '--disable-extensions', '--disable-default-apps',
	'--disable-features=Translate,MediaRouter,OptimizationHints',
	'--metrics-recording-only', '--mute-audio', '--password-store=basic',
	'--no-proxy-server', '--remote-debugging-pipe',
];

export class Browser {
	// Start the browser; resolves once a page is attached.
	static async launch(exe, opts = {}) {
		const b = new Browser();
		try {
			await b.start(exe, opts);
		} catch (e) {
			// no browser left running, no profile left behind
			await b.close();
			throw new Error('the browser did not start: ' +
			    e.message + (b.stderr ? '\n' + b.stderr : ''));
		}
		return b;
	}

	async start(exe, opts) {
		this.profile = mkdtempSync(join(tmpdir(), 'agency-chromium-'));
		this.id = 0;
		this.pending = new Map();
		this.listeners = [];
		this.buf = Buffer.alloc(0);
		this.stderr = '';
		this.proc = spawn(exe, FLAGS.concat([
		    '--user-data-dir=' + this.profile,
		    '--window-size=' + (opts.width || 1280) + ',' +
		    (opts.height || 900), 'about:blank']),
		    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
		this.exited = new Promise((resolve) => {
			const gone = (why) => {
				for (const p of this.pending.values())
					p.reject(new Error(why));
				this.pending.clear();
				resolve();
			};
			this.proc.on('exit', (code, sig) =>
			    gone('the browser exited (' + (sig || code) + ')'));
			// spawn itself failed (no such file, ...): no exit
			this.proc.on('error', (e) =>
			    gone('the browser: ' + e.message));
		});
		this.proc.stderr.on('data', (d) => {
			if (this.stderr.length < 65536)
				this.stderr += d;
		});
		this.proc.stdio[4].on('data', (d) => this.read(d));
		// a write to a browser that is gone: its exit (or spawn's
		// error) rejects what waits for an answer
		this.proc.stdio[3].on('error', () => {});
		const { targetId } = await this.send('Target.createTarget',
		    { url: 'about:blank' });
		const { sessionId } = await this.send('Target.attachToTarget',
		    { targetId, flatten: true });
		this.session = sessionId;
		await Promise.all(['Page.enable', 'Runtime.enable',
		    'Log.enable', 'Network.enable'].map((m) => this.page(m)));
	}

	read(d) {
		this.buf = Buffer.concat([this.buf, d]);
		let i;
		while ((i = this.buf.indexOf(0)) >= 0) {
			const msg = JSON.parse(this.buf.subarray(0, i));
			this.buf = this.buf.subarray(i + 1);
			if (msg.id !== undefined && this.pending.has(msg.id)) {
				const p = this.pending.get(msg.id);
				this.pending.delete(msg.id);
				if (msg.error)
					p.reject(new Error(p.method + ': ' +
					    msg.error.message));
				else
					p.resolve(msg.result);
			} else if (msg.method) {
				for (const l of this.listeners.slice())
					l(msg.method, msg.params || {},
					    msg.sessionId);
			}
		}
	}

	send(method, params = {}, sessionId) {
		const id = ++this.id;
		const msg = { id, method, params };
		if (sessionId)
			msg.sessionId = sessionId;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject, method });
			this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
		});
	}

	// A command to the page's session.
	page(method, params = {}) {
		return this.send(method, params, this.session);
	}

	on(fn) {
		this.listeners.push(fn);
	}

	// Each exception the page throws, its text pushed on list.
	exceptionsTo(list) {
		this.on((method, p) => {
			if (method === 'Runtime.exceptionThrown')
				list.push((p.exceptionDetails.exception || {})
				    .description || p.exceptionDetails.text);
		});
	}

	// The first event of that method for which pred holds, or an error
	// after ms.
	waitEvent(method, pred = () => true, ms = 10000) {
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => {
				this.listeners = this.listeners.filter(
				    (f) => f !== fn);
				reject(new Error('no ' + method + ' in ' +
				    ms + ' ms'));
			}, ms);
			const fn = (m, p) => {
				if (m !== method || !pred(p))
					return;
				clearTimeout(t);
				this.listeners = this.listeners.filter(
				    (f) => f !== fn);
				resolve(p);
			};
			this.listeners.push(fn);
		});
	}

	async goto(url) {
		const loaded = this.waitEvent('Page.loadEventFired');
		const r = await this.page('Page.navigate', { url });
		if (r.errorText)
			throw new Error('navigate ' + url + ': ' + r.errorText);
		await loaded;
	}

	// The value of an expression in the page (promises awaited).
	async eval(expr) {
		const r = await this.page('Runtime.evaluate', {
			expression: expr, awaitPromise: true,
			returnByValue: true, userGesture: true });
		if (r.exceptionDetails)
			throw new Error('in the page: ' + (r.exceptionDetails
			    .exception ? r.exceptionDetails.exception
			    .description : r.exceptionDetails.text));
		return r.result.value;
	}

	// Poll expr until it is truthy, every 25 ms, at most ms long.
	async waitFor(expr, ms = 10000, what = expr) {
		const end = Date.now() + ms;
		let last;
		for (;;) {
			last = await this.eval(expr);
			if (last)
				return last;
			if (Date.now() > end)
				throw new Error('timed out after ' + ms +
				    ' ms waiting for ' + what);
			await new Promise((r) => setTimeout(r, 25));
		}
	}

	// A real click (mouse events at the middle of the element).
	async click(selector) {
		const box = await this.eval(`(() => {
			const e = document.querySelector(${JSON.stringify(
			    selector)});
			if (!e) return null;
			e.scrollIntoView({ block: 'center' });
			const r = e.getBoundingClientRect();
			return { x: r.left + r.width / 2,
			    y: r.top + r.height / 2 };
		})()`);
		if (!box)
			throw new Error('no element ' + selector);
		for (const type of ['mouseMoved', 'mousePressed',
		    'mouseReleased'])
			await this.page('Input.dispatchMouseEvent', { type,
			    x: box.x, y: box.y, button: 'left',
			    clickCount: type === 'mouseMoved' ? 0 : 1 });
	}

	// A key press: "Tab", "Enter", "Escape", " ", with shift if asked.
	async key(key, shift = false) {
		const codes = { Tab: 9, Enter: 13, Escape: 27, ' ': 32 };
		const code = { Tab: 'Tab', Enter: 'Enter', Escape: 'Escape',
		    ' ': 'Space' }[key];
		const base = { key, code, windowsVirtualKeyCode: codes[key],
		    modifiers: shift ? 8 : 0 };
		await this.page('Input.dispatchKeyEvent', Object.assign({
		    type: 'keyDown', text: key === 'Enter' ? '\r' :
		    key === ' ' ? ' ' : undefined }, base));
		await this.page('Input.dispatchKeyEvent', Object.assign({
		    type: 'keyUp' }, base));
	}

	async viewport(width, height, mobile = false) {
		await this.page('Emulation.setDeviceMetricsOverride', {
		    width, height, deviceScaleFactor: 1, mobile });
	}

	async colorScheme(value) {
		await this.page('Emulation.setEmulatedMedia', { features: [
		    { name: 'prefers-color-scheme', value } ] });
	}

	// A PNG of the whole page.
	async screenshot(file) {
		// as wide as the window: a full-height capture has no
		// scroll bar, so the page is laid out that wide
		const w = await this.eval('innerWidth');
		const h = await this.eval(
		    'document.documentElement.scrollHeight');
		const r = await this.page('Page.captureScreenshot', {
		    format: 'png', captureBeyondViewport: true,
		    clip: { x: 0, y: 0, width: w, height: h, scale: 1 } });
		writeFileSync(file, Buffer.from(r.data, 'base64'));
	}

	async close() {
		if (this.proc && this.proc.pid !== undefined &&
		    this.proc.exitCode === null && !this.proc.killed) {
			this.send('Browser.close').catch(() => {});
			const t = setTimeout(() => this.proc.kill('SIGKILL'),
			    5000);
			await this.exited;
			clearTimeout(t);
		}
		if (this.profile)
			rmSync(this.profile, { recursive: true, force: true });
	}
}

'use strict';
/*
 * Runs the script embedded in an ember flame graph SVG against a minimal DOM
 * made from the SVG's own elements, and checks hover, zoom, unzoom, search
 * and labels.  Usage: node flamegraph_svg_check.js small.svg big.svg merged.svg
 * small.svg and merged.svg must come from the folded stacks written by
 * test_flamegraph_svg_js.sh; big.svg is any graph (labels are checked).
 */
const fs = require('fs');
const vm = require('vm');
const assert = require('assert');

const unescape = (s) => s.replace(/&(lt|gt|amp|quot|apos);/g,
	(m, e) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[e]);

function attrs(s) {
	const a = {};
	for (const m of s.matchAll(/([\w-]+)="([^"]*)"/g))
		a[m[1]] = unescape(m[2]);
	return a;
}

class El {
	constructor(tag, a, text, parent) {
		this.tag = tag;
		this.a = a || {};
		this.text = text || '';
		this.kids = [];
		this.parentNode = parent || null;
		this.handlers = {};
		if (parent)
			parent.kids.push(this);
	}
	getAttribute(n) { return n in this.a ? this.a[n] : null; }
	setAttribute(n, v) { this.a[n] = String(v); }
	get textContent() { return this.text; }
	set textContent(v) { this.text = String(v); }
	getElementsByTagName(t) {
		const out = [];
		const walk = (e) => e.kids.forEach((k) => { if (k.tag === t) out.push(k); walk(k); });
		walk(this);
		return out;
	}
	addEventListener(type, fn) { this.handlers[type] = fn; }
}

function load(path) {
	const svg = fs.readFileSync(path, 'utf8');
	const byId = {};
	const root = new El('svg');
	for (const m of svg.matchAll(/<text id="(\w+)"([^>]*)>([^<]*)<\/text>/g))
		byId[m[1]] = new El('text', Object.assign(attrs(m[2]), { id: m[1] }), unescape(m[3]), root);
	const frames = new El('g', { id: 'frames' }, '', root);
	byId.frames = frames;
	const re = /<g data-w="(\d+)"><title>([^<]*)<\/title><rect ([^>]*)\/><text ([^>]*)>([^<]*)<\/text><\/g>/g;
	let n = 0;
	for (const m of svg.matchAll(re)) {
		const g = new El('g', { 'data-w': m[1] }, '', frames);
		new El('title', {}, unescape(m[2]), g);
		new El('rect', attrs(m[3]), '', g);
		new El('text', attrs(m[4]), unescape(m[5]), g);
		n++;
	}
	assert.strictEqual(n, (svg.match(/<g data-w=/g) || []).length, 'every frame parsed');
	const scripts = [...svg.matchAll(/<script type="text\/ecmascript"><!\[CDATA\[([\s\S]*?)\]\]><\/script>/g)]
		.map((m) => m[1]);
	assert.strictEqual(scripts.length, 2);
	const calls = { prompt: [], alert: [] };
	const win = {
		document: { getElementById: (id) => byId[id] || null, documentElement: root },
		prompt: (q, def) => { calls.prompt.push(q); return win.nextPrompt; },
		alert: (msg) => { calls.alert.push(msg); },
		addEventListener: (type, fn) => { win.handlers[type] = fn; },
		handlers: {},
		nextPrompt: null,
	};
	win.window = win;
	vm.createContext(win);
	scripts.forEach((s) => vm.runInContext(s, win));
	return { win, byId, frames, calls, api: win.emberFlamegraph };
}

function frame(api, name) {
	const f = api.frames.filter((e) => e.name === name);
	assert.strictEqual(f.length, 1, `one frame ${name}`);
	return f[0];
}

const near = (a, b, what) => assert.ok(Math.abs(a - b) < 0.02, `${what}: ${a} != ${b}`);
const X = (f) => +f.r.getAttribute('x');
const W = (f) => +f.r.getAttribute('width');

/* ---- small graph: all=8; main=4 {bar 2 {x 2}, baz 1, foo 1}; other 4 ---- */
{
	const { win, byId, frames, calls, api } = load(process.argv[2]);
	const full = 1180;
	assert.strictEqual(api.frames.length, 7);
	const [all, main, foo, bar, baz, x, other] =
		['all', 'main', 'foo', 'bar', 'baz', 'x', 'other'].map((n) => frame(api, n));

	/* hover: details line = name, weight with unit, percentage */
	frames.handlers.mouseover({ target: foo.r });
	assert.strictEqual(byId.details.textContent, 'foo 1 samples (12.50%)');
	frames.handlers.mouseover({ target: bar.t });
	assert.strictEqual(byId.details.textContent, 'bar 2 samples (25.00%)');
	frames.handlers.mouseout({ target: bar.t });
	assert.strictEqual(byId.details.textContent.trim(), '');

	/* click zoom on main: its subtree fills the width, ancestors stay */
	assert.ok(/hide/.test(byId.unzoom.getAttribute('class')));
	frames.handlers.click({ target: main.r });
	assert.ok(!/hide/.test(byId.unzoom.getAttribute('class')), 'Reset zoom shown');
	near(X(main), 10, 'main x');
	near(W(main), full, 'main w');
	near(W(foo), full / 4, 'foo w');
	near(W(bar), full / 2, 'bar w');
	near(W(baz), full / 4, 'baz w');
	near(X(bar), 10, 'bar x');
	near(X(baz), 10 + full / 2, 'baz x');
	near(W(x), full / 2, 'x w');
	assert.strictEqual(all.g.getAttribute('class'), 'anc');
	near(W(all), full, 'all w');
	assert.strictEqual(other.g.getAttribute('class'), 'hide');
	assert.strictEqual(foo.t.textContent, 'foo');

	/* zoom deeper, onto bar: siblings hidden, ancestors kept */
	frames.handlers.click({ target: bar.t });
	near(W(bar), full, 'bar w');
	near(W(x), full, 'x w');
	for (const e of [main, all]) {
		assert.strictEqual(e.g.getAttribute('class'), 'anc');
		near(X(e), 10, `${e.name} x`);
		near(W(e), full, `${e.name} w`);
	}
	for (const e of [foo, baz, other])
		assert.strictEqual(e.g.getAttribute('class'), 'hide');

	/* Reset zoom restores the original geometry */
	byId.unzoom.handlers.click({});
	for (const e of api.frames) {
		near(X(e), e.x, `${e.name} x`);
		near(W(e), e.wd, `${e.name} w`);
		assert.strictEqual(e.g.getAttribute('class'), '');
	}
	assert.ok(/hide/.test(byId.unzoom.getAttribute('class')));

	/* search: highlight and matched percentage, nested matches counted once */
	api.search('^ba');
	assert.strictEqual(byId.matched.textContent, 'Matched: 37.50%');
	assert.strictEqual(bar.r.getAttribute('fill'), 'rgb(230,0,230)');
	assert.strictEqual(foo.r.getAttribute('fill'), foo.fill);
	assert.strictEqual(byId.search.textContent, 'Reset search');
	api.search('main|x');
	assert.strictEqual(byId.matched.textContent, 'Matched: 50.00%');
	api.search('.');
	assert.strictEqual(byId.matched.textContent, 'Matched: 100.00%');
	api.search('(');
	assert.strictEqual(calls.alert.length, 1, 'bad regex reported');
	byId.search.handlers.click({});	/* the button resets an active search */
	assert.strictEqual(byId.matched.textContent, '');
	for (const e of api.frames)
		assert.strictEqual(e.r.getAttribute('fill'), e.fill);

	/* Ctrl-F opens the prompt and searches; Escape resets everything */
	let prevented = 0;
	win.nextPrompt = 'other';
	win.handlers.keydown({ ctrlKey: true, key: 'f', preventDefault: () => prevented++ });
	assert.strictEqual(prevented, 1);
	assert.strictEqual(calls.prompt.length, 1);
	assert.strictEqual(byId.matched.textContent, 'Matched: 50.00%');
	frames.handlers.click({ target: x.r });
	win.handlers.keydown({ key: 'Escape', preventDefault: () => prevented++ });
	assert.strictEqual(byId.matched.textContent, '');
	near(W(x), x.wd, 'x restored');
	win.nextPrompt = null;	/* cancelled prompt: no change */
	win.handlers.keydown({ key: '/', preventDefault: () => prevented++ });
	assert.strictEqual(byId.matched.textContent, '');
}

/* ---- big graph: the script's labels agree with the C renderer's ---- */
{
	const { api } = load(process.argv[3]);
	const before = api.frames.map((e) => e.t.textContent);
	api.zoom(0);	/* zooming on the root relabels every frame in place */
	let diff = 0;
	api.frames.forEach((e, i) => {
		if (e.t.textContent === before[i])
			return;
		/* Widths are printed rounded: only a boundary case may differ. */
		const room = (e.wd - 6) / 7.3;
		assert.ok(Math.abs(room - Math.round(room)) < 0.01,
			  `label of ${e.name} (${e.wd}px): "${before[i]}" vs "${e.t.textContent}"`);
		diff++;
	});
	assert.ok(api.frames.length > 1000, 'big graph');
	console.log(`big graph: ${api.frames.length} frames, ${diff} boundary labels`);
}
/* ---- merged graph: main=10 {[libcrypto.so.3] 5 from 3 offsets, f 5} ---- */
{
	const { byId, frames, api } = load(process.argv[4]);
	assert.strictEqual(api.frames.length, 4);
	const box = frame(api, '[libcrypto.so.3]');
	assert.strictEqual(box.w, 5);
	/* the tooltip lists the offsets; the details line keeps to name and weight */
	const tip = box.g.getElementsByTagName('title')[0].textContent;
	assert.ok(tip.includes('\nlibcrypto.so.3+0x20 3 samples\n'), tip);
	frames.handlers.mouseover({ target: box.r });
	assert.strictEqual(byId.details.textContent, '[libcrypto.so.3] 5 samples (50.00%)');
	api.search('libcrypto');
	assert.strictEqual(byId.matched.textContent, 'Matched: 50.00%');
}
console.log('flamegraph SVG script: all checks passed');

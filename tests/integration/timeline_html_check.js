'use strict';
/*
 * Runs the script of an ember thread timeline page against a minimal DOM
 * made from the page's own elements, and checks lanes, hover, zoom, pan,
 * reset and the per-thread summary.
 * Usage: node timeline_html_check.js small.html small.jsonl big.html dropped.html
 * small.html must come from small.jsonl (test_timeline_html_js.sh writes
 * both); big.html is any large timeline; dropped.html one that dropped 400 events.
 */
const fs = require('fs');
const vm = require('vm');
const assert = require('assert');

const SVG_NS = 'http://www.w3.org/2000/svg';

class El {
	constructor(tag, a, ns) {
		this.tag = tag;
		this.a = a || {};
		this.kids = [];
		this.parentNode = null;
		this.handlers = {};
		this.style = {};
		this.hidden = false;
		this.text = '';
		this.namespaceURI = ns || null;
	}
	getAttribute(n) { return n in this.a ? this.a[n] : null; }
	setAttribute(n, v) { this.a[n] = String(v); }
	appendChild(c) { this.kids.push(c); c.parentNode = this; return c; }
	get textContent() { return this.text + this.kids.map((k) => k.textContent).join(''); }
	set textContent(v) { this.kids.forEach((k) => { k.parentNode = null; }); this.kids = []; this.text = String(v); }
	addEventListener(type, fn) { (this.handlers[type] = this.handlers[type] || []).push(fn); }
	fire(type, ev) {
		ev = Object.assign({ preventDefault() { this.prevented = true; }, target: this }, ev || {});
		(this.handlers[type] || []).forEach((fn) => fn(ev));
		return ev;
	}
	getBoundingClientRect() { return { left: 0, top: 0, width: +this.a.width || 0, height: +this.a.height || 0 }; }
	all(pred) {
		const out = [];
		const walk = (e) => e.kids.forEach((k) => { if (pred(k)) out.push(k); walk(k); });
		walk(this);
		return out;
	}
}

function attrs(s) {
	const a = {};
	for (const m of s.matchAll(/([\w-]+)="([^"]*)"/g))
		a[m[1]] = m[2];
	return a;
}

/* The page's static checks, then its script run in a context of its own. */
function load(path) {
	const html = fs.readFileSync(path, 'utf8');
	/* one file, nothing fetched */
	assert.ok(!/\b(src|href)\s*=\s*["']?\s*(https?:)?\/\//i.test(html), `${path}: an external src/href`);
	assert.ok(!/https?:\/\//i.test(html), `${path}: a URL`);
	assert.ok(!/<link\b|@import|<iframe|<img\b/i.test(html), `${path}: an external resource`);
	for (const m of html.matchAll(/url\(([^)]*)\)/g))
		assert.ok(m[1].startsWith('#'), `${path}: url(${m[1]})`);
	assert.strictEqual((html.match(/<script\b/g) || []).length, 2, 'the island and the script');
	assert.ok(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/.test(html), 'text only');

	const byId = {};
	for (const m of html.matchAll(/<(\w+)\s([^>]*?\bid="([^"]+)"[^>]*)>/g)) {
		const e = new El(m[1], attrs(m[2]), m[1] === 'svg' || m[1] === 'g' ? SVG_NS : null);
		e.hidden = /\bhidden\b/.test(m[2].replace(/"[^"]*"/g, ''));
		byId[m[3]] = e;
	}
	const island = html.match(/<script type="application\/json" id="tl-data">([\s\S]*?)<\/script>/);
	assert.ok(island, 'the JSON island');
	assert.ok(!/<[^\\]/.test(island[1]), 'no tag opener in the island');
	byId['tl-data'].text = island[1];
	const data = JSON.parse(island[1]);
	/* the timeline's groups live in its svg */
	byId.timeline.appendChild(byId.axis);
	byId.timeline.appendChild(byId.lanes);
	const script = html.match(/<script>([\s\S]*?)<\/script>/)[1];
	const doc = {
		getElementById: (id) => byId[id] || null,
		createElementNS: (ns, tag) => new El(tag, {}, ns),
		createElement: (tag) => new El(tag, {}),
		body: { clientWidth: 1270 },
		handlers: {},
		addEventListener(type, fn) { (this.handlers[type] = this.handlers[type] || []).push(fn); },
		fire(type, ev) { (this.handlers[type] || []).forEach((fn) => fn(Object.assign({ preventDefault() {} }, ev))); },
	};
	const win = { document: doc, console };
	win.window = win;
	vm.createContext(win);
	const t = process.hrtime.bigint();
	vm.runInContext(script, win);
	const ms = Number(process.hrtime.bigint() - t) / 1e6;
	return { html, byId, doc, data, api: win.emberTimeline, ms };
}

const evRects = (byId) => byId.lanes.all((k) => k.tag === 'rect' && k.getAttribute('data-seg') !== null);
const texts = (root) => root.all((k) => k.tag === 'text').map((k) => k.textContent);
const near = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-3 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);

/* The rect drawing event i of the island (alone in its bar). */
function rectOf(p, pred) {
	const segs = p.api.segs();
	const k = segs.findIndex((s) => s.evs.length === 1 && pred(p.data.events[s.evs[0]]));
	assert.ok(k >= 0, 'a bar for the event');
	const r = evRects(p.byId).find((e) => e.getAttribute('data-seg') === String(k));
	assert.ok(r, 'its rect');
	return r;
}

function hover(p, rect) {
	p.byId.timeline.fire('mouseover', { target: rect, pageX: 100, pageY: 50 });
	assert.strictEqual(p.byId.tip.hidden, false, 'tooltip shown');
	return p.byId.tip.textContent;
}

/*
 * --lanes PAGE: what a reader sees of any page, as JSON on stdout: per lane
 * ("comm (tid)"), its bars left to right (their type, names and whether they
 * run on to the end), for tests of real profiles (test_threads.sh).
 */
if (process.argv[2] === '--lanes') {
	const p = load(process.argv[3]);
	const str = (i) => p.data.strings[i];
	const lanes = {};
	const segs = p.api.segs();
	for (const r of evRects(p.byId)) {
		const seg = segs[+r.getAttribute('data-seg')];
		const th = p.data.threads[p.data.events[seg.evs[0]][0]];
		const label = `${str(th[2]) || '?'} (${th[1]})`;
		(lanes[label] = lanes[label] || []).push({
			x: +r.getAttribute('x'), w: +r.getAttribute('width'), type: str(seg.type),
			names: seg.evs.map((i) => str(p.data.events[i][1])), ongoing: r.getAttribute('class') === 'ev ongoing',
		});
	}
	for (const l of Object.values(lanes))
		l.sort((a, b) => a.x - b.x);
	process.stdout.write(JSON.stringify({ lanes, plot_end: p.api.LABEL_W + p.api.plotW }) + '\n');
	process.exit(0);
}

/* ---- the small timeline, against the events it was made from ---- */
{
	const p = load(process.argv[2]);
	const lines = fs.readFileSync(process.argv[3], 'utf8').split('\n').filter((l) => l.trim());
	const src = lines.map((l) => JSON.parse(l));
	const { byId, data, api } = p;
	const str = (i) => data.strings[i];
	const t0 = src.reduce((m, e) => (BigInt(e.start_ns) < m ? BigInt(e.start_ns) : m), BigInt(src[0].start_ns));
	const t1 = src.reduce((m, e) => (BigInt(e.end_ns) > m ? BigInt(e.end_ns) : m), 0n);
	const span = Number(t1 - t0);
	assert.strictEqual(data.t0, String(t0));
	assert.strictEqual(data.span, span);
	assert.strictEqual(data.events.length, src.length);
	assert.ok(/<p id="counts">3 threads in 2 processes, 10 events<\/p>/.test(p.html), 'header counts');
	assert.ok(/<p id="range">From 2024-05-01 12:00:00\.000000000 UTC to 2024-05-01 12:00:04\.000000000 UTC/.test(p.html));
	assert.ok(!/id="dropped"/.test(p.html));
	assert.ok(!p.html.includes('<script>alert'), 'hostile comm escaped');

	/* lanes: "comm (tid)" under "proc (tgid)", in (tgid, tid) order */
	const labels = texts(byId.lanes);
	assert.deepStrictEqual(labels, ['web (100)', 'web-main (100)', 'web-io (101)', 'db (200)',
		'</script><script>alert(1)</script> (201)']);
	assert.strictEqual(evRects(byId).length, src.length, 'one rect per event at full view');
	for (const r of evRects(byId)) {
		assert.ok(+r.getAttribute('width') >= 1, 'at least 1 px');
		const e = data.events[api.segs()[+r.getAttribute('data-seg')].evs[0]];
		assert.strictEqual(r.getAttribute('fill'), data.colors[str(e[2])] || data.colors.other);
	}
	/* the legend names every type */
	for (const ty of ['oncpu', 'file', 'net', 'lock', 'sched'])
		assert.ok(p.html.includes(`</svg>${ty}</span>`), `legend ${ty}`);

	/* hover: every attribute, readable times with ns, the stack one frame per line */
	const read = rectOf(p, (e) => str(e[1]) === 'read');
	const tip = hover(p, read);
	const want = ['event.name: read', 'event.type: file', 'thread: web-main (100)', 'process: web (100)',
		'start: 2024-05-01 12:00:01.000000000 UTC (1714564801000000000 ns)',
		'end: 2024-05-01 12:00:01.500000007 UTC (1714564801500000007 ns)',
		'duration: 300.000 ms (300000000 ns)', 'count: 12', 'file.path: /etc/passwd',
		'func.stack (root first):\n  main\n  loop\n  read_config\n  read'];
	for (const w of want)
		assert.ok(tip.includes(w), `tooltip has "${w}":\n${tip}`);
	assert.ok(!tip.includes('still in progress'));
	assert.ok(/^file\.path: /m.test(tip) && !/^sock\.conn/m.test(tip));
	byId.timeline.fire('mouseout', {});
	assert.strictEqual(byId.tip.hidden, true, 'tooltip hidden on mouseout');
	assert.ok(hover(p, rectOf(p, (e) => str(e[1]) === 'send')).includes('sock.conn: 10.0.0.1:5000 -> 10.0.0.2:80'));
	assert.ok(hover(p, rectOf(p, (e) => str(e[1]) === 'futex')).includes('futex.op: wait'));

	/* ongoing: marked, drawn to the end, said in the tooltip */
	const fsync = rectOf(p, (e) => str(e[1]) === 'fsync');
	assert.strictEqual(fsync.getAttribute('class'), 'ev ongoing');
	near(+fsync.getAttribute('x') + +fsync.getAttribute('width'), api.LABEL_W + api.plotW, 'ongoing to the end');
	assert.ok(byId.lanes.all((k) => k.getAttribute('class') === 'hatch' && k.getAttribute('fill') === 'url(#hatch)').length === 1);
	assert.ok(hover(p, fsync).includes('still in progress at the end'));

	/* hostile strings come out as they went in, as text */
	const w = hover(p, rectOf(p, (e) => str(e[1]) === 'write'));
	assert.ok(w.includes('thread: </script><script>alert(1)</script> (201)'), w);
	assert.ok(w.includes('file.path: a"b\\c\nd\u0001</script>\ufffd'), w);

	/* an event far under a pixel is still 1 px wide */
	assert.strictEqual(+rectOf(p, (e) => str(e[1]) === 'close').getAttribute('width'), 1);

	/* zoom and pan in time; the axis follows */
	const axis0 = texts(byId.axis).join('|'), view0 = byId.view.textContent;
	assert.ok(axis0.length > 0 && view0.length > 0);
	const ticks = () => {
		const n = texts(byId.axis).length;
		assert.ok(n >= 4 && n <= 20, `ticks: ${n}`);
		return n;
	};
	ticks();
	near(api.view.a, 0, 'a');
	near(api.view.b, span, 'b');
	byId['zoom-in'].fire('click');
	near(api.view.a, span / 4, 'zoom-in a');
	near(api.view.b, 3 * span / 4, 'zoom-in b');
	assert.notStrictEqual(texts(byId.axis).join('|'), axis0, 'axis relabelled');
	ticks();
	assert.notStrictEqual(byId.view.textContent, view0, 'range text updated');
	/* the rect of "read" (1 s to 1.5 s) now spans twice the pixels */
	const rw = +rectOf(p, (e) => str(e[1]) === 'read').getAttribute('width');
	near(rw, 2 * +read.getAttribute('width'), 'read width doubled');
	/* wheel: zoom about the pointer */
	let a = api.view.a, wd = api.view.b - api.view.a;
	const wev = byId.timeline.fire('wheel', { deltaY: -100, clientX: api.LABEL_W + api.plotW / 4 });
	assert.ok(wev.prevented, 'wheel does not scroll the page');
	near(api.view.b - api.view.a, wd * 0.8, 'wheel in');
	near(api.view.a, a + wd / 4 - wd * 0.8 / 4, 'pointer stays put');
	byId.timeline.fire('wheel', { deltaY: 100, clientX: api.LABEL_W + api.plotW / 4 });
	near(api.view.b - api.view.a, wd, 'wheel out');
	/* pan buttons, drag, keys */
	a = api.view.a;
	wd = api.view.b - api.view.a;
	byId['pan-right'].fire('click');
	near(api.view.a, a + wd / 4, 'pan right');
	byId['pan-left'].fire('click');
	near(api.view.a, a, 'pan left');
	byId.timeline.fire('mousedown', { clientX: 600 });
	p.doc.fire('mousemove', { clientX: 500 });
	near(api.view.a, a + 100 * wd / api.plotW, 'drag left shows later');
	p.doc.fire('mouseup', {});
	p.doc.fire('mousemove', { clientX: 100 });
	near(api.view.a, a + 100 * wd / api.plotW, 'drag ends on mouseup');
	p.doc.fire('keydown', { key: '-' });
	near(api.view.b - api.view.a, 2 * wd, 'key -');
	/* pan stops at the ends */
	for (let i = 0; i < 20; i++)
		byId['pan-left'].fire('click');
	near(api.view.a, 0, 'clamped at the start');
	/* reset */
	byId.reset.fire('click');
	near(api.view.a, 0, 'reset a');
	near(api.view.b, span, 'reset b');
	assert.strictEqual(texts(byId.axis).join('|'), axis0, 'axis back');
	byId['zoom-out'].fire('click');
	near(api.view.b - api.view.a, span, 'no zoom out past the whole range');
	for (let i = 0; i < 60; i++)
		byId['zoom-in'].fire('click');
	assert.ok(api.view.b - api.view.a >= api.plotW - 1e-6, 'no zoom past 1 ns per pixel');
	ticks();
	const deep = texts(byId.axis);
	assert.strictEqual(new Set(deep).size, deep.length, `distinct tick labels at 1 ns/px: ${deep}`);
	byId.reset.fire('click');

	/* summary: per thread, the summed duration_ns per type; pies per process */
	const want_sums = {};
	for (const e of src) {
		const k = `${e.tid}/${e.type}`;
		want_sums[k] = (want_sums[k] || 0) + e.duration_ns;
	}
	const rows = byId.summary.all((k) => k.tag === 'tr' && k.getAttribute('data-tid') !== null);
	assert.strictEqual(rows.length, 3);
	for (const tr of rows) {
		const tid = tr.getAttribute('data-tid');
		let total = 0;
		for (const td of tr.kids.filter((k) => k.getAttribute('data-type'))) {
			const v = +td.getAttribute('data-ns');
			assert.strictEqual(v, want_sums[`${tid}/${td.getAttribute('data-type')}`] || 0,
				`thread ${tid} ${td.getAttribute('data-type')}`);
			total += v;
		}
		const tot = tr.kids.find((k) => k.getAttribute('data-type') === '');
		assert.strictEqual(+tot.getAttribute('data-ns'), total);
		const bar = tr.all((k) => k.tag === 'rect');
		near(bar.reduce((s, r) => s + +r.getAttribute('width'), 0), 200, 'stacked bar full');
	}
	const web = rows.find((r) => r.getAttribute('data-tid') === '100');
	const cell = web.kids.find((k) => k.getAttribute('data-type') === 'oncpu');
	assert.strictEqual(cell.textContent, '900.000 ms (42.9%)');
	const boxes = byId.summary.kids;
	assert.strictEqual(boxes.length, 2, 'a summary per process');
	for (const box of boxes) {
		const tgid = +box.getAttribute('data-tgid');
		const sums = {};
		for (const e of src.filter((e) => e.tgid === tgid))
			sums[e.type] = (sums[e.type] || 0) + e.duration_ns;
		const total = box.all((k) => k.getAttribute('class') === 'total')[0];
		for (const td of total.kids.filter((k) => k.getAttribute('data-type')))
			assert.strictEqual(+td.getAttribute('data-ns'), sums[td.getAttribute('data-type')] || 0);
		const pie = box.all((k) => k.getAttribute('class') === 'pie');
		assert.strictEqual(pie.length, 1, 'a process pie');
		const slices = pie[0].kids;
		assert.deepStrictEqual(slices.map((s) => s.getAttribute('data-type')).sort(), Object.keys(sums).sort());
		assert.ok(slices.every((s) => /: .*%\)$/.test(s.kids[0].textContent)), 'slice titles');
	}
	console.log(`small: ok (${src.length} events, script ${p.ms.toFixed(1)} ms)`);
}

/* ---- a large timeline: bars merge below a few pixels, and split when zoomed ---- */
{
	const p = load(process.argv[4]);
	const { byId, data, api } = p;
	const lanes = data.threads.length;
	const n0 = evRects(byId).length;
	assert.ok(n0 > lanes && n0 <= lanes * api.plotW * 6, `bounded rects: ${n0}`);
	for (const r of evRects(byId))
		assert.ok(+r.getAttribute('width') >= 1, 'at least 1 px');
	const merged = api.segs().findIndex((s) => s.evs.length > 1);
	assert.ok(merged >= 0, 'merged bars');
	const r = evRects(byId).find((e) => e.getAttribute('data-seg') === String(merged));
	assert.ok(/\+\d+ more \w+ events in this bar: zoom in/.test(hover(p, r)));
	const covered = api.segs().reduce((s, g) => s + g.evs.length, 0);
	assert.strictEqual(covered, data.events.length, 'every event in a bar at full view');
	const t = process.hrtime.bigint();
	for (let i = 0; i < 8; i++)
		byId['zoom-in'].fire('click');
	const zms = Number(process.hrtime.bigint() - t) / 8e6;
	const single = api.segs().filter((s) => s.evs.length === 1).length;
	assert.ok(single > 0.9 * api.segs().length, 'zoomed in: one event per bar');
	console.log(`big: ok (${data.events.length} events, ${lanes} threads, ${n0} rects, ` +
		`first render ${p.ms.toFixed(0)} ms, re-render ${zms.toFixed(0)} ms)`);
}

/* ---- a timeline that dropped events says so ---- */
{
	const p = load(process.argv[5]);
	assert.ok(/<p id="dropped" class="warn">400 events dropped \(past the limit of 600 events/.test(p.html));
	assert.strictEqual(p.data.dropped, 400);
	assert.strictEqual(p.data.events.length, 600);
	console.log('dropped: ok');
}

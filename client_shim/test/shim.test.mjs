import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import {
	beforeCompactEvent,
	compactionEntry,
	deadSocket,
	fakeCtx,
	fakePi,
	loadShim,
	okCompactResult,
	sleep,
	startDaemon,
	waitFor,
} from "../testing/fakes.mjs";

const factory = await loadShim();
let daemon;

beforeEach(() => {
	delete process.env.PI_COMPACTOR;
	delete process.env.LONGHAUL_SHIM_DEADLINE_MS;
	delete process.env.LONGHAUL_SOCKET;
});
afterEach(async () => {
	await daemon?.stop();
	daemon = undefined;
});

async function setup(piOpts) {
	const pi = fakePi(piOpts);
	await factory(pi);
	return { pi, ctx: fakeCtx() };
}

/** pi writes its own summary after a fallback and emits session_compact; held notices show one turn later. */
async function piCompactionEnds(pi, ctx) {
	pi.handlers.session_compact(
		{ type: "session_compact", compactionEntry: compactionEntry({ summary: "pi summary", details: {} }), fromExtension: false },
		ctx,
	);
	await sleep(5);
}

test("loading connects to nothing and registers the four handlers", async () => {
	daemon = await startDaemon();
	const pi = fakePi();
	await factory(pi);
	await sleep(50);
	assert.equal(daemon.connections, 0);
	assert.deepEqual(Object.keys(pi.handlers).sort(), ["agent_start", "session_before_compact", "session_compact", "session_start"]);
});

test("session_start sends hello lazily with the session facts", async () => {
	daemon = await startDaemon();
	process.env.PI_COMPACT_STATE_DEBUG = "1";
	try {
		const { pi, ctx } = await setup();
		const ret = pi.handlers.session_start({ type: "session_start", reason: "startup" }, ctx);
		assert.equal(ret, undefined, "handler returns at once; hello is not awaited by pi");
		await waitFor(() => daemon.byMethod("hello").length === 1);
		const { params } = daemon.byMethod("hello")[0];
		assert.equal(params.reason, "startup");
		assert.deepEqual(params.session, {
			cwd: "/tmp/proj",
			sessionId: "0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
			sessionFile: "/tmp/agent/sessions/--tmp-proj--/s.jsonl",
			agentDir: params.session.agentDir,
			piVersion: "0.73.1",
			model: {
				provider: "fake",
				id: "fake-model",
				api: "openai-completions",
				baseUrl: "http://127.0.0.1:9/v1",
				reasoning: false,
				contextWindow: 32000,
				maxTokens: 4096,
				compat: null,
				thinkingLevelMap: null,
			},
			thinkingLevel: "medium",
			env: { PI_COMPACT_STATE_DEBUG: "1" },
		});
		assert.ok(params.session.agentDir.length > 0);
	} finally {
		delete process.env.PI_COMPACT_STATE_DEBUG;
	}
});

test("hello with no daemon at all: no throw, nothing rejected", async () => {
	deadSocket();
	const { pi, ctx } = await setup();
	const unhandled = [];
	const onUnhandled = (e) => unhandled.push(e);
	process.on("unhandledRejection", onUnhandled);
	try {
		assert.doesNotThrow(() => pi.handlers.session_start({ type: "session_start", reason: "startup" }, ctx));
		await sleep(50);
		assert.deepEqual(unhandled, []);
	} finally {
		process.off("unhandledRejection", onUnhandled);
	}
});

test("compact: fileOps Sets become sorted arrays; the daemon's compaction is returned exactly", async () => {
	daemon = await startDaemon();
	const { pi, ctx } = await setup();
	const ret = await pi.handlers.session_before_compact(beforeCompactEvent({ customInstructions: "focus" }), ctx);
	assert.deepEqual(ret, { compaction: okCompactResult().compaction });
	const [req] = daemon.byMethod("compact");
	assert.equal(req.jsonrpc, "2.0");
	assert.deepEqual(req.params.preparation.fileOps, { read: ["a.ts", "z.ts"], written: ["m.ts"], edited: [] });
	assert.equal(req.params.customInstructions, "focus");
	assert.equal(req.params.reason, null);
	assert.equal(req.params.preparation.previousSummary, null);
	assert.equal(req.params.preparation.tokensBefore, 1234);
	assert.equal("settings" in req.params.preparation, false);
	assert.deepEqual(ctx.notices, []);
});

test("compact names the session file and its leaf; a span message an entry holds goes as a reference", async () => {
	daemon = await startDaemon();
	const { pi, ctx } = await setup();
	const event = beforeCompactEvent();
	const fresh = { role: "custom", customType: "note", content: "built by pi", display: true, timestamp: 2 };
	event.preparation.messagesToSummarize.push(fresh);
	await pi.handlers.session_before_compact(event, ctx);
	const [req] = daemon.byMethod("compact");
	assert.equal(req.params.session.sessionFile, "/tmp/agent/sessions/--tmp-proj--/s.jsonl");
	assert.equal(req.params.leafId, "cccc0001"); // the last entry of the branch pi prepared
	assert.equal(req.params.branchEntries, null); // the daemon reads the branch from the file
	assert.equal(req.params.sessionFileRefused, null);
	assert.deepEqual(req.params.preparation.messagesToSummarize, [{ entryRef: "cccc0001" }, fresh]);
});

test("compact without a session file (--no-session) sends the entries inline, each message once", async () => {
	daemon = await startDaemon();
	const { pi } = await setup();
	const ctx = fakeCtx();
	ctx.sessionManager.getSessionFile = () => undefined;
	const event = beforeCompactEvent();
	await pi.handlers.session_before_compact(event, ctx);
	const [req] = daemon.byMethod("compact");
	assert.equal(req.params.session.sessionFile, null);
	assert.deepEqual(req.params.branchEntries, JSON.parse(JSON.stringify(event.branchEntries)));
	assert.deepEqual(req.params.preparation.messagesToSummarize, [{ entryRef: "cccc0001" }]);
});

test("a refused session file (-32004) sends the same pass again inline, naming the refusal", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact" && req.params.branchEntries === null
			? { jsonrpc: "2.0", id: req.id, error: { code: -32004, message: "Session file refused: symlink", data: { reason: "symlink" } } }
			: dflt(req),
	);
	const { pi, ctx } = await setup();
	const ret = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	assert.deepEqual(ret, { compaction: okCompactResult().compaction });
	const [first, second] = daemon.byMethod("compact");
	assert.equal(first.params.branchEntries, null);
	assert.equal(second.params.branchEntries[0].id, "cccc0001");
	assert.equal(second.params.sessionFileRefused, "symlink");
	assert.deepEqual(ctx.notices, []);
	assert.equal(daemon.byMethod("incident").length, 0);
});

test("daemon absent: undefined, exactly one warning notice after the compaction, no throw", async () => {
	const path = deadSocket();
	const { pi, ctx } = await setup();
	const ret = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	assert.equal(ret, undefined);
	assert.deepEqual(ctx.notices, [], "held while the compaction runs: pi's redraw at its end would wipe it");
	await piCompactionEnds(pi, ctx);
	assert.equal(ctx.notices.length, 1);
	assert.equal(ctx.notices[0].level, "warning");
	assert.match(ctx.notices[0].message, /^Longhaul: daemon not running \(.*ENOENT.*\); pi's own compaction runs instead$/);
	assert.ok(ctx.notices[0].message.includes(path));
	// FAIL-15: the shim writes that fallback record itself, into the agent dir npm test set up (never the real one).
	const log = join(process.env.PI_CODING_AGENT_DIR, "logs", "compaction-state.jsonl");
	assert.ok(log.startsWith(process.env.LONGHAUL_TEST_SCRATCH), "npm test runs with a scratch agent dir");
	await waitFor(() => existsSync(log) && readFileSync(log, "utf8").includes('"reason":"daemon-unavailable"'));
});

test("JSON-RPC error: undefined + fallback incident with protocol-error", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact" ? { jsonrpc: "2.0", id: req.id, error: { code: -32602, message: "invalid params" } } : dflt(req),
	);
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	const inc = daemon.byMethod("incident")[0].params;
	assert.equal(inc.kind, "fallback");
	assert.equal(inc.reason, "protocol-error");
	assert.equal(inc.errorClass, "RpcError");
	assert.equal(inc.error, "-32602: invalid params");
	await piCompactionEnds(pi, ctx);
	assert.equal(ctx.notices.length, 1);
});

test("busy error (-32002) falls back with reason busy", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact" ? { jsonrpc: "2.0", id: req.id, error: { code: -32002, message: "busy" } } : dflt(req),
	);
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	assert.equal(daemon.byMethod("incident")[0].params.reason, "busy");
});

test("malformed reply (not JSON) → protocol-error fallback", async () => {
	daemon = await startDaemon((req, dflt) => (req.method === "compact" ? "this is not json\n" : dflt(req)));
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	assert.equal(daemon.byMethod("incident")[0].params.reason, "protocol-error");
	await piCompactionEnds(pi, ctx);
	assert.match(ctx.notices[0].message, /protocol error/);
});

test("malformed result shape → protocol-error fallback", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact" ? { jsonrpc: "2.0", id: req.id, result: { passId: "p", span: 1, compaction: { summary: 3 } } } : dflt(req),
	);
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	assert.equal(daemon.byMethod("incident")[0].params.reason, "protocol-error");
});

test("deadline exceeded: undefined, connection destroyed, timeout incident", async () => {
	daemon = await startDaemon((req, dflt) => (req.method === "compact" ? undefined : dflt(req)));
	process.env.LONGHAUL_SHIM_DEADLINE_MS = "150";
	const { pi, ctx } = await setup();
	const t0 = Date.now();
	const ret = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	assert.equal(ret, undefined);
	assert.ok(Date.now() - t0 < 1500);
	await waitFor(() => daemon.closes >= 1);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	const inc = daemon.byMethod("incident")[0].params;
	assert.equal(inc.reason, "timeout");
	assert.equal(inc.errorClass, "ShimTimeoutError");
	await piCompactionEnds(pi, ctx);
	assert.equal(ctx.notices.length, 1);
	assert.match(ctx.notices[0].message, /did not answer within/);
});

test("abort signal: {cancel:true} promptly, the daemon sees the connection close, aborted incident", async () => {
	daemon = await startDaemon((req, dflt) => (req.method === "compact" ? undefined : dflt(req)));
	const { pi, ctx } = await setup();
	const ac = new AbortController();
	const p = pi.handlers.session_before_compact(beforeCompactEvent({ signal: ac.signal }), ctx);
	await waitFor(() => daemon.byMethod("compact").length === 1);
	const closesBefore = daemon.closes;
	const t0 = Date.now();
	ac.abort();
	assert.deepEqual(await p, { cancel: true });
	assert.ok(Date.now() - t0 < 1000);
	await waitFor(() => daemon.closes > closesBefore);
	await waitFor(() => daemon.byMethod("incident").length === 1);
	const inc = daemon.byMethod("incident")[0].params;
	assert.equal(inc.kind, "aborted");
	assert.equal(inc.reason, "signal");
	assert.deepEqual(ctx.notices, []);
});

test("PASS-18: an abort while pi's registry still resolves the key answers {cancel:true} at once, no compact sent", async () => {
	daemon = await startDaemon();
	const { pi } = await setup();
	let lookups = 0;
	// a `"!cmd"` key whose command hangs: the lookup never settles on its own
	const ctx = fakeCtx({ modelRegistry: { getApiKeyAndHeaders: () => (lookups++, new Promise(() => {})) } });
	const ac = new AbortController();
	const p = pi.handlers.session_before_compact(beforeCompactEvent({ signal: ac.signal }), ctx);
	await waitFor(() => lookups === 1);
	const t0 = Date.now();
	ac.abort();
	assert.deepEqual(await p, { cancel: true });
	assert.ok(Date.now() - t0 < 1000, "within a second of the abort, not after the 10 s resolve timeout");
	await waitFor(() => daemon.byMethod("incident").length === 1);
	assert.equal(daemon.byMethod("incident")[0].params.kind, "aborted");
	assert.equal(daemon.byMethod("compact").length, 0);
	assert.deepEqual(ctx.notices, []);
});

test("PASS-18: an abort while the daemon is asked for the route answers {cancel:true}, no compact sent", async () => {
	daemon = await startDaemon((req, dflt) => (req.method === "route" ? undefined : dflt(req)));
	const { pi, ctx } = await setup();
	const ac = new AbortController();
	const p = pi.handlers.session_before_compact(beforeCompactEvent({ signal: ac.signal }), ctx);
	await waitFor(() => daemon.byMethod("route").length === 1);
	ac.abort();
	assert.deepEqual(await p, { cancel: true });
	await waitFor(() => daemon.byMethod("incident").length === 1);
	assert.equal(daemon.byMethod("compact").length, 0);
});

test("session_compact: span record with compactionId, then the line one turn later; compacted reported", async () => {
	daemon = await startDaemon();
	const { pi, ctx } = await setup();
	const res = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	const entry = compactionEntry({ summary: res.compaction.summary, details: res.compaction.details });
	pi.handlers.session_compact({ type: "session_compact", compactionEntry: entry, fromExtension: true }, ctx);
	assert.deepEqual(
		pi.entries.map((e) => e.customType),
		["compaction-state.span"],
		"the line is not appended synchronously",
	);
	assert.deepEqual(pi.entries[0].data, { v: 1, span: 1, passId: "p-1", closedAs: "whole", compactionId: "dddd0004" });
	await sleep(0);
	await sleep(0);
	assert.deepEqual(
		pi.entries.map((e) => e.customType),
		["compaction-state.span", "compaction-state.line"],
	);
	const line = pi.entries[1].data;
	assert.deepEqual({ ...line, ms: 0 }, { v: 1, span: 1, calls: 2, tokens: 345, ms: 0 });
	assert.ok(Number.isInteger(line.ms) && line.ms >= 0);
	await waitFor(() => daemon.byMethod("compacted").length === 1);
	assert.deepEqual(daemon.byMethod("compacted")[0].params, {
		session: daemon.byMethod("compacted")[0].params.session,
		compactionEntryId: "dddd0004",
		fromExtension: true,
		passId: "p-1",
		span: 1,
		reason: null,
		summaryChars: "LONGHAUL span 1 pass p-1".length,
		tokensBefore: 1234,
	});
});

test("appendEntry throwing 'ctx is stale': incidents reported, nothing thrown", async () => {
	daemon = await startDaemon();
	const { pi, ctx } = await setup({
		appendEntry: () => {
			throw new Error("This extension ctx is stale after session replacement or reload.");
		},
	});
	const res = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	const entry = compactionEntry({ summary: res.compaction.summary, details: res.compaction.details });
	assert.doesNotThrow(() =>
		pi.handlers.session_compact({ type: "session_compact", compactionEntry: entry, fromExtension: true }, ctx),
	);
	await waitFor(() => daemon.byMethod("incident").length === 2);
	const kinds = daemon.byMethod("incident").map((r) => r.params);
	const span = kinds.find((k) => k.kind === "span-record-failed");
	const line = kinds.find((k) => k.kind === "compaction-line-failed");
	assert.equal(span.span, 1);
	assert.equal(span.errorClass, "Error");
	assert.ok(span.error.startsWith("This extension ctx is stale"));
	assert.equal(line.errorClass, "Error");
	await waitFor(() => daemon.byMethod("compacted").length === 1);
});

test("stale ctx after the long await: the fallback notice is swallowed", async () => {
	deadSocket();
	const pi = fakePi();
	await factory(pi);
	const ctx = fakeCtx({
		ui: {
			notify: () => {
				throw new Error("ctx is stale");
			},
		},
	});
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
});

test("stand-down PI_COMPACTOR=pi: no compact request, undefined, still hello and compacted", async () => {
	daemon = await startDaemon();
	process.env.PI_COMPACTOR = " Pi ";
	const { pi, ctx } = await setup();
	pi.handlers.session_start({ type: "session_start", reason: "startup" }, ctx);
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	pi.handlers.session_compact(
		{ type: "session_compact", compactionEntry: compactionEntry({ summary: "pi's own" }), fromExtension: false },
		ctx,
	);
	await waitFor(() => daemon.byMethod("compacted").length === 1 && daemon.byMethod("hello").length === 1);
	await sleep(20);
	assert.equal(daemon.byMethod("compact").length, 0);
	assert.equal(daemon.byMethod("hello")[0].params.session.env.PI_COMPACTOR, " Pi ");
	const c = daemon.byMethod("compacted")[0].params;
	assert.equal(c.fromExtension, false);
	assert.equal(c.passId, null);
	assert.deepEqual(pi.entries, [], "stand-down writes no Longhaul entries");
	assert.deepEqual(ctx.notices, []);
});

test("PI_COMPACTOR=state selects Longhaul", async () => {
	daemon = await startDaemon();
	process.env.PI_COMPACTOR = "STATE";
	const { pi, ctx } = await setup();
	assert.ok((await pi.handlers.session_before_compact(beforeCompactEvent(), ctx)).compaction);
	assert.equal(daemon.byMethod("compact").length, 1);
});

test("daemon fallback: undefined, one notice, pi's compaction gets only the fallback line", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact"
			? { jsonrpc: "2.0", id: req.id, result: { passId: "p-9", span: 3, fallback: "diff-failed" } }
			: dflt(req),
	);
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	assert.deepEqual(ctx.notices, []);
	pi.handlers.session_compact(
		{ type: "session_compact", compactionEntry: compactionEntry({ summary: "pi summary", details: { readFiles: [] } }), fromExtension: false },
		ctx,
	);
	assert.deepEqual(pi.entries, []);
	assert.deepEqual(ctx.notices, [], "shown one turn after session_compact, when pi has redrawn its chat");
	await sleep(5);
	assert.equal(ctx.notices.length, 1);
	assert.match(ctx.notices[0].message, /fell back \(diff-failed\)/);
	assert.equal(pi.entries.length, 1);
	assert.equal(pi.entries[0].customType, "compaction-state.line");
	assert.deepEqual(Object.keys(pi.entries[0].data).sort(), ["fallback", "ms", "v"]);
	assert.equal(pi.entries[0].data.fallback, "diff-failed");
	await waitFor(() => daemon.byMethod("compacted").length === 1 && daemon.byMethod("incident").length === 1);
	const inc = daemon.byMethod("incident")[0].params;
	assert.deepEqual([inc.kind, inc.reason, inc.passId, inc.span], ["fallback", "diff-failed", "p-9", 3]);
	const c = daemon.byMethod("compacted")[0].params;
	assert.deepEqual([c.fromExtension, c.passId, c.span], [false, "p-9", 3]);
});

test("daemon notice is shown as info once Longhaul's compaction has ended", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "compact"
			? { jsonrpc: "2.0", id: req.id, result: { ...okCompactResult(), notice: "Longhaul: span 1 closed narrative-less (model-error)" } }
			: dflt(req),
	);
	const order = [];
	const { pi, ctx } = await setup({ appendEntry: (customType) => order.push(customType) });
	const notify = ctx.ui.notify;
	ctx.ui.notify = (message, level) => {
		order.push("notice");
		notify(message, level);
	};
	const { compaction } = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	assert.deepEqual(ctx.notices, []);
	pi.handlers.session_compact(
		{ type: "session_compact", compactionEntry: compactionEntry({ summary: compaction.summary, details: compaction.details }), fromExtension: true },
		ctx,
	);
	await sleep(5);
	assert.deepEqual(ctx.notices, [{ message: "Longhaul: span 1 closed narrative-less (model-error)", level: "info" }]);
	// Out before the compaction's line is appended, so an RPC client has the notice once the line is in the file.
	assert.deepEqual(order.slice(-2), ["notice", "compaction-state.line"]);
});

test("a notice whose compaction never ended (pi's own summary failed) shows when the next agent run starts", async () => {
	deadSocket();
	const { pi, ctx } = await setup();
	assert.equal(await pi.handlers.session_before_compact(beforeCompactEvent(), ctx), undefined);
	await sleep(5);
	assert.deepEqual(ctx.notices, []);
	pi.handlers.agent_start({ type: "agent_start" }, ctx);
	await sleep(5);
	assert.equal(ctx.notices.length, 1);
	assert.match(ctx.notices[0].message, /^Longhaul: daemon not running/);
	pi.handlers.agent_start({ type: "agent_start" }, ctx);
	await sleep(5);
	assert.equal(ctx.notices.length, 1, "shown once");
});

test("passId mismatch: not ours (fromExtension false), no span record or line", async () => {
	daemon = await startDaemon();
	const { pi, ctx } = await setup();
	await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	const entry = compactionEntry({ summary: "someone else's", details: { passId: "other" } });
	pi.handlers.session_compact({ type: "session_compact", compactionEntry: entry, fromExtension: true }, ctx);
	await sleep(5);
	assert.deepEqual(pi.entries, []);
	await waitFor(() => daemon.byMethod("compacted").length === 1);
	const c = daemon.byMethod("compacted")[0].params;
	assert.equal(c.fromExtension, false);
	assert.equal(c.passId, null);
});

test("frames split on \\n only: U+2028/U+2029 inside a string parse fine, replies may arrive in pieces", async () => {
	const weird = "line\u2028sep\u2029para — ünïcödé 🚀";
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "compact") return dflt(req);
		const r = okCompactResult();
		r.compaction.summary = weird;
		const bytes = Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id: req.id, result: r })}\n`);
		const rocket = bytes.indexOf(Buffer.from("🚀"));
		// split inside the 4-byte emoji and again right after the newline-free U+2028
		return { chunks: [bytes.subarray(0, rocket + 2), bytes.subarray(rocket + 2, rocket + 3), bytes.subarray(rocket + 3)] };
	});
	const { pi, ctx } = await setup();
	const ret = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	assert.equal(ret.compaction.summary, weird);
});

test("a daemon request on the pass connection is answered on it (PASS-22); the pass still completes", async () => {
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "compact") return dflt(req);
		const ask = { jsonrpc: "2.0", id: "d1", method: "model.complete", params: {} };
		const other = { jsonrpc: "2.0", id: "d2", method: "no.such.method", params: {} };
		// written 10 ms apart, so the shim answers both while the call is still open
		return { chunks: [ask, other, dflt(req)].map((m) => Buffer.from(`${JSON.stringify(m)}\n`)) };
	});
	const { pi, ctx } = await setup();
	assert.ok((await pi.handlers.session_before_compact(beforeCompactEvent(), ctx)).compaction);
	const answered = daemon.requests.filter((r) => typeof r.id === "string" && r.id.startsWith("d"));
	assert.deepEqual(answered.find((r) => r.id === "d1").error.data, { kind: "fatal", code: "bad-params" });
	assert.equal(answered.find((r) => r.id === "d2").error.code, -32601);
});

test("two concurrent passes (pi's post-turn/pre-prompt race): the entry is matched to its own pass", async () => {
	let n = 0;
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "compact") return dflt(req);
		const r = okCompactResult(`p-${++n}`);
		r.span = n;
		r.after.spanRecord.span = n;
		// answer the first request last
		return { chunks: [Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id: req.id, result: r })}\n`)], delay: n === 1 ? 60 : 0 };
	});
	const { pi, ctx } = await setup();
	const a = pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	const b = pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
	const [ra, rb] = await Promise.all([a, b]);
	assert.equal(ra.compaction.details.passId, "p-1");
	assert.equal(rb.compaction.details.passId, "p-2");
	const entry = compactionEntry({ summary: ra.compaction.summary, details: ra.compaction.details });
	pi.handlers.session_compact({ type: "session_compact", compactionEntry: entry, fromExtension: true }, ctx);
	assert.equal(pi.entries[0].data.passId, "p-1");
	await waitFor(() => daemon.byMethod("compacted").length === 1);
	assert.deepEqual([daemon.byMethod("compacted")[0].params.passId, daemon.byMethod("compacted")[0].params.span], ["p-1", 1]);
});

// longhaul_remember, longhaul_recall and the kept-window strip, shim side (TOOLS-1..10), against a fake pi host and a
// fake daemon on a real Unix socket. The daemon's decisions are faked here; tests/tools covers the real ones.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, test } from "node:test";
import { deadSocket, fakeCtx, fakePi, loadShim, sleep, startDaemon } from "../testing/fakes.mjs";

const factory = await loadShim();
let daemon;
const sent = []; // every tools request any test sent, for the pydantic check at the end

beforeEach(() => {
	delete process.env.LONGHAUL_SOCKET;
});
afterEach(async () => {
	if (daemon) sent.push(...daemon.requests.filter((r) => ["remember", "recall", "strip"].includes(r.method)));
	await daemon?.stop();
	daemon = undefined;
});

/** fakePi plus registerTool (the shared fake has none, so index.ts skips the tools there). */
async function setup({ appendEntry, branch = [] } = {}) {
	const pi = fakePi({ appendEntry });
	pi.tools = {};
	pi.registerTool = (def) => {
		pi.tools[def.name] = def;
	};
	await factory(pi);
	const ctx = fakeCtx();
	ctx.sessionManager.getBranch = () => branch;
	return { pi, ctx };
}

const reply = (req, result) => ({ jsonrpc: "2.0", id: req.id, result });
const text = (res) => res.content.map((c) => c.text).join("");
const isErrorFor = (pi, name, res) => pi.handlers.tool_result({ type: "tool_result", toolName: name, details: res.details, isError: false });

test("loading registers both tools with typebox schemas and the context handler, connecting nothing", async () => {
	daemon = await startDaemon();
	const { pi } = await setup();
	await sleep(30);
	assert.equal(daemon.connections, 0);
	assert.deepEqual(Object.keys(pi.tools).sort(), ["longhaul_recall", "longhaul_remember"]);
	const remember = pi.tools.longhaul_remember.parameters;
	assert.equal(remember.type, "object");
	assert.deepEqual(remember.required, ["text"]); // TOOLS-1: text required, kind optional
	assert.deepEqual(remember.properties.kind.anyOf.map((s) => s.const), ["decision", "dead-end", "value", "note"]);
	const recall = pi.tools.longhaul_recall.parameters; // TOOLS-5: ref and query, both optional
	assert.deepEqual(Object.keys(recall.properties).sort(), ["query", "ref"]);
	assert.ok(!recall.required || recall.required.length === 0);
	assert.ok(pi.handlers.context && pi.handlers.tool_result);
});

test("remember appends exactly the entry the daemon returns and answers with its short text (TOOLS-2)", async () => {
	const data = { stateFormat: 1, kind: "remember", text: "use pnpm", noteKind: "decision" };
	daemon = await startDaemon((req, dflt) =>
		req.method === "remember" ? reply(req, { ok: true, text: "Remembered.", customType: "compaction-state.event", data }) : dflt(req),
	);
	const { pi, ctx } = await setup();
	const res = await pi.tools.longhaul_remember.execute("call-1", { text: "use pnpm", kind: "decision" }, undefined, undefined, ctx);
	assert.equal(text(res), "Remembered.");
	assert.deepEqual(pi.entries, [{ customType: "compaction-state.event", data }]);
	assert.equal(isErrorFor(pi, "longhaul_remember", res), undefined);
	const req = daemon.byMethod("remember")[0];
	assert.equal(req.params.text, "use pnpm");
	assert.equal(req.params.kind, "decision");
	assert.equal(req.params.session.sessionId, "0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000");
});

test("a refused note is an error result with the daemon's words and appends nothing (TOOLS-1)", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "remember" ? reply(req, { ok: false, text: "longhaul_remember: the note is empty. Nothing was remembered.", customType: null, data: null }) : dflt(req),
	);
	const { pi, ctx } = await setup();
	const res = await pi.tools.longhaul_remember.execute("c", { text: " " }, undefined, undefined, ctx);
	assert.match(text(res), /the note is empty/);
	assert.deepEqual(pi.entries, []);
	assert.deepEqual(isErrorFor(pi, "longhaul_remember", res), { isError: true });
	assert.equal(daemon.byMethod("remember")[0].params.kind, null);
});

test("daemon unreachable: both tools return an error result, never throw (TOOLS-8)", async () => {
	deadSocket();
	const { pi, ctx } = await setup();
	const r1 = await pi.tools.longhaul_remember.execute("c", { text: "x" }, undefined, undefined, ctx);
	assert.match(text(r1), /^longhaul_remember: the Longhaul daemon is not running .*Nothing was remembered\.$/);
	assert.deepEqual(isErrorFor(pi, "longhaul_remember", r1), { isError: true });
	assert.deepEqual(pi.entries, []);
	const r2 = await pi.tools.longhaul_recall.execute("c", { ref: "span:1" }, undefined, undefined, ctx);
	assert.match(text(r2), /^longhaul_recall: the Longhaul daemon is not running/);
	assert.deepEqual(isErrorFor(pi, "longhaul_recall", r2), { isError: true });
	// other tools' results are none of our business
	assert.equal(pi.handlers.tool_result({ toolName: "bash", details: { longhaulError: true } }), undefined);
});

test("malformed replies, JSON-RPC errors and a failing appendEntry are error results too", async () => {
	let mode = "junk";
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "remember") return dflt(req);
		if (mode === "junk") return reply(req, { ok: "yes" });
		if (mode === "rpc") return { jsonrpc: "2.0", id: req.id, error: { code: -32602, message: "Invalid params" } };
		return reply(req, { ok: true, text: "Remembered.", customType: "compaction-state.event", data: { kind: "remember" } });
	});
	const { pi, ctx } = await setup({
		appendEntry: () => {
			throw new Error("This extension ctx is stale");
		},
	});
	const run = () => pi.tools.longhaul_remember.execute("c", { text: "x" }, undefined, undefined, ctx);
	assert.match(text(await run()), /answer the shim does not understand/);
	mode = "rpc";
	assert.match(text(await run()), /refused the call \(-32602: Invalid params\)/);
	mode = "ok";
	const res = await run();
	assert.match(text(res), /could not be written to the session \(This extension ctx is stale\)/);
	assert.deepEqual(isErrorFor(pi, "longhaul_remember", res), { isError: true });
});

test("recall sends the branch, ref and query and returns the daemon's bounded text (TOOLS-5, TOOLS-7)", async () => {
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "recall") return dflt(req);
		if (req.params.ref === "C99") return reply(req, { ok: false, text: "longhaul_recall: C99 is not in the state.", spans: [] });
		return reply(req, { ok: true, text: "Span 1: closed whole\nCommands:\n- C1 `echo hi` exit 0", spans: [1] });
	});
	const branch = [{ type: "message", id: "a1", parentId: null, message: { role: "user", content: "hi", timestamp: 1 } }];
	const { pi, ctx } = await setup({ branch });
	const res = await pi.tools.longhaul_recall.execute("c", { ref: "span:1" }, undefined, undefined, ctx);
	assert.match(text(res), /C1 `echo hi` exit 0/);
	assert.deepEqual(res.details, { spans: [1] });
	assert.equal(isErrorFor(pi, "longhaul_recall", res), undefined);
	const req = daemon.byMethod("recall")[0];
	assert.equal(req.params.branchEntries, null); // the daemon reads the session file from the leaf
	assert.equal(req.params.leafId, "cccc0003");
	assert.equal(req.params.ref, "span:1");
	assert.equal(req.params.query, null);
	const bad = await pi.tools.longhaul_recall.execute("c", { ref: "C99", query: "x" }, undefined, undefined, ctx);
	assert.deepEqual(isErrorFor(pi, "longhaul_recall", bad), { isError: true });
	assert.match(text(bad), /C99 is not in the state/);
});

test("recall sends the branch inline when the daemon refuses the session file (-32004)", async () => {
	daemon = await startDaemon((req, dflt) => {
		if (req.method !== "recall") return dflt(req);
		if (req.params.branchEntries === null) {
			return { jsonrpc: "2.0", id: req.id, error: { code: -32004, message: "Session file refused: missing", data: { reason: "missing" } } };
		}
		return reply(req, { ok: true, text: "Span 1: closed whole", spans: [1] });
	});
	const branch = [{ type: "message", id: "a1", parentId: null, message: { role: "user", content: "hi", timestamp: 1 } }];
	const { pi, ctx } = await setup({ branch });
	const res = await pi.tools.longhaul_recall.execute("c", { ref: "span:1" }, undefined, undefined, ctx);
	assert.match(text(res), /Span 1: closed whole/);
	const [first, second] = daemon.byMethod("recall");
	assert.equal(first.params.branchEntries, null);
	assert.deepEqual(second.params.branchEntries, branch);
});

// ---- kept-window strip --------------------------------------------------------------------------------------------

const user = (t, ts) => ({ role: "user", content: [{ type: "text", text: t }], timestamp: ts });
const thinker = (t, ts) => ({ role: "assistant", content: [{ type: "thinking", thinking: t }, { type: "text", text: "ok" }], timestamp: ts });
const longhaulCompaction = { type: "compaction", id: "c1", parentId: "m2", firstKeptEntryId: "m1", details: { compactor: "longhaul" } };
const branchWith = (compaction) => [
	{ type: "message", id: "m0", parentId: null, message: user("old", 1) },
	{ type: "message", id: "m1", parentId: "m0", message: user("kept", 2) },
	{ type: "message", id: "m2", parentId: "m1", message: thinker("KEPT-THOUGHT", 3) },
	compaction,
	{ type: "message", id: "m3", parentId: "c1", message: user("new", 4) },
];
const contextMessages = () => [{ role: "compactionSummary", summary: "s", timestamp: 0 }, user("kept", 2), thinker("KEPT-THOUGHT", 3), user("new", 4)];

test("strip: asks the daemon with the kept window and applies its answer to the listed messages only (TOOLS-9)", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "strip"
			? reply(req, { cutoff: "c1", strip: [2], strippedBlocks: 1, strippedChars: 12, contextMessages: 4, logged: true })
			: dflt(req),
	);
	const { pi, ctx } = await setup({ branch: branchWith(longhaulCompaction) });
	const messages = contextMessages();
	const out = await pi.handlers.context({ type: "context", messages }, ctx);
	assert.deepEqual(out.messages[2].content, [{ type: "text", text: "ok" }]);
	assert.equal(out.messages[1], messages[1]); // untouched messages are the same objects
	assert.equal(messages[2].content.length, 2, "pi's copy is not mutated");
	const req = daemon.byMethod("strip")[0];
	assert.deepEqual(req.params.branchEntries.map((e) => e.id), ["m1", "m2", "c1", "m3"]); // from the first kept entry
	assert.equal(req.params.messages.length, 4);
});

test("strip: no daemon call without a newest Longhaul compaction or without thinking blocks", async () => {
	daemon = await startDaemon();
	const pi1 = await setup({ branch: branchWith({ ...longhaulCompaction, details: { readFiles: [] } }) }); // pi's own
	assert.equal(await pi1.pi.handlers.context({ type: "context", messages: contextMessages() }, pi1.ctx), undefined);
	const pi2 = await setup({ branch: branchWith(longhaulCompaction) });
	const plain = [user("kept", 2), { role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: 3 }, user("new", 4)];
	assert.equal(await pi2.pi.handlers.context({ type: "context", messages: plain }, pi2.ctx), undefined);
	const pi3 = await setup({ branch: [] });
	assert.equal(await pi3.pi.handlers.context({ type: "context", messages: contextMessages() }, pi3.ctx), undefined);
	assert.equal(daemon.byMethod("strip").length, 0);
});

test("strip: daemon unreachable, erroring or malformed leaves the context unchanged", async () => {
	deadSocket();
	const { pi, ctx } = await setup({ branch: branchWith(longhaulCompaction) });
	assert.equal(await pi.handlers.context({ type: "context", messages: contextMessages() }, ctx), undefined);
	let answer;
	daemon = await startDaemon((req, dflt) => (req.method === "strip" ? answer(req) : dflt(req)));
	for (const a of [
		(req) => ({ jsonrpc: "2.0", id: req.id, error: { code: -32603, message: "Internal error" } }),
		(req) => reply(req, { strip: [99] }),
		(req) => reply(req, { strip: "2" }),
		(req) => reply(req, { cutoff: "c1", strip: [] }),
	]) {
		answer = a;
		assert.equal(await pi.handlers.context({ type: "context", messages: contextMessages() }, ctx), undefined);
	}
	assert.equal(daemon.byMethod("strip").length, 4);
});

const here = fileURLToPath(new URL(".", import.meta.url));
const python = `${here}../../.venv/bin/python`;
const haveProtocol =
	existsSync(python) && spawnSync(python, ["-c", "import longhaul_daemon.protocol"], { cwd: `${here}../..` }).status === 0;

test("every tools request validates against the real pydantic models", { skip: !haveProtocol && "no repo venv" }, () => {
	const methods = new Set(sent.map((r) => r.method));
	assert.deepEqual([...methods].sort(), ["recall", "remember", "strip"]);
	const script = `
import json, sys
from longhaul_daemon import protocol
models = {"remember": "RememberParams", "recall": "RecallParams", "strip": "StripParams"}
bad = []
for line in sys.stdin:
    r = json.loads(line)
    try:
        getattr(protocol, models[r["method"]]).model_validate(r["params"])
    except Exception as e:
        bad.append(f'{r["method"]}: {e}')
print(json.dumps(bad))
`;
	const out = spawnSync(python, ["-c", script], { cwd: `${here}../..`, input: sent.map((r) => JSON.stringify(r)).join("\n"), encoding: "utf8" });
	assert.equal(out.status, 0, out.stderr);
	assert.deepEqual(JSON.parse(out.stdout), []);
});

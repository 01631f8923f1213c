// Every request the shim sends must validate against longhaul_daemon/protocol.py (params models forbid unknown
// top-level fields). Checked twice: against hand-coded key sets (always), and against the real pydantic models when
// the repo's Python venv is there (skipped otherwise, so the Node suite stands alone).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import {
	beforeCompactEvent,
	compactionEntry,
	fakeCtx,
	fakePi,
	loadShim,
	sleep,
	startDaemon,
	waitFor,
} from "../testing/fakes.mjs";

const factory = await loadShim();

const ALLOWED = {
	session: ["cwd", "sessionId", "sessionFile", "agentDir", "piVersion", "model", "thinkingLevel", "env"],
	model: ["provider", "id", "api", "baseUrl", "reasoning", "contextWindow", "maxTokens", "compat", "thinkingLevelMap"],
	env: ["PI_COMPACTOR", "PI_COMPACT_STATE_DEBUG", "PI_COMPACT_STATE_DEBUG_EXCERPTS", "PI_COMPACT_STATE_DEBUG_STACK"],
	hello: ["session", "reason"],
	compact: ["session", "reason", "customInstructions", "preparation", "leafId", "branchEntries", "sessionFileRefused", "credentials", "summarizer"],
	route: ["session"],
	preparation: ["firstKeptEntryId", "messagesToSummarize", "turnPrefixMessages", "isSplitTurn", "tokensBefore", "previousSummary", "fileOps"],
	fileOps: ["read", "written", "edited"],
	compacted: ["session", "compactionEntryId", "fromExtension", "passId", "span", "reason", "summaryChars", "tokensBefore"],
	compact_failed: ["session", "reason", "passId", "span"],
	incident: ["session", "kind", "reason", "span", "passId", "errorClass", "error"],
};
const MODELS = { hello: "HelloParams", route: "RouteParams", compact: "CompactParams", compacted: "CompactedParams", compact_failed: "CompactFailedParams", incident: "IncidentParams" };

function assertKeys(obj, allowed, where) {
	for (const k of Object.keys(obj)) assert.ok(allowed.includes(k), `${where}: unexpected field ${k}`);
}

/** Drive every path that sends something and return all requests the daemon saw. */
async function collectRequests() {
	let mode = "ok";
	const daemon = await startDaemon((req, dflt) => {
		if (req.method !== "compact") return dflt(req);
		if (mode === "fallback") return { jsonrpc: "2.0", id: req.id, result: { passId: "p-2", span: 2, fallback: "diff-failed" } };
		if (mode === "hang") return undefined;
		return dflt(req);
	});
	try {
		process.env.PI_COMPACT_STATE_DEBUG_EXCERPTS = "1";
		let threw = false;
		const pi = fakePi({
			appendEntry: () => {
				if (threw) throw new Error("ctx is stale");
			},
		});
		await factory(pi);
		const ctx = fakeCtx();
		pi.handlers.session_start({ type: "session_start", reason: "startup" }, ctx);
		// success + compacted
		const res = await pi.handlers.session_before_compact(beforeCompactEvent({ customInstructions: "x" }), ctx);
		pi.handlers.session_compact(
			{ type: "session_compact", compactionEntry: compactionEntry({ summary: res.compaction.summary, details: res.compaction.details }), fromExtension: true },
			ctx,
		);
		await sleep(5);
		// daemon fallback + pi's compaction
		mode = "fallback";
		await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
		pi.handlers.session_compact({ type: "session_compact", compactionEntry: compactionEntry({ id: "eeee0005", summary: "pi" }), fromExtension: false }, ctx);
		// append failures
		mode = "ok";
		threw = true;
		const res2 = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
		pi.handlers.session_compact(
			{ type: "session_compact", compactionEntry: compactionEntry({ id: "ffff0006", summary: res2.compaction.summary, details: res2.compaction.details }), fromExtension: true },
			ctx,
		);
		await sleep(5);
		// abort
		mode = "hang";
		const ac = new AbortController();
		const p = pi.handlers.session_before_compact(beforeCompactEvent({ signal: ac.signal }), ctx);
		await waitFor(() => daemon.byMethod("compact").length === 4);
		ac.abort();
		await p;
		// timeout
		process.env.LONGHAUL_SHIM_DEADLINE_MS = "50";
		await pi.handlers.session_before_compact(beforeCompactEvent(), fakeCtx({ model: undefined }));
		// stand-down
		process.env.PI_COMPACTOR = "pi";
		await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
		pi.handlers.session_compact({ type: "session_compact", compactionEntry: compactionEntry({ id: "aaaa0007", summary: "pi2" }), fromExtension: false }, ctx);
		await waitFor(
			() => daemon.byMethod("compacted").length === 4 && daemon.byMethod("incident").length === 6 && daemon.byMethod("hello").length === 1,
		);
		return daemon.requests.filter((r) => typeof r.method === "string");
	} finally {
		delete process.env.PI_COMPACT_STATE_DEBUG_EXCERPTS;
		delete process.env.LONGHAUL_SHIM_DEADLINE_MS;
		delete process.env.PI_COMPACTOR;
		await daemon.stop();
	}
}

const requests = await collectRequests();

test("the flow exercised every method the shim sends", () => {
	const methods = new Set(requests.map((r) => r.method));
	assert.deepEqual([...methods].sort(), ["compact", "compacted", "hello", "incident", "route"]);
	const kinds = new Set(requests.filter((r) => r.method === "incident").map((r) => r.params.kind));
	assert.deepEqual([...kinds].sort(), ["aborted", "compaction-line-failed", "fallback", "span-record-failed"]);
});

test("every request is JSON-RPC 2.0 with by-name params and only the allowed fields", () => {
	for (const r of requests) {
		assertKeys(r, ["jsonrpc", "id", "method", "params"], "envelope");
		assert.equal(r.jsonrpc, "2.0");
		assert.equal(typeof r.id, "number");
		assert.ok(r.params && typeof r.params === "object" && !Array.isArray(r.params));
		assertKeys(r.params, ALLOWED[r.method], r.method);
		const s = r.params.session;
		assertKeys(s, ALLOWED.session, `${r.method}.session`);
		assertKeys(s.env, ALLOWED.env, `${r.method}.session.env`);
		if (s.model) assertKeys(s.model, ALLOWED.model, `${r.method}.session.model`);
		for (const k of ["cwd", "sessionId", "agentDir", "piVersion"]) assert.ok(typeof s[k] === "string" && s[k].length > 0, k);
		if (r.method === "compact") {
			assertKeys(r.params.preparation, ALLOWED.preparation, "preparation");
			assertKeys(r.params.preparation.fileOps, ALLOWED.fileOps, "fileOps");
			for (const v of Object.values(r.params.preparation.fileOps)) assert.ok(Array.isArray(v));
		}
		if (r.method === "incident" && r.params.error != null) assert.ok(r.params.error.length <= 200);
	}
});

const here = fileURLToPath(new URL(".", import.meta.url));
const python = `${here}../../.venv/bin/python`;
const haveProtocol =
	existsSync(python) && spawnSync(python, ["-c", "import longhaul_daemon.protocol"], { cwd: `${here}../..` }).status === 0;

test("every request validates against the real pydantic models", { skip: !haveProtocol && "no repo venv with longhaul_daemon" }, () => {
	const script = `
import json, sys
from longhaul_daemon import protocol
models = ${JSON.stringify(MODELS)}
bad = []
for line in sys.stdin:
    r = json.loads(line)
    try:
        getattr(protocol, models[r["method"]]).model_validate(r["params"])
    except Exception as e:
        bad.append(f'{r["method"]}: {e}')
print(json.dumps(bad))
`;
	const input = requests.map((r) => JSON.stringify(r)).join("\n");
	const out = spawnSync(python, ["-c", script], { cwd: `${here}../..`, input, encoding: "utf8" });
	assert.equal(out.status, 0, out.stderr);
	assert.deepEqual(JSON.parse(out.stdout), []);
});

// Test doubles for the pi host (the edge here; real pi is covered by the Python e2e suite) and a fake daemon:
// a real net.Server on a Unix socket that records requests and answers per test.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createJiti } from "jiti";

const jiti = createJiti(import.meta.url);

/** Load index.ts the way pi does (jiti) and return its default export. */
export async function loadShim() {
	const mod = await jiti.import(new URL("../index.ts", import.meta.url).pathname);
	return mod.default;
}

export function fakePi({ appendEntry } = {}) {
	const pi = {
		handlers: {},
		entries: [],
		on(name, fn) {
			pi.handlers[name] = fn;
		},
		appendEntry(customType, data) {
			if (appendEntry) appendEntry(customType, data);
			pi.entries.push({ customType, data });
		},
		getThinkingLevel: () => "medium",
	};
	return pi;
}

export function fakeCtx(overrides = {}) {
	const notices = [];
	return {
		notices,
		cwd: "/tmp/proj",
		hasUI: true, // as in RPC and interactive mode, where notices are UI calls
		sessionManager: {
			getCwd: () => "/tmp/proj",
			getSessionId: () => "0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
			getSessionFile: () => "/tmp/agent/sessions/--tmp-proj--/s.jsonl",
			getLeafId: () => "cccc0003",
			getBranch: () => [],
			getEntries: () => [],
		},
		model: {
			provider: "fake",
			id: "fake-model",
			name: "Fake",
			api: "openai-completions",
			baseUrl: "http://127.0.0.1:9/v1",
			reasoning: false,
			input: ["text"],
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			contextWindow: 32000,
			maxTokens: 4096,
		},
		modelRegistry: { getApiKeyAndHeaders: async () => ({ ok: true, apiKey: "k" }) },
		ui: { notify: (message, level) => notices.push({ message, level }) },
		...overrides,
	};
}

export function beforeCompactEvent({ signal = new AbortController().signal, customInstructions } = {}) {
	const user = { role: "user", content: [{ type: "text", text: "hello" }], timestamp: 1 };
	return {
		type: "session_before_compact",
		preparation: {
			firstKeptEntryId: "cccc0003",
			messagesToSummarize: [user],
			turnPrefixMessages: [],
			isSplitTurn: false,
			tokensBefore: 1234,
			previousSummary: undefined,
			fileOps: { read: new Set(["z.ts", "a.ts"]), written: new Set(["m.ts"]), edited: new Set() },
			settings: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 },
		},
		branchEntries: [
			{ type: "message", id: "cccc0001", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", message: user },
		],
		customInstructions,
		signal,
	};
}

export function compactionEntry({ id = "dddd0004", summary = "LONGHAUL span 1 pass p-1", details } = {}) {
	return {
		type: "compaction",
		id,
		parentId: "cccc0003",
		timestamp: "2026-01-01T00:00:01.000Z",
		summary,
		firstKeptEntryId: "cccc0003",
		tokensBefore: 1234,
		details,
		fromHook: details !== undefined,
	};
}

export const okCompactResult = (passId = "p-1") => ({
	passId,
	span: 1,
	compaction: {
		summary: `LONGHAUL span 1 pass ${passId}`,
		firstKeptEntryId: "cccc0003",
		tokensBefore: 1234,
		details: { stateFormat: 1, compactor: "longhaul", passId, span: 1, state: { x: 1 } },
	},
	after: {
		spanRecord: { v: 1, span: 1, passId, closedAs: "whole" },
		line: { v: 1, span: 1, calls: 2, tokens: 345 },
	},
	notice: null,
	fallback: null,
});

/**
 * A fake daemon. `answer(req)` returns a full JSON-RPC response object, a string (sent raw), or undefined (no answer).
 * Default: hello → deadline, compact → okCompactResult, everything else → {ok: true}.
 */
export async function startDaemon(answer) {
	const dir = mkdtempSync(join(tmpdir(), "lh-shim-"));
	const path = join(dir, "daemon.sock");
	const d = { path, requests: [], connections: 0, closes: 0, answer };
	const defaultAnswer = (req) => {
		if (req.method === "hello")
			return { jsonrpc: "2.0", id: req.id, result: { daemonVersion: "0", protocolVersion: 1, compactor: "longhaul", deadlineMs: 300000 } };
		if (req.method === "compact") return { jsonrpc: "2.0", id: req.id, result: okCompactResult() };
		return { jsonrpc: "2.0", id: req.id, result: { ok: true } };
	};
	d.server = createServer((sock) => {
		d.connections++;
		let buf = "";
		sock.setEncoding("utf8");
		sock.on("data", (chunk) => {
			buf += chunk;
			let nl;
			while ((nl = buf.indexOf("\n")) >= 0) {
				const req = JSON.parse(buf.slice(0, nl));
				buf = buf.slice(nl + 1);
				d.requests.push(req);
				if (typeof req.method !== "string") continue; // a response from the shim (to a daemon request)
				const reply = (d.answer ?? defaultAnswer)(req, defaultAnswer);
				if (reply === undefined) continue;
				if (Array.isArray(reply?.chunks)) {
					// raw byte pieces, written with gaps so the shim sees them as separate data events
					reply.chunks.forEach((c, i) => setTimeout(() => sock.write(c), (reply.delay ?? 0) + 10 * i));
					continue;
				}
				sock.write(typeof reply === "string" ? reply : `${JSON.stringify(reply)}\n`);
			}
		});
		sock.on("error", () => {});
		sock.on("close", () => d.closes++);
	});
	await new Promise((r) => d.server.listen(path, r));
	process.env.LONGHAUL_SOCKET = path;
	d.byMethod = (m) => d.requests.filter((r) => r.method === m);
	d.stop = async () => {
		await new Promise((r) => d.server.close(r));
		rmSync(dir, { recursive: true, force: true });
	};
	return d;
}

/** A socket path where nothing listens. */
export function deadSocket() {
	const dir = mkdtempSync(join(tmpdir(), "lh-shim-dead-"));
	process.env.LONGHAUL_SOCKET = join(dir, "daemon.sock");
	return process.env.LONGHAUL_SOCKET;
}

export async function waitFor(pred, ms = 2000) {
	const end = Date.now() + ms;
	while (!pred()) {
		if (Date.now() > end) throw new Error("waitFor: condition not met");
		await new Promise((r) => setTimeout(r, 5));
	}
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// PASS-22, CONFIG-8, FAIL-9: the shim resolves the session model and the configured summarizer with pi's registry,
// sends both with `compact`, turns every registry failure into a problem code, and never lets a key out elsewhere.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, test } from "node:test";
import { createJiti } from "jiti";
import { beforeCompactEvent, fakeCtx, fakePi, loadShim, startDaemon } from "../testing/fakes.mjs";

const jiti = createJiti(import.meta.url);
const { resolveModels, splitSpec, summarizerRoute, summarizerSpec } = await jiti.import(
	new URL("../lib/models.ts", import.meta.url).pathname,
);
const factory = await loadShim();

const SESSION_KEY = "sk-session-4e1f0a9b7c";
const SUMMARIZER_KEY = "sk-summarizer-8d2c6b1e3f";
const HEADER_SECRET = "hdr-secret-5a7e9c0d";

const sessionModel = fakeCtx().model;
const tiny = {
	...sessionModel,
	provider: "local",
	id: "org/tiny",
	api: "anthropic-messages",
	baseUrl: "http://127.0.0.1:11",
	compat: { supportsEagerToolInputStreaming: false },
	thinkingLevelMap: { off: null, xhigh: "max" },
};

/** A registry double with pi's two methods; `auth` answers getApiKeyAndHeaders per model id. */
function fakeRegistry({ models = [sessionModel, tiny], auth, find } = {}) {
	const calls = [];
	return {
		calls,
		find:
			find ??
			((provider, id) => {
				calls.push(["find", provider, id]);
				return models.find((m) => m.provider === provider && m.id === id);
			}),
		getApiKeyAndHeaders: async (model) => {
			calls.push(["auth", model.id]);
			if (auth) return auth(model);
			return model.id === tiny.id
				? { ok: true, apiKey: SUMMARIZER_KEY, headers: { "x-team": HEADER_SECRET } }
				: { ok: true, apiKey: SESSION_KEY };
		},
	};
}

const access = (registry, model = sessionModel) => ({ registry, model });

test("a spec splits at its first slash; a spec without both halves is refused", () => {
	assert.deepEqual(splitSpec("local/org/tiny"), { provider: "local", id: "org/tiny" });
	for (const bad of ["tiny", "/tiny", "local/", ""]) assert.equal(splitSpec(bad), null, bad);
});

test("a known summarizer comes back with its facts and pi's credentials for it", async () => {
	const registry = fakeRegistry();
	const route = await summarizerRoute(access(registry), "local/org/tiny");
	assert.deepEqual(registry.calls, [["find", "local", "org/tiny"], ["auth", "org/tiny"]]);
	assert.equal(route.problem, null);
	assert.equal(route.spec, "local/org/tiny");
	assert.deepEqual(route.credentials, { apiKey: SUMMARIZER_KEY, headers: { "x-team": HEADER_SECRET }, oauth: false });
	assert.equal(route.model.api, "anthropic-messages");
	assert.equal(route.model.baseUrl, "http://127.0.0.1:11");
	assert.deepEqual(route.model.compat, { supportsEagerToolInputStreaming: false });
	assert.deepEqual(route.model.thinkingLevelMap, { off: null, xhigh: "max" });
});

test("FAIL-9: unknown model, no auth and a failing registry each name their problem and never throw", async () => {
	const cases = [
		["local/missing", fakeRegistry(), "unknown-model"],
		["no-slash", fakeRegistry(), "unknown-model"],
		["local/org/tiny", fakeRegistry({ auth: () => ({ ok: false, error: `No API key found for "local"` }) }), "no-credentials"],
		["local/org/tiny", fakeRegistry({ auth: () => ({ ok: true }) }), "no-credentials"],
		["local/org/tiny", fakeRegistry({ auth: () => ({ ok: true, apiKey: "", headers: {} }) }), "no-credentials"],
		["local/org/tiny", fakeRegistry({ find: () => { throw new Error(`boom ${SUMMARIZER_KEY}`); } }), "resolve-error"],
		["local/org/tiny", fakeRegistry({ auth: () => { throw new Error(`boom ${SUMMARIZER_KEY}`); } }), "resolve-error"],
		["local/org/tiny", fakeRegistry({ auth: () => Promise.reject(new Error("command failed")) }), "resolve-error"],
		["local/org/tiny", fakeRegistry({ auth: () => new Promise(() => {}) }), "resolve-error"],
		["local/org/tiny", undefined, "resolve-error"],
	];
	for (const [spec, registry, problem] of cases) {
		const route = await summarizerRoute(access(registry), spec, 50);
		assert.deepEqual(route, { spec, model: null, credentials: null, problem }, `${spec} → ${problem}`);
	}
});

test("the session model's credentials are resolved; without auth or a model they are null", async () => {
	const both = await resolveModels(access(fakeRegistry()), "local/org/tiny");
	assert.deepEqual(both.credentials, { apiKey: SESSION_KEY, headers: {}, oauth: false });
	assert.equal(both.summarizer.problem, null);
	const none = await resolveModels(access(fakeRegistry({ auth: () => ({ ok: false, error: "x" }) })), null);
	assert.deepEqual(none, { credentials: null, summarizer: null });
	assert.deepEqual(await resolveModels({ registry: fakeRegistry(), model: undefined }, null), { credentials: null, summarizer: null });
});

let daemon;
beforeEach(() => {
	delete process.env.PI_COMPACTOR;
	delete process.env.LONGHAUL_SHIM_DEADLINE_MS;
});
afterEach(async () => {
	await daemon?.stop();
	daemon = undefined;
});

test("an OAuth login pi holds for the provider is marked, so the daemon leaves that credential to pi", async () => {
	const registry = {
		...fakeRegistry(),
		authStorage: { get: (provider) => (provider === sessionModel.provider ? { type: "oauth", access: "x" } : { type: "api_key" }) },
	};
	const both = await resolveModels(access(registry), "local/org/tiny");
	assert.equal(both.credentials.oauth, true);
	assert.equal(both.summarizer.credentials.oauth, false);
	const broken = { ...fakeRegistry(), authStorage: { get: () => { throw new Error("locked"); } } };
	assert.equal((await resolveModels(access(broken), null)).credentials.oauth, false);
});

test("summarizerSpec takes the daemon's answer; an error, junk or silence means no summarizer", async () => {
	const session = { sessionId: "s" };
	let answer = (req) => ({ jsonrpc: "2.0", id: req.id, result: { summarizer: "local/org/tiny" } });
	daemon = await startDaemon((req) => answer(req));
	assert.equal(await summarizerSpec(session), "local/org/tiny");
	assert.deepEqual(daemon.byMethod("route")[0].params, { session });
	answer = (req) => ({ jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "Method not found" } });
	assert.equal(await summarizerSpec(session), null);
	answer = (req) => ({ jsonrpc: "2.0", id: req.id, result: { summarizer: 42 } });
	assert.equal(await summarizerSpec(session), null);
	answer = () => undefined;
	assert.equal(await summarizerSpec(session, undefined, 50), null);
});

/** Run one compaction through the real shim; returns the compact request and everything the shim said. */
async function compactWith(routeReply, registry) {
	await daemon?.stop(); // one fake daemon at a time: a test may compact more than once
	daemon = await startDaemon((req, dflt) => (req.method === "route" ? routeReply(req) : dflt(req)));
	const pi = fakePi();
	await factory(pi);
	const ctx = fakeCtx({ modelRegistry: registry });
	const said = [];
	const saved = {};
	for (const level of ["log", "info", "warn", "error", "debug"]) {
		saved[level] = console[level];
		console[level] = (...args) => said.push(args.map(String).join(" "));
	}
	try {
		const res = await pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
		assert.ok(res?.compaction, "the pass completed");
	} finally {
		Object.assign(console, saved);
	}
	const [compact] = daemon.byMethod("compact");
	const others = daemon.requests.filter((r) => r.method !== "compact");
	return { compact: compact.params, said: [...said, ...ctx.notices.map((n) => n.message)], others };
}

const routeTo = (spec) => (req) => ({ jsonrpc: "2.0", id: req.id, result: { summarizer: spec } });

test("PASS-22: compact carries the session credentials and the resolved summarizer the daemon named", async () => {
	const { compact, said, others } = await compactWith(routeTo("local/org/tiny"), fakeRegistry());
	assert.deepEqual(compact.credentials, { apiKey: SESSION_KEY, headers: {}, oauth: false });
	assert.equal(compact.summarizer.spec, "local/org/tiny");
	assert.deepEqual(compact.summarizer.credentials, { apiKey: SUMMARIZER_KEY, headers: { "x-team": HEADER_SECRET }, oauth: false });
	assert.equal(compact.summarizer.model.id, "org/tiny");
	assert.equal(compact.session.model.compat, null);
	for (const text of [...said, JSON.stringify(others)]) {
		for (const secret of [SESSION_KEY, SUMMARIZER_KEY, HEADER_SECRET]) assert.ok(!text.includes(secret), "a key left the compact request");
	}
});

test("a route the registry cannot resolve is sent as its problem; a failed route call sends none", async () => {
	const unknown = await compactWith(routeTo("local/missing"), fakeRegistry());
	assert.deepEqual(unknown.compact.summarizer, { spec: "local/missing", model: null, credentials: null, problem: "unknown-model" });
	const failing = (req) => ({ jsonrpc: "2.0", id: req.id, error: { code: -32603, message: "Internal error" } });
	const broken = await compactWith(failing, fakeRegistry({ find: () => { throw new Error(SUMMARIZER_KEY); } }));
	assert.equal(broken.compact.summarizer, null);
	assert.deepEqual(broken.compact.credentials, { apiKey: SESSION_KEY, headers: {}, oauth: false });
	const thrown = await compactWith(routeTo("local/org/tiny"), fakeRegistry({ auth: () => { throw new Error(`leak ${SESSION_KEY}`); } }));
	assert.equal(thrown.compact.credentials, null);
	assert.equal(thrown.compact.summarizer.problem, "resolve-error");
	assert.ok(!thrown.said.join("\n").includes(SESSION_KEY));
});

const here = fileURLToPath(new URL(".", import.meta.url));
const python = `${here}../../.venv/bin/python`;
const haveProtocol =
	existsSync(python) && spawnSync(python, ["-c", "import longhaul_daemon.protocol"], { cwd: `${here}../..` }).status === 0;

test("the compact request with both routes validates against CompactParams", { skip: !haveProtocol && "no repo venv" }, async () => {
	const { compact } = await compactWith(routeTo("local/org/tiny"), fakeRegistry());
	const script = `
import json, sys
from longhaul_daemon.protocol import CompactParams
p = CompactParams.model_validate(json.loads(sys.stdin.read()))
print(json.dumps([p.summarizer.model.spec, p.credentials.apiKey is not None, p.summarizer.model.thinkingLevelMap]))
`;
	const out = spawnSync(python, ["-c", script], { cwd: `${here}../..`, input: JSON.stringify(compact), encoding: "utf8" });
	assert.equal(out.status, 0, out.stderr);
	assert.deepEqual(JSON.parse(out.stdout), ["local/org/tiny", true, { off: null, xhigh: "max" }]);
});

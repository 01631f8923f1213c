// PASS-20/PASS-22: the daemon's model.complete requests, answered on the compact call's own socket with pi-ai's
// complete(). A real net.Server plays the daemon (it sends its request mid-call); pi-ai's faux provider is the model.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createJiti } from "jiti";

const jiti = createJiti(import.meta.url);
const rpc = await jiti.import(new URL("../lib/rpc.ts", import.meta.url).pathname);
const { classify, daemonRequestHandler, mergePayload, modelComplete, MODEL_CALL_FAILED } = await jiti.import(
	new URL("../lib/modelcall.ts", import.meta.url).pathname,
);
// The same module instance modelcall.ts imports, so the faux provider lands in the registry complete() reads.
const piAi = await jiti.import("@mariozechner/pi-ai");

const KEY = "sk-shim-secret-key-1234567890";
const ASK = { model: { provider: "faux-prov", id: "faux-1" }, system: "SYS", messages: [{ role: "user", text: "hello" }], maxTokens: 77, reasoning: "off", stream: true };

/** A daemon that, on `compact`, sends `model.complete` first and answers compact with whatever came back. */
async function askingDaemon({ answerCompact = true } = {}) {
	const dir = mkdtempSync(join(tmpdir(), "lh-mc-"));
	const path = join(dir, "d.sock");
	const d = { path, lines: [] };
	d.server = createServer((sock) => {
		let buf = "";
		let compactId;
		sock.setEncoding("utf8");
		sock.on("error", () => {});
		sock.on("data", (chunk) => {
			buf += chunk;
			let nl;
			while ((nl = buf.indexOf("\n")) >= 0) {
				const line = buf.slice(0, nl);
				buf = buf.slice(nl + 1);
				d.lines.push(line);
				const msg = JSON.parse(line);
				if (msg.method === "compact") {
					compactId = msg.id;
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: "d1", method: "model.complete", params: ASK })}\n`);
				} else if (msg.id === "d1" && answerCompact) {
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: compactId, result: { got: msg } })}\n`);
				}
			}
		});
	});
	await new Promise((r) => d.server.listen(path, r));
	d.stop = async () => {
		await new Promise((r) => d.server.close(r));
		rmSync(dir, { recursive: true, force: true });
	};
	return d;
}

test("a daemon request mid-call is handed to onRequest and its result written back on the same socket", async () => {
	const d = await askingDaemon();
	try {
		const seen = [];
		const result = await rpc.call("compact", {}, {
			socketPath: d.path,
			timeoutMs: 5000,
			onRequest: async (method, params, signal) => {
				seen.push({ method, params, aborted: signal.aborted });
				return { text: "T", stopReason: "stop" };
			},
		});
		assert.deepEqual(seen, [{ method: "model.complete", params: ASK, aborted: false }]);
		assert.deepEqual(result.got, { jsonrpc: "2.0", id: "d1", result: { text: "T", stopReason: "stop" } });
	} finally {
		await d.stop();
	}
});

test("errors go back as code and kind only; without onRequest the daemon gets -32601", async () => {
	const cases = [
		[async () => { throw new rpc.ReplyError(MODEL_CALL_FAILED, { kind: "quota", status: 429 }); }, { code: MODEL_CALL_FAILED, message: "request failed", data: { kind: "quota", status: 429 } }],
		[async () => { throw new Error(`leaked ${KEY}`); }, { code: -32603, message: "internal error" }],
		[() => { throw new Error(`sync ${KEY}`); }, { code: -32603, message: "internal error" }],
		[undefined, { code: -32601, message: "method not found" }],
	];
	for (const [onRequest, error] of cases) {
		const d = await askingDaemon();
		try {
			const result = await rpc.call("compact", {}, { socketPath: d.path, timeoutMs: 5000, onRequest });
			assert.deepEqual(result.got.error, error);
			assert.ok(!d.lines.join("\n").includes(KEY));
		} finally {
			await d.stop();
		}
	}
});

test("when the call ends, onRequest's signal aborts and nothing more is written", async () => {
	const d = await askingDaemon({ answerCompact: false });
	try {
		let signalSeen;
		let release;
		const late = new Promise((r) => (release = r));
		await assert.rejects(
			rpc.call("compact", {}, {
				socketPath: d.path,
				timeoutMs: 300,
				onRequest: async (_m, _p, signal) => {
					signalSeen = signal;
					await late;
					return { text: "too late" };
				},
			}),
			rpc.ShimTimeoutError,
		);
		assert.equal(signalSeen.aborted, true);
		release();
		await new Promise((r) => setTimeout(r, 50));
		assert.equal(d.lines.length, 1, "only the compact request reached the daemon");
	} finally {
		await d.stop();
	}
});

function fauxRegistry(faux, auth = { ok: true, apiKey: KEY, headers: { "x-h": "v" } }) {
	return {
		find: (provider, id) => (provider === "faux-prov" ? faux.getModel(id) : undefined),
		getApiKeyAndHeaders: async () => auth,
	};
}

test("model.complete runs pi-ai's complete() with the registry's auth and maps the reply", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-1", provider: "faux-prov", models: [{ id: "faux-1", reasoning: true }] });
	try {
		const calls = [];
		faux.setResponses([
			(context, options) => {
				calls.push({ context, options });
				return piAi.fauxAssistantMessage([piAi.fauxThinking("hmm"), piAi.fauxText("the "), piAi.fauxText("answer")], { stopReason: "length", responseId: "r-9" });
			},
		]);
		const handler = daemonRequestHandler(fauxRegistry(faux));
		const reply = await handler("model.complete", { ...ASK, messages: [{ role: "user", text: "a" }, { role: "assistant", text: "b" }, { role: "user", text: "c" }], reasoning: "low" }, new AbortController().signal);
		assert.equal(reply.text, "the answer");
		assert.equal(reply.stopReason, "length");
		assert.equal(reply.responseId, "r-9");
		assert.deepEqual(Object.keys(reply.usage).sort(), ["cacheRead", "cacheWrite", "input", "output"]);
		const [{ context, options }] = calls;
		assert.equal(context.systemPrompt, "SYS");
		assert.deepEqual(context.messages.map((m) => m.role), ["user", "assistant", "user"]);
		assert.equal(options.apiKey, KEY);
		assert.deepEqual(options.headers, { "x-h": "v" });
		assert.equal(options.maxTokens, 77);
		assert.equal(options.maxRetries, 0);
		assert.equal(options.reasoning, "low");
	} finally {
		faux.unregister();
	}
});

test("model.complete failures become kinds the daemon's retry policy understands", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-2", provider: "faux-prov", models: [{ id: "faux-1" }] });
	try {
		const reg = fauxRegistry(faux);
		const failing = (errorMessage) => faux.setResponses([piAi.fauxAssistantMessage("", { stopReason: "error", errorMessage })]);
		const kindOf = async (registry, params = ASK) => {
			try {
				await modelComplete(registry, params, new AbortController().signal);
			} catch (err) {
				assert.ok(err instanceof rpc.ReplyError, String(err));
				assert.ok(!JSON.stringify(err.data).includes(KEY));
				return err.data;
			}
			assert.fail("no error");
		};
		failing(`429 {"error":{"code":"insufficient_quota","message":"key ${KEY}"}}`);
		assert.deepEqual(await kindOf(reg), { kind: "quota", status: 429, code: "insufficient_quota" });
		failing(`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`);
		assert.deepEqual(await kindOf(reg), { kind: "retryable", status: 529, code: "overloaded_error" });
		failing("400 Bad request: max_tokens too large");
		assert.deepEqual(await kindOf(reg), { kind: "fatal", status: 400 });
		failing("Connection error.");
		assert.deepEqual(await kindOf(reg), { kind: "retryable" });
		assert.deepEqual(await kindOf({ ...reg, find: () => undefined }), { kind: "fatal", code: "unknown-model" });
		assert.deepEqual(await kindOf(fauxRegistry(faux, { ok: false, error: `no key ${KEY}` })), { kind: "fatal", code: "no-credentials" });
		assert.deepEqual(await kindOf({ ...reg, find: () => { throw new Error(KEY); } }), { kind: "fatal", code: "resolve-error" });
		assert.deepEqual(await kindOf(reg, { ...ASK, messages: [] }), { kind: "fatal", code: "bad-params" });
		assert.deepEqual(await kindOf(reg, { ...ASK, model: { provider: "faux-prov" } }), { kind: "fatal", code: "bad-params" });
	} finally {
		faux.unregister();
	}
});

test("an aborted call is retryable; other methods are not offered", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-3", provider: "faux-prov", models: [{ id: "faux-1" }] });
	try {
		faux.setResponses([piAi.fauxAssistantMessage("slow")]);
		const stop = new AbortController();
		stop.abort();
		await assert.rejects(modelComplete(fauxRegistry(faux), ASK, stop.signal), (err) => err instanceof rpc.ReplyError && err.data.kind === "retryable");
		await assert.rejects(daemonRequestHandler(fauxRegistry(faux))("state.drop", {}, stop.signal), (err) => err instanceof rpc.ReplyError && err.code === -32601);
	} finally {
		faux.unregister();
	}
});

test("classification by status follows the SDKs: 408/409/429/5xx retry, other 4xx do not", () => {
	for (const [message, kind, status] of [
		["408 timeout", "retryable", 408],
		["409 conflict", "retryable", 409],
		["429 Rate limit reached", "retryable", 429],
		["500 oops", "retryable", 500],
		["Request failed with status code 503", "retryable", 503],
		['{"error":{"code":500,"message":"x","status":"INTERNAL"}}', "retryable", 500],
		["401 Incorrect API key provided", "fatal", 401],
		["404 model not found", "fatal", 404],
		["ThrottlingException: Too many requests", "retryable", undefined],
		["No API provider registered for api: x", "fatal", undefined],
	]) {
		const data = classify(message).data;
		assert.equal(data.kind, kind, message);
		assert.equal(data.status, status, message);
	}
});

test("TURNS-7: tools, earlier calls and their results reach pi-ai; the reply's calls come back with toolsCarried", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-4", provider: "faux-prov", models: [{ id: "faux-1" }] });
	try {
		const seen = [];
		faux.setResponses([
			(context) => {
				seen.push(context);
				return piAi.fauxAssistantMessage([piAi.fauxToolCall("show", { ref: "C4" }, { id: "call_9" })], { stopReason: "toolUse" });
			},
		]);
		const show = { name: "show", description: "Show one id.", parameters: { type: "object", properties: { ref: { type: "string" } }, required: ["ref"], additionalProperties: false } };
		const messages = [
			{ role: "user", text: "Digest" },
			{ role: "assistant", text: "", toolCalls: [{ id: "call_1", name: "show", arguments: { ref: "u3" } }] },
			{ role: "user", text: "", toolResults: [{ id: "call_1", name: "show", text: "u3: never push", isError: false }] },
		];
		const reply = await modelComplete(fauxRegistry(faux), { ...ASK, messages, tools: [show] }, new AbortController().signal);
		assert.deepEqual(reply.toolCalls, [{ id: "call_9", name: "show", arguments: { ref: "C4" } }]);
		assert.equal(reply.toolsCarried, true);
		assert.equal(reply.stopReason, "toolUse");
		const [context] = seen;
		assert.deepEqual(context.tools, [show]);
		assert.deepEqual(context.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
		assert.deepEqual(context.messages[1].content, [{ type: "toolCall", id: "call_1", name: "show", arguments: { ref: "u3" } }]);
		assert.equal(context.messages[1].stopReason, "toolUse");
		assert.equal(context.messages[2].toolCallId, "call_1");
		assert.equal(context.messages[2].toolName, "show");
		assert.deepEqual(context.messages[2].content, [{ type: "text", text: "u3: never push" }]);
		assert.equal(context.messages[2].isError, false);
	} finally {
		faux.unregister();
	}
});

test("a call without tools says nothing about them, and malformed tools or calls are bad params", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-5", provider: "faux-prov", models: [{ id: "faux-1" }] });
	try {
		faux.setResponses([piAi.fauxAssistantMessage("plain")]);
		const reply = await modelComplete(fauxRegistry(faux), ASK, new AbortController().signal);
		assert.equal("toolsCarried" in reply, false);
		assert.equal("toolCalls" in reply, false);
		for (const bad of [
			{ ...ASK, tools: [{ name: "show" }] },
			{ ...ASK, tools: "show" },
			{ ...ASK, messages: [{ role: "assistant", text: "", toolCalls: [{ id: "c", name: "show", arguments: "u1" }] }] },
			{ ...ASK, messages: [{ role: "user", text: "", toolResults: [{ id: "c", name: "show" }] }] },
		]) {
			await assert.rejects(modelComplete(fauxRegistry(faux), bad, new AbortController().signal), (err) => err instanceof rpc.ReplyError && err.data.code === "bad-params");
		}
	} finally {
		faux.unregister();
	}
});

test("the daemon's payload reaches pi-ai's onPayload and is merged one level deep", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-p", provider: "faux-prov", models: [{ id: "faux-1" }] });
	try {
		let onPayload;
		faux.setResponses([
			(_context, options) => {
				onPayload = options.onPayload;
				return piAi.fauxAssistantMessage([piAi.fauxText("{}")]);
			},
		]);
		const payload = { response_format: { type: "json_schema" }, config: { responseSchema: { type: "OBJECT" } } };
		await modelComplete(fauxRegistry(faux), { ...ASK, payload }, new AbortController().signal);
		const merged = await onPayload({ model: "m", config: { maxOutputTokens: 5 }, response_format: "old" });
		assert.deepEqual(merged, {
			model: "m",
			config: { maxOutputTokens: 5, responseSchema: { type: "OBJECT" } },
			response_format: { type: "json_schema" },
		});
		assert.deepEqual(mergePayload("not an object", payload), "not an object");
	} finally {
		faux.unregister();
	}
});

test("a watched call streams its answer as notes, the answer tool's pieces too, and a stop ends it early", async () => {
	const faux = piAi.registerFauxProvider({
		api: "faux-api-w",
		provider: "faux-prov",
		models: [{ id: "faux-1" }],
		tokenSize: { min: 2, max: 2 },
		tokensPerSecond: 400,
	});
	try {
		const long = "word ".repeat(400);
		faux.setResponses([
			() => piAi.fauxAssistantMessage([piAi.fauxToolCall("other", { skip: "me" }), piAi.fauxToolCall("answer", { a: 1 }), piAi.fauxText(long)]),
		]);
		const notes = [];
		const stop = new AbortController();
		const link = {
			stopped: stop.signal,
			notify: (method, params) => {
				notes.push({ method, ...params });
				if (notes.map((n) => n.text).join("").includes("word word")) stop.abort();
			},
		};
		const reply = await modelComplete(fauxRegistry(faux), { ...ASK, watch: true, answerTool: "answer" }, new AbortController().signal, link);
		assert.equal(reply.stoppedEarly, true);
		assert.equal(reply.stopReason, "stop");
		assert.ok(reply.text.length < long.length, "the stop ended pi's stream early");
		const streamed = notes.map((n) => n.text).join("");
		assert.ok(streamed.startsWith('{"a":1}'), streamed.slice(0, 40));
		assert.ok(!streamed.includes("skip"), "another tool's arguments are not the answer");
		assert.ok(notes.every((n) => n.method === "model.delta"));
	} finally {
		faux.unregister();
	}
});

test("an abort that is not the daemon's stop is still a retryable failure", async () => {
	const faux = piAi.registerFauxProvider({ api: "faux-api-a", provider: "faux-prov", models: [{ id: "faux-1" }], tokensPerSecond: 50 });
	try {
		faux.setResponses([() => piAi.fauxAssistantMessage([piAi.fauxText("x ".repeat(200))])]);
		const ended = new AbortController();
		const link = { stopped: new AbortController().signal, notify: () => ended.abort() };
		await assert.rejects(modelComplete(fauxRegistry(faux), { ...ASK, watch: true }, ended.signal, link), (err) => err.data?.kind === "retryable" && err.data?.code === "aborted");
	} finally {
		faux.unregister();
	}
});

test("on the socket: deltas carry the request's id, the daemon's model.stop ends the call, nothing follows the stop", async () => {
	const dir = mkdtempSync(join(tmpdir(), "lh-mw-"));
	const path = join(dir, "d.sock");
	const frames = [];
	const server = createServer((sock) => {
		let buf = "";
		let compactId;
		sock.setEncoding("utf8");
		sock.on("error", () => {});
		sock.on("data", (chunk) => {
			buf += chunk;
			let nl;
			while ((nl = buf.indexOf("\n")) >= 0) {
				const msg = JSON.parse(buf.slice(0, nl));
				buf = buf.slice(nl + 1);
				frames.push(msg);
				if (msg.method === "compact") {
					compactId = msg.id;
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: "d7", method: "model.complete", params: {} })}\n`);
				} else if (msg.method === "model.delta" && frames.filter((f) => f.method === "model.delta").length === 2) {
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", method: "model.stop", params: { id: "d7" } })}\n`);
				} else if (msg.id === "d7") {
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: compactId, result: { got: msg } })}\n`);
				}
			}
		});
	});
	await new Promise((r) => server.listen(path, r));
	try {
		const result = await rpc.call("compact", {}, {
			socketPath: path,
			timeoutMs: 5000,
			onRequest: async (_method, _params, _signal, link) => {
				for (let i = 0; i < 50 && !link.stopped.aborted; i++) {
					link.notify("model.delta", { text: `piece ${i}` });
					await new Promise((r) => setTimeout(r, 5));
				}
				link.notify("model.delta", { text: "after the stop" });
				return { text: "partial", stoppedEarly: true };
			},
		});
		assert.deepEqual(result.got.result, { text: "partial", stoppedEarly: true });
		const deltas = frames.filter((f) => f.method === "model.delta");
		assert.ok(deltas.length >= 2 && deltas.every((d) => d.params.id === "d7" && !("id" in d)));
		assert.ok(!deltas.some((d) => d.params.text === "after the stop"));
	} finally {
		await new Promise((r) => server.close(r));
		rmSync(dir, { recursive: true, force: true });
	}
});

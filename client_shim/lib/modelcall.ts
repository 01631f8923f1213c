/**
 * `model.complete` (PASS-22): one model call the daemon asks pi to make, on every route it cannot prove it would
 * build exactly as pi does (OAuth logins, GitHub Copilot, gateways, providers with their own quirks).
 *
 * pi's registry finds the model and resolves its auth here, so the credential goes out exactly as pi sends it; pi-ai's
 * `streamSimple` makes the call with pi's own provider code. The daemon keeps retries, budgets and traces: this call
 * never retries (`maxRetries: 0`) and reports a failure only as a kind (`retryable`, `quota`, `fatal`) with the HTTP
 * status and an identifier-like code where they can be read, never the error's message text.
 *
 * What the daemon's own client would add for this API comes as `payload` (the output schema as `response_format`,
 * `text.format`, a forced answer tool or Gemini's `responseSchema`, and the tool choice) and is merged into pi-ai's
 * request in its `onPayload` hook. With `watch`, the answer's text goes back as it streams (`model.delta`
 * notifications, pieces coalesced per event-loop turn; an `answerTool`'s arguments count as the answer's text), and a
 * `model.stop` from the daemon ends pi's request: the reply then carries what came, marked `stoppedEarly`.
 *
 * Tools travel both ways (turns mode's read-only `show`): the daemon's tool specs become pi-ai's `context.tools`,
 * an assistant turn's calls become `toolCall` blocks and a user turn's results `toolResult` messages ahead of its
 * text; the reply's calls go back as `toolCalls`, and `toolsCarried: true` tells the daemon this shim carried them.
 */
import { type Api, type AssistantMessage, type AssistantMessageEvent, type Message, type Model, streamSimple, type ThinkingLevel, type Tool } from "@mariozechner/pi-ai";
import { type DaemonLink, ReplyError } from "./rpc.ts";

/** The notification carrying a piece of the answer's text to the daemon. */
export const DELTA_METHOD = "model.delta";

/** JSON-RPC error code of a failed `model.complete`; the kind is in `data`. */
export const MODEL_CALL_FAILED = -32010;

/** The part of pi's model registry this needs (`ctx.modelRegistry`). */
export interface ModelLookup {
	find(provider: string, modelId: string): Model<Api> | undefined;
	getApiKeyAndHeaders(model: Model<Api>): Promise<{ ok: true; apiKey?: string; headers?: Record<string, string> } | { ok: false; error: string }>;
}

/** One call the reply made, as the daemon reads it. */
export interface ReplyToolCall {
	id: string;
	name: string;
	arguments: Record<string, unknown>;
}

/** What the daemon gets back: the reply text, pi's stop reason, usage, the provider's response id, the calls. */
export interface ModelReply {
	text: string;
	stopReason: AssistantMessage["stopReason"];
	usage: { input: number; output: number; cacheRead: number; cacheWrite: number };
	responseId?: string;
	toolCalls?: ReplyToolCall[];
	toolsCarried?: true;
	stoppedEarly?: true;
}

const LEVELS: readonly string[] = ["minimal", "low", "medium", "high", "xhigh"];
const RETRYABLE_TEXT = /overloaded|rate.?limit|timed? ?out|timeout|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|socket hang up|network|connection error|fetch failed|Throttling|ServiceUnavailable/i;
const QUOTA_TEXT = /insufficient_quota|spend.?limit|billing|credit balance|PerDay/i;

function fail(kind: "retryable" | "fatal" | "quota", code?: string, status?: number): ReplyError {
	return new ReplyError(MODEL_CALL_FAILED, { kind, ...(status ? { status } : {}), ...(code ? { code } : {}) });
}

/** The HTTP status an SDK put in its message ("429 …", "status code 503", `"code":500`), if any. */
export function statusIn(message: string): number | undefined {
	const m = /^(\d{3})\b/.exec(message) ?? /\bstatus(?:\s*code)?\W{0,3}(\d{3})\b/i.exec(message) ?? /"code"\s*:\s*(\d{3})\b/.exec(message);
	const status = m ? Number(m[1]) : NaN;
	return status >= 100 && status <= 599 ? status : undefined;
}

/** An identifier-like error code from the message (`"type":"overloaded_error"`, `ThrottlingException`), if any. */
export function codeIn(message: string): string | undefined {
	for (const m of message.matchAll(/"(?:code|type|status)"\s*:\s*"([A-Za-z_]{2,60})"/g)) {
		if (m[1] !== "error") return m[1];
	}
	return /\b([A-Z][A-Za-z]{2,60}Exception)\b/.exec(message)?.[1];
}

/** Classify a failed call the way the daemon's retry policy does: 408/409/429/5xx retryable, quota 429s not. */
export function classify(message: string): ReplyError {
	const status = statusIn(message);
	const code = codeIn(message);
	if (QUOTA_TEXT.test(message) && (status === undefined || status === 429 || status === 402)) return fail("quota", code, status);
	if (status !== undefined) {
		const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
		return fail(retryable ? "retryable" : "fatal", code, status);
	}
	return fail(RETRYABLE_TEXT.test(message) ? "retryable" : "fatal", code);
}

function asText(value: unknown): string | undefined {
	return typeof value === "string" ? value : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `toolCalls` or `toolResults` list of one daemon message: undefined when absent, null when malformed. */
function items(raw: unknown): Record<string, unknown>[] | undefined | null {
	if (raw === undefined) return undefined;
	if (!Array.isArray(raw) || !raw.every(isObject)) return null;
	return raw as Record<string, unknown>[];
}

/** The daemon's messages as pi-ai messages; assistant turns carry the model's identity, as pi-ai expects. */
function piMessages(raw: unknown, model: Model<Api>): Message[] | undefined {
	if (!Array.isArray(raw) || raw.length === 0) return undefined;
	const out: Message[] = [];
	for (const item of raw) {
		const text = asText((item as { text?: unknown } | null)?.text);
		const role = (item as { role?: unknown } | null)?.role;
		const calls = items((item as { toolCalls?: unknown } | null)?.toolCalls);
		const results = items((item as { toolResults?: unknown } | null)?.toolResults);
		if (text === undefined || calls === null || results === null) return undefined;
		const timestamp = Date.now();
		if (role === "user") {
			for (const r of results ?? []) {
				const id = asText(r.id);
				const name = asText(r.name);
				const output = asText(r.text);
				if (id === undefined || name === undefined || output === undefined) return undefined;
				out.push({ role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text: output }], isError: r.isError === true, timestamp });
			}
			if (text || !results?.length) out.push({ role: "user", content: text, timestamp });
		} else if (role === "assistant") {
			const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
			const content: AssistantMessage["content"] = text ? [{ type: "text", text }] : [];
			for (const c of calls ?? []) {
				const id = asText(c.id);
				const name = asText(c.name);
				if (id === undefined || name === undefined || !isObject(c.arguments)) return undefined;
				content.push({ type: "toolCall", id, name, arguments: c.arguments });
			}
			out.push({ role: "assistant", content, api: model.api, provider: model.provider, model: model.id, usage, stopReason: calls?.length ? "toolUse" : "stop", timestamp });
		} else return undefined;
	}
	return out;
}

/** The daemon's tool specs as pi-ai tools (a plain JSON Schema serves as the parameters); null when malformed. */
function piTools(raw: unknown): Tool[] | undefined | null {
	const specs = items(raw);
	if (specs === undefined || specs === null) return specs;
	const out: Tool[] = [];
	for (const spec of specs) {
		const name = asText(spec.name);
		const description = asText(spec.description);
		if (name === undefined || description === undefined || !isObject(spec.parameters)) return null;
		out.push({ name, description, parameters: spec.parameters as unknown as Tool["parameters"] });
	}
	return out;
}

/** Run one `model.complete`; resolves to the reply or rejects with a `ReplyError` (never anything else). */
export async function modelComplete(registry: ModelLookup, params: unknown, signal: AbortSignal, link?: DaemonLink): Promise<ModelReply> {
	const p = (params ?? {}) as Record<string, unknown>;
	const wanted = (p.model ?? {}) as Record<string, unknown>;
	const provider = asText(wanted.provider);
	const modelId = asText(wanted.id);
	if (!provider || !modelId) throw fail("fatal", "bad-params");
	let model: Model<Api> | undefined;
	let auth: Awaited<ReturnType<ModelLookup["getApiKeyAndHeaders"]>>;
	try {
		model = registry.find(provider, modelId);
		if (!model) throw fail("fatal", "unknown-model");
		auth = await registry.getApiKeyAndHeaders(model);
	} catch (err) {
		throw err instanceof ReplyError ? err : fail("fatal", "resolve-error");
	}
	if (!auth.ok) throw fail("fatal", "no-credentials");
	const messages = piMessages(p.messages, model);
	const tools = piTools(p.tools);
	if (!messages || tools === null) throw fail("fatal", "bad-params");
	const maxTokens = typeof p.maxTokens === "number" && p.maxTokens > 0 ? p.maxTokens : undefined;
	const reasoning = typeof p.reasoning === "string" && LEVELS.includes(p.reasoning) ? (p.reasoning as ThinkingLevel) : undefined;

	const payload = isObject(p.payload) ? p.payload : undefined;
	const answerTool = asText(p.answerTool);
	const watch = p.watch === true && link !== undefined ? new DeltaSender(link) : undefined;
	const ended = new AbortController(); // pi-ai's request ends when the compact call ends or the daemon says stop
	const end = () => ended.abort();
	signal.addEventListener("abort", end, { once: true });
	link?.stopped.addEventListener("abort", end, { once: true });
	if (signal.aborted || link?.stopped.aborted) end();

	let message: AssistantMessage;
	try {
		const stream = streamSimple(model, { systemPrompt: asText(p.system), messages, ...(tools?.length ? { tools } : {}) }, {
			apiKey: auth.apiKey,
			headers: auth.headers,
			maxTokens,
			reasoning,
			signal: ended.signal,
			maxRetries: 0, // the daemon retries, with its own budget
			...(payload ? { onPayload: (params: unknown) => mergePayload(params, payload) } : {}),
		});
		for await (const event of stream) watch?.take(event, answerTool);
		message = await stream.result();
	} catch (err) {
		// streamSimple throws only before a stream exists (no provider for this api, no key, a throwing provider).
		throw classify(err instanceof Error ? err.message : String(err));
	} finally {
		watch?.flush();
		signal.removeEventListener("abort", end);
		link?.stopped.removeEventListener("abort", end);
	}
	const stoppedEarly = message.stopReason === "aborted" && link?.stopped.aborted === true && !signal.aborted;
	if (message.stopReason === "aborted" && !stoppedEarly) throw fail("retryable", "aborted");
	if (message.stopReason === "error") throw classify(message.errorMessage ?? "");
	const u = message.usage;
	const toolCalls: ReplyToolCall[] = [];
	for (const block of message.content) {
		if (block.type === "toolCall") toolCalls.push({ id: block.id, name: block.name, arguments: isObject(block.arguments) ? block.arguments : {} });
	}
	return {
		text: message.content.map((block) => (block.type === "text" ? block.text : "")).join(""),
		stopReason: stoppedEarly ? "stop" : message.stopReason,
		usage: { input: u?.input ?? 0, output: u?.output ?? 0, cacheRead: u?.cacheRead ?? 0, cacheWrite: u?.cacheWrite ?? 0 },
		...(message.responseId ? { responseId: message.responseId } : {}),
		...(toolCalls.length ? { toolCalls } : {}),
		...(tools?.length ? { toolsCarried: true as const } : {}),
		...(stoppedEarly ? { stoppedEarly: true as const } : {}),
	};
}

/**
 * The daemon's payload merged into pi-ai's request: an object field is merged one level deep (Gemini's `config`,
 * the Responses API's `text`), anything else replaced. pi-ai sends what this returns.
 */
export function mergePayload(params: unknown, payload: Record<string, unknown>): unknown {
	if (!isObject(params)) return params;
	const out: Record<string, unknown> = { ...params };
	for (const [key, value] of Object.entries(payload)) {
		const current = out[key];
		out[key] = isObject(current) && isObject(value) ? { ...current, ...value } : value;
	}
	return out;
}

/** Sends the answer's text to the daemon as it streams, pieces of one event-loop turn in one notification. */
class DeltaSender {
	private pending = "";
	private scheduled = false;

	constructor(private readonly link: DaemonLink) {}

	take(event: AssistantMessageEvent, answerTool: string | undefined): void {
		if (event.type === "text_delta") this.push(event.delta);
		else if (event.type === "toolcall_delta" && answerTool !== undefined) {
			const block = event.partial.content[event.contentIndex];
			if (block?.type === "toolCall" && block.name === answerTool) this.push(event.delta);
		}
	}

	private push(text: string): void {
		if (!text) return;
		this.pending += text;
		if (this.scheduled) return;
		this.scheduled = true;
		setImmediate(() => this.flush());
	}

	flush(): void {
		this.scheduled = false;
		if (!this.pending) return;
		const text = this.pending;
		this.pending = "";
		this.link.notify(DELTA_METHOD, { text });
	}
}

/** The shim's `onRequest` for a compact call: `model.complete` only, everything else "method not found". */
export function daemonRequestHandler(registry: ModelLookup): (method: string, params: unknown, signal: AbortSignal, link: DaemonLink) => Promise<unknown> {
	return async (method, params, signal, link) => {
		if (method !== "model.complete") throw new ReplyError(-32601, { kind: "fatal", code: "method-not-found" });
		return modelComplete(registry, params, signal, link);
	};
}

/**
 * A one-request JSON-RPC 2.0 client over a Unix socket, NDJSON framed.
 *
 * One call = one connection: the daemon ties a compaction pass to its connection, so destroying the socket is how
 * a pass is cancelled (timeout, abort). Every failure becomes one of the error classes below; nothing else escapes.
 * While a call is open the daemon may send requests of its own on the same socket (`model.complete`, PASS-22);
 * `onRequest` answers them, and its in-flight work is aborted the moment the call ends. While one runs, the handler
 * may send notifications about it (`link.notify`, the request's id added), and the daemon may tell it to wind up
 * early with a `model.stop` notification naming the request (`link.stopped` aborts; the handler still replies).
 */
import { createConnection } from "node:net";

/** The socket could not be reached, or went away before answering. Fallback reason `daemon-unavailable`. */
export class DaemonUnavailableError extends Error {
	override name = "DaemonUnavailableError";
}
/** The shim's own deadline passed. Fallback reason `timeout`. */
export class ShimTimeoutError extends Error {
	override name = "ShimTimeoutError";
}
/** The daemon answered something that is not a JSON-RPC response we understand. Fallback reason `protocol-error`. */
export class ProtocolError extends Error {
	override name = "ProtocolError";
}
/** pi aborted the compaction (event.signal). Not a fallback: the shim cancels the compaction. */
export class AbortedError extends Error {
	override name = "AbortError";
}
/** The daemon answered with a JSON-RPC error object. */
export class RpcError extends Error {
	override name = "RpcError";
	constructor(
		readonly code: number,
		message: string,
		readonly data: unknown = undefined,
	) {
		super(`${code}: ${message}`);
	}
}

/**
 * What `onRequest` rejects with to send a JSON-RPC error back: a fixed code, and data with the failure's kind for
 * the daemon's retry policy. Only these fields go on the wire, never an error's message text (it may quote keys).
 */
export class ReplyError extends Error {
	override name = "ReplyError";
	constructor(
		readonly code: number,
		readonly data: { kind: "retryable" | "fatal" | "quota"; status?: number; code?: string },
	) {
		super(`reply error ${code} (${data.kind})`);
	}
}

/** What a daemon request's handler may do besides replying: notify about the request, and hear it should stop. */
export interface DaemonLink {
	/** Send `{method, params: {...params, id}}` to the daemon, `id` being the request's; dropped once the call ended. */
	notify(method: string, params: Record<string, unknown>): void;
	/** Aborts when the daemon sent `model.stop` for this request: end the work and reply with what there is. */
	stopped: AbortSignal;
}

/** The notification by which the daemon asks a running request of its own to wind up early. */
export const STOP_METHOD = "model.stop";

/** A request from the daemon, answered while the call is open; `signal` aborts when the call ends. */
export type RequestHandler = (method: string, params: unknown, signal: AbortSignal, link: DaemonLink) => Promise<unknown>;

export interface CallOptions {
	socketPath: string;
	timeoutMs: number;
	signal?: AbortSignal;
	/** Answers daemon requests (e.g. `model.complete`) on this call's socket; without it they get -32601. */
	onRequest?: RequestHandler;
}

/** Replies larger than this without a newline are treated as a broken daemon, not buffered forever. */
const MAX_FRAME_CHARS = 256 * 1024 * 1024;

let nextId = 1;

/** Resolve the daemon's socket path the same way the daemon does (architecture.md). */
export function socketPath(env: NodeJS.ProcessEnv = process.env): string {
	if (env.LONGHAUL_SOCKET) return env.LONGHAUL_SOCKET;
	if (env.XDG_RUNTIME_DIR) return `${env.XDG_RUNTIME_DIR}/longhaul/daemon.sock`;
	const uid = typeof process.getuid === "function" ? process.getuid() : "unknown";
	return `/tmp/longhaul-${uid}/daemon.sock`;
}

/** Send one request and wait for its response. Rejects only with the error classes above. */
export function call(method: string, params: object, opts: CallOptions): Promise<unknown> {
	return new Promise((resolve, reject) => {
		const id = nextId++;
		const { signal } = opts;
		let settled = false;
		let partial: string[] = [];
		let partialLen = 0;

		const sock = createConnection(opts.socketPath);
		const timer = setTimeout(
			() => finish(new ShimTimeoutError(`no reply to ${method} within ${opts.timeoutMs} ms`)),
			opts.timeoutMs,
		);
		const onAbort = () => finish(new AbortedError("compaction aborted by pi (event.signal)"));
		const served = new AbortController(); // aborts onRequest work (a model call) once this call ends
		const running = new Map<string | number, AbortController>(); // the daemon's requests in work, by id

		function finish(err: Error | undefined, value?: unknown): void {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			signal?.removeEventListener("abort", onAbort);
			served.abort();
			// destroy(), not end(): the daemon must see the connection go away at once to cancel the pass.
			sock.destroy();
			if (err) reject(err);
			else resolve(value);
		}

		function onLine(line: string): void {
			let msg: unknown;
			try {
				msg = JSON.parse(line);
			} catch {
				return finish(new ProtocolError(`reply to ${method} is not JSON`));
			}
			if (!msg || typeof msg !== "object" || Array.isArray(msg)) {
				return finish(new ProtocolError(`reply to ${method} is not a JSON object`));
			}
			const m = msg as Record<string, unknown>;
			if (typeof m.method === "string") {
				// A request from the daemon (the optional model.complete), or its `model.stop` for one; other
				// notifications are ignored.
				if ("id" in m && !settled) answerDaemon(m.id, m.method, m.params);
				else if (m.method === STOP_METHOD) stopDaemonRequest(m.params);
				return;
			}
			if (m.id !== id && !(m.id === null && m.error)) return; // not ours
			if (m.error && typeof m.error === "object") {
				const e = m.error as Record<string, unknown>;
				const code = typeof e.code === "number" ? e.code : 0;
				return finish(new RpcError(code, typeof e.message === "string" ? e.message : "unknown error", e.data));
			}
			if (!("result" in m)) return finish(new ProtocolError(`reply to ${method} has neither result nor error`));
			finish(undefined, m.result);
		}

		function stopDaemonRequest(params: unknown): void {
			const target = (params as { id?: unknown } | null)?.id;
			if (typeof target === "string" || typeof target === "number") running.get(target)?.abort();
		}

		/** Answer one daemon request on this socket; never throws, and writes nothing once the call has ended. */
		function answerDaemon(requestId: unknown, requestMethod: string, params: unknown): void {
			const stop = new AbortController();
			const key = typeof requestId === "string" || typeof requestId === "number" ? requestId : undefined;
			if (key !== undefined) running.set(key, stop);
			const link: DaemonLink = {
				stopped: stop.signal,
				notify: (method, notice) => {
					if (settled || stop.signal.aborted) return;
					sock.write(`${JSON.stringify({ jsonrpc: "2.0", method, params: { ...notice, id: requestId } })}\n`);
				},
			};
			const reply = (body: object) => {
				if (key !== undefined) running.delete(key);
				if (settled) return;
				let line: string;
				try {
					line = JSON.stringify({ jsonrpc: "2.0", id: requestId, ...body });
				} catch {
					line = JSON.stringify({ jsonrpc: "2.0", id: requestId, error: { code: -32603, message: "internal error" } });
				}
				sock.write(`${line}\n`);
			};
			if (!opts.onRequest) return reply({ error: { code: -32601, message: "method not found" } });
			let pending: Promise<unknown>;
			try {
				pending = opts.onRequest(requestMethod, params, served.signal, link);
			} catch (err) {
				pending = Promise.reject(err);
			}
			pending.then(
				(result) => reply({ result: result ?? null }),
				(err: unknown) =>
					reply({
						error:
							err instanceof ReplyError
								? { code: err.code, message: "request failed", data: err.data }
								: { code: -32603, message: "internal error" },
					}),
			);
		}

		if (signal?.aborted) return onAbort();
		signal?.addEventListener("abort", onAbort, { once: true });

		// setEncoding: a multi-byte character split across chunks is reassembled by the decoder.
		sock.setEncoding("utf8");
		sock.on("connect", () => {
			sock.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
		});
		sock.on("data", (chunk: string) => {
			// Split on "\n" only: U+2028/U+2029 may legally appear raw inside JSON strings (node:readline splits there).
			let start = 0;
			while (!settled) {
				const nl = chunk.indexOf("\n", start);
				if (nl < 0) {
					const rest = chunk.slice(start);
					partial.push(rest);
					partialLen += rest.length;
					if (partialLen > MAX_FRAME_CHARS) finish(new ProtocolError(`reply to ${method} exceeds the frame limit`));
					return;
				}
				const line = partial.join("") + chunk.slice(start, nl);
				partial = [];
				partialLen = 0;
				start = nl + 1;
				if (line.trim()) onLine(line);
			}
		});
		sock.on("error", (err: NodeJS.ErrnoException) => {
			// Node's message already names the syscall, code and path ("connect ENOENT /run/…/daemon.sock").
			finish(new DaemonUnavailableError(err.message || String(err.code ?? err.name)));
		});
		sock.on("close", () => finish(new DaemonUnavailableError(`connection closed before the ${method} reply`)));
	});
}

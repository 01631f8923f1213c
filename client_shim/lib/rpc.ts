/**
 * A one-request JSON-RPC 2.0 client over a Unix socket, NDJSON framed.
 *
 * One call = one connection: the daemon ties a compaction pass to its connection, so destroying the socket is how
 * a pass is cancelled (timeout, abort). Every failure becomes one of the error classes below; nothing else escapes.
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
	) {
		super(`${code}: ${message}`);
	}
}

export interface CallOptions {
	socketPath: string;
	timeoutMs: number;
	signal?: AbortSignal;
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

		function finish(err: Error | undefined, value?: unknown): void {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			signal?.removeEventListener("abort", onAbort);
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
				// A request from the daemon (e.g. the optional model.complete): this shim offers none, so say so
				// instead of leaving the daemon waiting. Notifications (no id) are ignored.
				if ("id" in m && !settled) {
					const reply = { jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } };
					sock.write(`${JSON.stringify(reply)}\n`);
				}
				return;
			}
			if (m.id !== id && !(m.id === null && m.error)) return; // not ours
			if (m.error && typeof m.error === "object") {
				const e = m.error as Record<string, unknown>;
				const code = typeof e.code === "number" ? e.code : 0;
				return finish(new RpcError(code, typeof e.message === "string" ? e.message : "unknown error"));
			}
			if (!("result" in m)) return finish(new ProtocolError(`reply to ${method} has neither result nor error`));
			finish(undefined, m.result);
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

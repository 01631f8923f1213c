/**
 * The one record the shim writes itself: a `fallback` line when the daemon cannot be reached (FAIL-15).
 *
 * The daemon is the record log's writer; only when it is unreachable does the shim append that single line, under
 * the same file rules (LOG-1..LOG-12): the path from the same settings, never through a symlink (`O_NOFOLLOW`, an
 * `lstat`-checked `logs` directory and backup), only into a regular file with one link that this user owns, never
 * blocking on a FIFO (`O_NONBLOCK`), 0600 in 0700, rotation at 5 MiB to one `.1`, one whole line per write. Any
 * failure drops the line; nothing here throws.
 */
import {
	chmodSync,
	closeSync,
	constants,
	fchmodSync,
	fstatSync,
	ftruncateSync,
	lstatSync,
	mkdirSync,
	openSync,
	renameSync,
	type Stats,
	writeSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { cutError, type SessionFacts } from "./serialize.ts";

export const ROTATE_BYTES = 5 * 1024 * 1024; // LOG-9
const OFF_VALUES = new Set(["off", "none", "0", "false", "no", ""]); // LOG-3

/** The log file in effect, or null when logging is off (LOG-1..LOG-3); mirrors longhaul_daemon/log/records.py. */
export function recordLogPath(session: SessionFacts): { path: string; strictDir: boolean } | null {
	const debug = session.env.PI_COMPACT_STATE_DEBUG;
	if (debug === undefined) return { path: join(session.agentDir, "logs", "compaction-state.jsonl"), strictDir: true };
	if (OFF_VALUES.has(debug.trim().toLowerCase())) return null;
	return { path: resolve(session.cwd, debug), strictDir: false };
}

export { cutError }; // LOG-7, defined beside errorText so the two modules import one way only

/** The record exactly as the daemon would write it (LOG-4, LOG-6, LOG-23). */
export function fallbackRecord(
	session: SessionFacts,
	fields: { reason: string; errorClass?: string | null; error?: string | null; passId?: string | null; span?: number | null },
): Record<string, unknown> {
	return {
		v: 1,
		ts: new Date().toISOString(),
		event: "fallback",
		session: {
			cwd: session.cwd,
			sessionId: session.sessionId,
			model: session.model ? `${session.model.provider}/${session.model.id}` : null,
			thinkingLevel: session.thinkingLevel,
		},
		reason: fields.reason,
		passId: fields.passId ?? null,
		span: fields.span ?? null,
		errorClass: fields.errorClass ?? null,
		error: typeof fields.error === "string" ? cutError(fields.error) : null,
	};
}

const myUid = (): number => (typeof process.getuid === "function" ? process.getuid() : -1);

/** The log directory, created 0700 (Longhaul's own `logs`: not a link, ours, narrowed to 0700). Throws when refused. */
function prepareDir(dir: string, strict: boolean): void {
	let st = lstatOrNull(dir);
	if (!st) {
		try {
			// One level only, as the daemon does: pi's agent directory (or the chosen parent) must exist already.
			mkdirSync(dir, { mode: 0o700 });
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
		}
		st = lstatSync(dir);
	}
	if (!strict) return;
	if (!st.isDirectory()) throw new Error("log directory is not a directory (or is a symlink)"); // LOG-10
	if (st.uid !== myUid()) throw new Error("log directory is not ours");
	if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700); // LOG-8
}

function lstatOrNull(path: string): Stats | null {
	try {
		return lstatSync(path);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
		throw err;
	}
}

/** Open for append; refuses links (ELOOP), FIFOs without reader (ENXIO) and anything not a regular file we own. */
function openLog(path: string): number {
	const flags =
		constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
	const fd = openSync(path, flags, 0o600);
	try {
		const st = fstatSync(fd);
		if (!st.isFile()) throw new Error("log path is not a regular file"); // LOG-11
		if (st.uid !== myUid()) throw new Error("log file is not ours");
		if (st.nlink !== 1) throw new Error("log file is hard-linked");
		if ((st.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600); // LOG-8
		return fd;
	} catch (err) {
		closeSync(fd);
		throw err;
	}
}

/** Append one record as one line; true when written whole, false when dropped. Never throws (LOG-12). */
export function appendRecord(session: SessionFacts, record: Record<string, unknown>, limit: number = ROTATE_BYTES): boolean {
	let fd = -1;
	try {
		const where = recordLogPath(session);
		if (!where) return false;
		const { path, strictDir } = where;
		prepareDir(dirname(path), strictDir);
		const data = Buffer.from(`${JSON.stringify(record).replace(/\n/g, " ")}\n`, "utf8");
		fd = openLog(path);
		let size = fstatSync(fd).size;
		if (size > 0 && size + data.length > limit) {
			closeSync(fd);
			fd = -1;
			const backup = join(dirname(path), `${basename(path)}.1`);
			const bst = lstatOrNull(backup);
			if (bst && !bst.isFile()) return false; // LOG-10: never rotate onto a link or a non-file
			renameSync(path, backup);
			fd = openLog(path);
			size = fstatSync(fd).size;
		}
		let done = 0;
		try {
			done = writeSync(fd, data);
		} catch {
			done = -1;
		}
		if (done !== data.length) {
			try {
				ftruncateSync(fd, size); // no torn line stays behind
			} catch {
				// the line is dropped either way
			}
			return false;
		}
		return true;
	} catch {
		return false;
	} finally {
		if (fd >= 0) {
			try {
				closeSync(fd);
			} catch {
				// already dropped or written
			}
		}
	}
}

/**
 * The compaction hooks: hand pi's compaction to the per-user longhaul daemon and write back what it returns.
 *
 * Deliberately dumb: it converts pi's event to JSON, enforces a deadline, and appends the entries the daemon
 * prepared. Whenever the daemon is missing, slow or confused it returns `undefined`, so pi's own compaction runs and
 * the session never breaks. Nothing here connects or throws at load time (a load-time throw makes `pi -p` exit 1).
 * index.ts loads this module only on a pi it supports (lib/support.ts).
 */
import type { CompactionResult, ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { AbortedError, call, DaemonUnavailableError, ProtocolError, RpcError, ShimTimeoutError, socketPath } from "./rpc.ts";
import {
	type BranchMode,
	type CompactResult,
	charCount,
	compactParams,
	errorText,
	parseCompactResult,
	type SessionFacts,
	sessionFacts,
	sessionFileRefusal,
	standsDown,
} from "./serialize.ts";
import { piModels, resolveModels, summarizerSpec } from "./models.ts";
import { daemonRequestHandler } from "./modelcall.ts";
import { Notices } from "./notices.ts";
import { appendRecord, fallbackRecord } from "./recordlog.ts";
import { registerReportCommand } from "./report.ts";
import { registerLonghaulTools } from "./tools.ts";

const DEFAULT_DEADLINE_MS = 300_000; // the daemon's default pass budget, used until a hello reply says otherwise
const DEADLINE_MARGIN_MS = 15_000; // FAIL-14: wait the daemon's budget plus a short margin
const REPORT_TIMEOUT_MS = 5_000; // hello and reports: short, and never awaited by pi

/** What the before-compact hook leaves for session_compact. */
type Ours = { kind: "ours"; startedAt: number; session: SessionFacts; passId: string; span: number; after: CompactResult["after"] };
type Fallback = { kind: "fallback"; startedAt: number; session: SessionFacts; reason: string; passId: string | null; span: number | null };
type Pending = Ours | Fallback;

type IncidentKind = "span-record-failed" | "compaction-line-failed" | "aborted" | "fallback";

/** LONGHAUL_SHIM_DEADLINE_MS overrides the whole wait (tests, slow machines); else the daemon's budget + margin. */
function passDeadlineMs(helloDeadlineMs: number): number {
	const v = Number(process.env.LONGHAUL_SHIM_DEADLINE_MS);
	return Number.isFinite(v) && v > 0 ? v : helloDeadlineMs + DEADLINE_MARGIN_MS;
}

function fallbackReason(err: unknown): string {
	if (err instanceof RpcError) {
		if (err.code === -32002) return "busy"; // PASS-21: a pass for this session is already running
		if (err.code === -32001) return "timeout";
		return "protocol-error";
	}
	if (err instanceof ShimTimeoutError) return "timeout";
	if (err instanceof DaemonUnavailableError) return "daemon-unavailable";
	return "protocol-error";
}

function fallbackNotice(reason: string, err: unknown, timeoutMs: number): string {
	const tail = "pi's own compaction runs instead";
	const why = err ? errorText(err).error : "";
	switch (reason) {
		case "daemon-unavailable":
			return `Longhaul: daemon not running (${why}); ${tail}`;
		case "timeout":
			return err instanceof ShimTimeoutError
				? `Longhaul: daemon did not answer within ${timeoutMs < 10_000 ? `${timeoutMs} ms` : `${Math.round(timeoutMs / 1000)} s`}; ${tail}`
				: `Longhaul: the pass ran out of time (${why}); ${tail}`;
		case "busy":
			return `Longhaul: a pass for this session is already running; ${tail}`;
		case "protocol-error":
			return `Longhaul: daemon protocol error (${why}); ${tail}`;
		default:
			return `Longhaul: the pass fell back (${reason}); ${tail}`;
	}
}

/** Register the hooks, the report command and the tools; `notices` carries every notice to the user. */
export function serve(pi: ExtensionAPI, notices: Notices = new Notices()): void {
	let helloDeadlineMs = DEFAULT_DEADLINE_MS;
	// Hooks that returned and await their session_compact. A list, not one slot: pi 0.73.1 can run two
	// auto-compactions at once (the post-turn check races the next prompt's pre-check in `pi -p`).
	let pending: Pending[] = [];
	let lastSession: SessionFacts | undefined;

	/** Fire-and-forget: a report must never delay pi or throw. */
	const report = (method: string, params: object): void => {
		call(method, params, { socketPath: socketPath(), timeoutMs: REPORT_TIMEOUT_MS }).catch(() => {});
	};
	const incident = (session: SessionFacts, kind: IncidentKind, fields: Record<string, unknown>): void => {
		call("incident", { session, kind, ...fields }, { socketPath: socketPath(), timeoutMs: REPORT_TIMEOUT_MS }).catch((err) => {
			// FAIL-15: with the daemon unreachable, the shim appends that one fallback record itself (or drops it).
			if (kind === "fallback" && err instanceof DaemonUnavailableError) {
				appendRecord(session, fallbackRecord(session, fields as Parameters<typeof fallbackRecord>[1]));
			}
		});
	};

	const facts = (ctx: ExtensionContext): SessionFacts | undefined => {
		try {
			lastSession = sessionFacts(pi, ctx);
		} catch {
			// stale ctx (shutdown mid-compaction): fall back to the last facts we could read
		}
		return lastSession;
	};

	try {
		registerReportCommand(pi, notices); // REPORT-1: /longhaul-report
	} catch {
		// a host without commands: never fail pi's load over the report
	}
	try {
		registerLonghaulTools(pi, facts); // TOOLS-1..10: longhaul_remember, longhaul_recall, the kept-window strip
	} catch {
		// a host without tools: never fail pi's load over them
	}

	pi.on("session_start", (event, ctx) => {
		const session = facts(ctx);
		if (!session) return;
		// Not awaited: pi starts normally with the daemon stopped (PASS-19).
		call("hello", { session, reason: event.reason ?? null }, { socketPath: socketPath(), timeoutMs: REPORT_TIMEOUT_MS })
			.then((r) => {
				const d = (r as { deadlineMs?: unknown } | null)?.deadlineMs;
				if (typeof d === "number" && Number.isFinite(d) && d > 0) helloDeadlineMs = d;
			})
			.catch(() => {});
	});

	pi.on("session_before_compact", async (event, ctx): Promise<{ compaction: CompactionResult } | { cancel: true } | undefined> => {
		const startedAt = Date.now();
		if (standsDown()) {
			pending = []; // CONFIG-2/3: another compactor was chosen; no pass is requested, nothing of ours is waiting
			return undefined;
		}

		const session = facts(ctx); // before any await: ctx may go stale during the pass
		if (!session) return undefined;
		const models = piModels(ctx); // likewise: pi's registry and the session model, resolved below

		const fallBack = (reason: string, err: unknown, extra: { passId?: string; span?: number } = {}, timeoutMs = 0) => {
			pending.push({ kind: "fallback", startedAt, session, reason, passId: extra.passId ?? null, span: extra.span ?? null });
			notices.hold(ctx, fallbackNotice(reason, err, timeoutMs), "warning");
			incident(session, "fallback", { reason, ...extra, ...(err ? errorText(err) : {}) });
			return undefined;
		};

		const timeoutMs = passDeadlineMs(helloDeadlineMs);
		// FAIL-14: the wait counts from the hook, so resolving the route and credentials is inside it, not on top.
		const left = () => Math.max(1, startedAt + timeoutMs - Date.now());
		let raw: unknown;
		try {
			// PASS-22, CONFIG-8: which summarizer the daemon will plan with, then pi's credentials for it and the session model
			// An abort while pi's registry still works (a slow key command) is answered at once (PASS-18).
			const spec = await summarizerSpec(session, event.signal);
			const resolved = await resolveModels(models, spec, undefined, event.signal);
			// PASS-22: model.complete requests the daemon sends on this call run with pi's own provider code
			const onRequest = models.registry ? daemonRequestHandler(models.registry) : undefined;
			const send = (mode: BranchMode) =>
				call("compact", compactParams(event, session, resolved, mode), {
					socketPath: socketPath(),
					timeoutMs: left(),
					signal: event.signal,
					onRequest,
				});
			try {
				raw = await send({ inline: false });
			} catch (err) {
				// The daemon would not read the session file (symlink, another owner, not pi's file, not written yet):
				// the same pass goes again with the entries inline, so the compaction is still Longhaul's.
				const refused = sessionFileRefusal(err);
				if (refused === null) throw err;
				raw = await send({ inline: true, refused });
			}
		} catch (err) {
			if (err instanceof AbortedError) {
				// PASS-18: neither Longhaul's nor pi's summary; the socket is already closed, so the daemon cancels.
				incident(session, "aborted", { reason: "signal", ...errorText(err) });
				return { cancel: true };
			}
			return fallBack(fallbackReason(err), err, {}, timeoutMs);
		}

		const result = parseCompactResult(raw);
		if (typeof result === "string") return fallBack("protocol-error", new ProtocolError(result));
		if (result.notice) notices.hold(ctx, result.notice, "info"); // e.g. a narrative-less close (FAIL-10), a settings problem
		if (!result.compaction) {
			return fallBack(result.fallback ?? "protocol-error", undefined, { passId: result.passId, span: result.span });
		}
		pending.push({ kind: "ours", startedAt, session, passId: result.passId, span: result.span, after: result.after });
		return { compaction: result.compaction };
	});

	pi.on("session_compact", (event, ctx) => {
		const entry = event.compactionEntry;
		const details = entry.details as { passId?: unknown } | undefined;
		// PASS-9: pi locates the entry by summary text; the pass id in details tells us it really is our summary.
		const ours = pending.find((q): q is Ours => q.kind === "ours" && !!details && details.passId === q.passId);
		// pi's own summary after one of our fallbacks (the newest: the one pi just ran). Another extension's entry
		// (fromExtension without our pass id) is neither.
		const fb = ours || event.fromExtension ? undefined : pending.filter((q): q is Fallback => q.kind === "fallback").at(-1);
		const p = ours ?? fb;
		// Every other waiting hook is moot now (cancelled, or lost pi's race); drop them so none is matched later.
		pending = [];
		const session = facts(ctx) ?? p?.session;

		if (ours?.after?.spanRecord) {
			try {
				pi.appendEntry("compaction-state.span", { ...ours.after.spanRecord, compactionId: entry.id });
			} catch (err) {
				if (session) incident(session, "span-record-failed", { span: ours.span, passId: ours.passId, ...errorText(err) });
			}
		}

		// The notices this compaction raised, shown after pi's redraw of the chat; scheduled before the line below,
		// so a notice is out before the line reaches the session file.
		notices.release(ctx);
		// PASS-14: one event-loop turn later, so the line lands below the compaction block pi draws.
		setTimeout(() => {
			let line: Record<string, unknown> | undefined;
			if (ours) line = { ...(ours.after?.line ?? { v: 1, span: ours.span }), ms: Date.now() - ours.startedAt };
			else if (fb) line = { v: 1, ms: Date.now() - fb.startedAt, fallback: fb.reason };
			if (!line) return;
			try {
				pi.appendEntry("compaction-state.line", line);
			} catch (err) {
				if (session) incident(session, "compaction-line-failed", errorText(err));
			}
		}, 0);

		if (!session) return;
		// LOG-19/LOG-24: sent in stand-down mode too, so a report can tell which compactor ran.
		report("compacted", {
			session,
			compactionEntryId: entry.id,
			fromExtension: !!ours,
			passId: p?.passId ?? null,
			span: p?.span ?? null,
			reason: null, // not observable in pi 0.73.1 (see compactParams)
			summaryChars: charCount(typeof entry.summary === "string" ? entry.summary : ""),
			tokensBefore: Number.isInteger(entry.tokensBefore) && entry.tokensBefore >= 0 ? entry.tokensBefore : 0,
		});
	});

	// A compaction that never reached session_compact (pi's own summary failed, or it was cancelled) still had its
	// notices held: they show when the next agent run starts.
	pi.on("agent_start", (_event, ctx) => notices.release(ctx));

	// compact_failed is never sent: pi 0.73.1 reports a failed compaction only through its compaction_end session
	// event (errorMessage), which reaches RPC/JSON listeners but not extensions. See README.md.
}

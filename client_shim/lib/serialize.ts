/**
 * pi objects → the plain JSON that longhaul_daemon/protocol.py accepts, and daemon replies → checked shapes.
 *
 * The daemon's params models forbid unknown top-level fields, so every builder here lists its keys explicitly
 * instead of spreading pi's objects (pi may add fields in any release).
 */
import type { ExtensionAPI, ExtensionContext, SessionBeforeCompactEvent } from "@mariozechner/pi-coding-agent";
import { getAgentDir, VERSION } from "@mariozechner/pi-coding-agent";
import { homedir } from "node:os";
import { RpcError } from "./rpc.ts";

/** Env vars the daemon must take from the pi process, never from its own environment (CONFIG-10). */
export const ENV_KEYS = [
	"PI_COMPACTOR",
	"PI_COMPACT_STATE_DEBUG",
	"PI_COMPACT_STATE_DEBUG_EXCERPTS",
	"PI_COMPACT_STATE_DEBUG_STACK",
] as const;

const SHORT = 4096; // protocol.py _SHORT: longer values would get the whole request rejected

export interface ModelFacts {
	provider: string;
	id: string;
	api: string | null;
	baseUrl: string | null;
	reasoning: boolean | null;
	contextWindow: number | null;
	maxTokens: number | null;
	compat: Record<string, unknown> | null; // pi's per-model capability flags, as models.json gave them
	thinkingLevelMap: Record<string, string | null> | null; // pi level → the model's value; null = unsupported
}

export interface SessionFacts {
	cwd: string;
	sessionId: string;
	sessionFile: string | null;
	agentDir: string;
	piVersion: string;
	model: ModelFacts | null;
	thinkingLevel: string | null;
	env: Partial<Record<(typeof ENV_KEYS)[number], string>>;
}

export interface Compaction {
	summary: string;
	firstKeptEntryId: string;
	tokensBefore: number;
	details: Record<string, unknown>;
}

export interface CompactResult {
	passId: string;
	span: number;
	compaction: Compaction | null;
	after: { spanRecord: Record<string, unknown>; line: Record<string, unknown> } | null;
	notice: string | null;
	fallback: string | null;
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const int = (v: unknown): number | null => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : null);
const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

export function shimEnv(env: NodeJS.ProcessEnv = process.env): SessionFacts["env"] {
	const out: SessionFacts["env"] = {};
	for (const k of ENV_KEYS) {
		const v = env[k];
		if (v !== undefined) out[k] = v.slice(0, SHORT);
	}
	return out;
}

/** PI_COMPACTOR unset, empty or "state" selects Longhaul (CONFIG-1); anything else stands down (CONFIG-2/3/4). */
export function standsDown(env: NodeJS.ProcessEnv = process.env): boolean {
	const v = (env.PI_COMPACTOR ?? "").trim().toLowerCase();
	return v !== "" && v !== "state";
}

/** Only string or null values: pi maps a thinking level to the model's own word, or null where it has none. */
function levelMap(v: unknown): Record<string, string | null> | null {
	if (!isObj(v)) return null;
	const out: Record<string, string | null> = {};
	for (const [level, value] of Object.entries(v)) {
		if (typeof value === "string" || value === null) out[level] = value;
	}
	return out;
}

export function modelFacts(model: ExtensionContext["model"]): ModelFacts | null {
	if (!model || typeof model.provider !== "string" || typeof model.id !== "string") return null;
	return {
		provider: model.provider,
		id: model.id,
		api: str(model.api),
		baseUrl: str(model.baseUrl),
		reasoning: typeof model.reasoning === "boolean" ? model.reasoning : null,
		contextWindow: int(model.contextWindow),
		maxTokens: int(model.maxTokens),
		compat: isObj(model.compat) ? { ...model.compat } : null,
		thinkingLevelMap: levelMap((model as { thinkingLevelMap?: unknown }).thinkingLevelMap),
	};
}

/** Who is asking. Throws if ctx is stale; callers build it before any await and keep it. */
export function sessionFacts(pi: ExtensionAPI, ctx: ExtensionContext): SessionFacts {
	const sm = ctx.sessionManager;
	let thinkingLevel: string | null = null;
	try {
		thinkingLevel = pi.getThinkingLevel();
	} catch {
		// stale or not yet bound: the level is a nice-to-have
	}
	return {
		cwd: ctx.cwd || sm.getCwd(),
		sessionId: sm.getSessionId(),
		sessionFile: sm.getSessionFile() ?? null,
		agentDir: getAgentDir(),
		piVersion: VERSION,
		model: modelFacts(ctx.model),
		thinkingLevel,
		env: shimEnv(),
	};
}

const sortedArray = (s: Iterable<string> | undefined): string[] => [...(s ?? [])].map(String).sort();

/** The daemon's JSON-RPC code for a session file it will not read; `data.reason` says why (docs/protocol.md). */
export const SESSION_FILE_REFUSED = -32004;

/** The refusal's reason code, or null when `err` is something else. */
export function sessionFileRefusal(err: unknown): string | null {
	if (!(err instanceof RpcError) || err.code !== SESSION_FILE_REFUSED) return null;
	const reason = isObj(err.data) ? err.data.reason : undefined;
	return typeof reason === "string" && /^[a-z][a-z0-9-]{0,63}$/.test(reason) ? reason : "unknown";
}

/** How the branch travels: named by the session file and its leaf, or inline (no file, or the file was refused). */
export type BranchMode = { inline: false } | { inline: true; refused: string | null };

/**
 * pi builds `messagesToSummarize` from the branch's entries, and a `message` entry's message is the very same object
 * (compaction.js getMessageFromEntry). Such a message goes as `{entryRef: id}`, so the request carries it once;
 * a message pi built afresh (from a custom_message entry) goes whole.
 */
function spanItems(messages: readonly unknown[], refs: Map<unknown, string>): unknown[] {
	return messages.map((m) => {
		const id = refs.get(m);
		return id === undefined ? m : { entryRef: id };
	});
}

function messageRefs(entries: readonly unknown[]): Map<unknown, string> {
	const refs = new Map<unknown, string>();
	for (const e of entries) {
		if (isObj(e) && e.type === "message" && isObj(e.message) && typeof e.id === "string") refs.set(e.message, e.id);
	}
	return refs;
}

/**
 * CompactParams. `reason` is null: pi 0.73.1 passes the reason ("manual" | "threshold" | "overflow") only to its
 * own compaction_start/compaction_end session events, which extensions never receive. With a session file the
 * daemon reads the branch itself from `leafId` back (its size grows with the span, not the session).
 */
export function compactParams(
	event: SessionBeforeCompactEvent,
	session: SessionFacts,
	models: { credentials: object | null; summarizer: object | null } = { credentials: null, summarizer: null },
	mode: BranchMode = { inline: false },
): object {
	const p = event.preparation;
	const entries: readonly unknown[] = event.branchEntries ?? [];
	const refs = messageRefs(entries);
	const leaf = entries.at(-1);
	const leafId = isObj(leaf) && typeof leaf.id === "string" ? leaf.id : null;
	const fromFile = !mode.inline && session.sessionFile !== null && leafId !== null;
	return {
		session,
		reason: null,
		customInstructions: event.customInstructions ?? null,
		preparation: {
			firstKeptEntryId: p.firstKeptEntryId,
			messagesToSummarize: spanItems(p.messagesToSummarize ?? [], refs),
			turnPrefixMessages: spanItems(p.turnPrefixMessages ?? [], refs),
			isSplitTurn: !!p.isSplitTurn,
			tokensBefore: Number.isInteger(p.tokensBefore) ? p.tokensBefore : Math.max(0, Math.round(p.tokensBefore || 0)),
			previousSummary: p.previousSummary ?? null,
			// JS Sets: JSON.stringify would turn them into {} (pi-api.md §1.2)
			fileOps: {
				read: sortedArray(p.fileOps?.read),
				written: sortedArray(p.fileOps?.written),
				edited: sortedArray(p.fileOps?.edited),
			},
		},
		leafId,
		branchEntries: fromFile ? null : entries,
		sessionFileRefused: mode.inline ? mode.refused : null,
		// PASS-22: resolved with pi's registry for this pass only (lib/models.ts)
		credentials: models.credentials,
		summarizer: models.summarizer,
	};
}

/** Check the daemon's CompactResult; a malformed one is a protocol error, so pi's own compaction runs. */
export function parseCompactResult(raw: unknown): CompactResult | string {
	if (!isObj(raw)) return "compact result is not an object";
	if (typeof raw.passId !== "string" || !raw.passId) return "compact result lacks passId";
	if (int(raw.span) === null) return "compact result lacks span";
	let compaction: Compaction | null = null;
	if (raw.compaction != null) {
		const c = raw.compaction;
		if (
			!isObj(c) ||
			typeof c.summary !== "string" ||
			typeof c.firstKeptEntryId !== "string" ||
			typeof c.tokensBefore !== "number" ||
			!isObj(c.details)
		) {
			return "compact result has a malformed compaction";
		}
		compaction = c as unknown as Compaction;
	}
	let after: CompactResult["after"] = null;
	if (raw.after != null) {
		const a = raw.after;
		if (!isObj(a) || !isObj(a.spanRecord) || !isObj(a.line)) return "compact result has malformed after-entries";
		after = { spanRecord: a.spanRecord, line: a.line };
	}
	const fallback = str(raw.fallback);
	if (!compaction && !fallback) return "compact result has neither compaction nor fallback";
	if (compaction && fallback) return "compact result has both compaction and fallback";
	return { passId: raw.passId, span: raw.span as number, compaction, after, notice: str(raw.notice), fallback };
}

const ERROR_CHARS = 200; // LOG-7

/**
 * LOG-7: the home directory as `~` first, then cut to 200 characters. Characters are code points, as the daemon
 * counts them, so a cut never splits a surrogate pair.
 */
export function cutError(text: string, home: string = homedir()): string {
	const h = home.replace(/\/+$/, "");
	const shown = h.length > 1 ? text.split(h).join("~") : text;
	return shown.length <= ERROR_CHARS ? shown : Array.from(shown).slice(0, ERROR_CHARS).join("");
}

/** What an incident may say about an error: its class and the first 200 chars of its message, nothing more. */
export function errorText(err: unknown): { errorClass: string; error: string } {
	if (err instanceof Error) return { errorClass: err.name || err.constructor.name, error: cutError(err.message) };
	return { errorClass: typeof err, error: cutError(String(err)) };
}

/** Unicode code points, the unit the spec proposes for character counts. */
export const charCount = (s: string): number => {
	let n = 0;
	for (const _ of s) n++;
	return n;
};

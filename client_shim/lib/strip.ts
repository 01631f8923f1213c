/**
 * The kept-window strip's shim half (TOOLS-9, TOOLS-10): on pi's `context` event, ask the daemon which old reasoning
 * to leave out of the copy pi is about to send, and apply that answer. The daemon decides; this file only filters.
 *
 * Cheap by design: the daemon is asked only when the newest compaction on the branch is Longhaul's and some
 * assistant message carries a thinking block. Any failure (no daemon, slow, malformed answer) leaves the context
 * exactly as pi built it. The transcript is never touched: pi hands the handler a structured clone.
 */
import type { ContextEvent, ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { call, socketPath } from "./rpc.ts";
import type { SessionFacts } from "./serialize.ts";

/** The context event blocks the model call, so the daemon gets little time before pi goes ahead unchanged. */
const STRIP_TIMEOUT_MS = 2_000;

type Message = ContextEvent["messages"][number];

export interface StripAnswer {
	cutoff: string | null;
	strip: number[];
	strippedBlocks: number;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

function isThinking(block: unknown): boolean {
	return isObj(block) && block.type === "thinking";
}

/** Whether any assistant message carries a thinking block (else there is nothing to strip). */
export function anyThinking(messages: readonly Message[]): boolean {
	return messages.some((m) => isObj(m) && m.role === "assistant" && Array.isArray(m.content) && m.content.some(isThinking));
}

/**
 * The part of the branch the daemon needs, from the newest compaction's first kept entry on, when that compaction
 * is Longhaul's (details.compactor === "longhaul"); undefined otherwise. Only a size cut: the daemon reads a whole
 * branch the same way, so long sessions do not ship their whole history on every model call.
 */
export function keptWindowBranch<T>(branch: readonly T[]): T[] | undefined {
	for (let i = branch.length - 1; i >= 0; i--) {
		const e: unknown = branch[i];
		if (!isObj(e) || e.type !== "compaction") continue;
		if (!isObj(e.details) || e.details.compactor !== "longhaul") return undefined;
		const start = branch.findIndex((x: unknown, j) => j < i && isObj(x) && x.id === e.firstKeptEntryId);
		return branch.slice(start >= 0 ? start : i);
	}
	return undefined;
}

/** Check the daemon's StripResult; anything malformed means "leave the context alone". */
export function parseStripAnswer(raw: unknown, count: number): StripAnswer | undefined {
	if (!isObj(raw) || !Array.isArray(raw.strip)) return undefined;
	const strip = raw.strip.filter((i): i is number => Number.isInteger(i) && (i as number) >= 0 && (i as number) < count);
	if (strip.length !== raw.strip.length) return undefined;
	return {
		cutoff: typeof raw.cutoff === "string" ? raw.cutoff : null,
		strip,
		strippedBlocks: typeof raw.strippedBlocks === "number" ? raw.strippedBlocks : 0,
	};
}

/** The messages with the thinking blocks of the listed messages left out; every other message is the same object. */
export function applyStrip(messages: Message[], strip: readonly number[]): Message[] {
	const drop = new Set(strip);
	return messages.map((m, i) => {
		if (!drop.has(i) || !isObj(m) || m.role !== "assistant" || !Array.isArray(m.content)) return m;
		return { ...m, content: m.content.filter((b) => !isThinking(b)) } as Message;
	});
}

/** Register the `context` handler. `facts(ctx)` gives the session facts (undefined when ctx is stale). */
export function registerKeptWindowStrip(pi: ExtensionAPI, facts: (ctx: ExtensionContext) => SessionFacts | undefined): void {
	pi.on("context", async (event: ContextEvent, ctx: ExtensionContext): Promise<{ messages: Message[] } | undefined> => {
		try {
			const messages = event.messages;
			if (!Array.isArray(messages) || !anyThinking(messages)) return undefined;
			const branch = keptWindowBranch(ctx.sessionManager.getBranch());
			if (!branch) return undefined;
			const session = facts(ctx);
			if (!session) return undefined;
			const raw = await call(
				"strip",
				{ session, messages, branchEntries: branch },
				{ socketPath: socketPath(), timeoutMs: STRIP_TIMEOUT_MS, signal: ctx.signal },
			);
			const answer = parseStripAnswer(raw, messages.length);
			if (!answer || answer.strip.length === 0) return undefined;
			return { messages: applyStrip(messages, answer.strip) };
		} catch {
			return undefined; // TOOLS-8 spirit: the daemon's absence never changes or breaks what pi sends
		}
	});
}

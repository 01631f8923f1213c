/**
 * The agent's two Longhaul tools, `longhaul_remember` and `longhaul_recall` (TOOLS-1..8), plus the registration of
 * the kept-window strip: one call from index.ts wires all of it.
 *
 * The shim decides nothing: `remember` gets back from the daemon the checked, bounded note and the exact entry to
 * append; `recall` gets back bounded, sanitized text. Nothing here throws out of `execute` (TOOLS-8): a missing or
 * confused daemon gives a result with a clear text, which a `tool_result` handler marks `isError: true`.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { AbortedError, call, DaemonUnavailableError, RpcError, ShimTimeoutError, socketPath } from "./rpc.ts";
import { type SessionFacts, sessionFileRefusal } from "./serialize.ts";
import { registerKeptWindowStrip } from "./strip.ts";

export const REMEMBER_TOOL = "longhaul_remember";
export const RECALL_TOOL = "longhaul_recall";
const TOOL_TIMEOUT_MS = 10_000; // the daemon answers from memory and the branch; no model call behind either tool

type Facts = (ctx: ExtensionContext) => SessionFacts | undefined;
type ToolDetails = { longhaulError?: true; spans?: number[] };
type ToolResult = { content: { type: "text"; text: string }[]; details: ToolDetails };

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

const ok = (text: string, details: ToolDetails = {}): ToolResult => ({ content: [{ type: "text", text }], details });
/** An error result: the `tool_result` handler below turns `longhaulError` into `isError: true`. */
const failed = (text: string): ToolResult => ({ content: [{ type: "text", text }], details: { longhaulError: true } });

/** Why the daemon could not answer, in words for the agent (no stack, no internals). */
export function unreachableText(tool: string, err: unknown): string {
	if (err instanceof DaemonUnavailableError) return `${tool}: the Longhaul daemon is not running (${err.message}).`;
	if (err instanceof ShimTimeoutError) return `${tool}: the Longhaul daemon did not answer in time.`;
	if (err instanceof AbortedError) return `${tool}: cancelled.`;
	if (err instanceof RpcError) return `${tool}: the Longhaul daemon refused the call (${err.message}).`;
	return `${tool}: the Longhaul daemon gave an answer the shim does not understand.`;
}

async function ask(method: string, params: object, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
	const raw = await call(method, params, { socketPath: socketPath(), timeoutMs: TOOL_TIMEOUT_MS, signal });
	if (!isObj(raw) || typeof raw.ok !== "boolean" || typeof raw.text !== "string") throw new Error("malformed reply");
	return raw;
}

export function registerLonghaulTools(pi: ExtensionAPI, facts: Facts): void {
	pi.registerTool({
		name: REMEMBER_TOOL,
		label: "Longhaul remember",
		description:
			"Leave a short note for the next context compaction, so it is not lost when older messages are summarized. " +
			"Use it for a decision you made, a dead end you hit, a value you will need again, or any other note. " +
			"The text must be 1-500 characters. It is kept as your own note, never as the user's words or a user rule.",
		promptSnippet: "longhaul_remember: keep a short note (decision, dead end, value) across context compactions",
		parameters: Type.Object({
			text: Type.String({ description: "The note, 1-500 characters, in your own words." }),
			kind: Type.Optional(
				Type.Union([Type.Literal("decision"), Type.Literal("dead-end"), Type.Literal("value"), Type.Literal("note")], {
					description: 'What the note is; "note" when omitted.',
				}),
			),
		}),
		async execute(_toolCallId, params, signal, _onUpdate, ctx): Promise<ToolResult> {
			const session = facts(ctx);
			if (!session) return failed(`${REMEMBER_TOOL}: the session is not readable right now; nothing was remembered.`);
			let answer: Record<string, unknown>;
			try {
				answer = await ask("remember", { session, text: params.text, kind: params.kind ?? null }, signal);
			} catch (err) {
				return failed(`${unreachableText(REMEMBER_TOOL, err)} Nothing was remembered.`);
			}
			const text = answer.text as string;
			if (!answer.ok) return failed(text);
			if (typeof answer.customType !== "string" || !isObj(answer.data)) {
				return failed(`${unreachableText(REMEMBER_TOOL, undefined)} Nothing was remembered.`);
			}
			try {
				pi.appendEntry(answer.customType, answer.data);
			} catch (err) {
				const why = err instanceof Error ? err.message.slice(0, 200) : String(err).slice(0, 200);
				return failed(`${REMEMBER_TOOL}: the note could not be written to the session (${why}).`);
			}
			return ok(text);
		},
	});

	pi.registerTool({
		name: RECALL_TOOL,
		label: "Longhaul recall",
		description:
			"Look up the stored detail of an earlier, already summarized part of this session: the commands run and their " +
			"exit codes, errors, decisions, dead ends and the narrative of a span. " +
			'ref picks what to look up: "span:<n>" for span n, or an id from the summary (C<n> command, E<n> error, ' +
			"R<n> rule, u<n> user message). query searches all span details, case-insensitively. With neither, it lists " +
			"the spans. Read-only.",
		promptSnippet: "longhaul_recall: detail of an earlier summarized span (commands, errors, decisions)",
		parameters: Type.Object({
			ref: Type.Optional(Type.String({ description: 'What to look up: "span:<n>", "C<n>", "E<n>", "R<n>" or "u<n>".' })),
			query: Type.Optional(Type.String({ description: "Words to search for in the stored span details." })),
		}),
		async execute(_toolCallId, params, signal, _onUpdate, ctx): Promise<ToolResult> {
			let session: SessionFacts | undefined;
			let branch: unknown[];
			let leafId: string | null = null;
			try {
				session = facts(ctx);
				branch = ctx.sessionManager.getBranch();
				leafId = ctx.sessionManager.getLeafId() ?? null;
			} catch {
				session = undefined;
				branch = [];
			}
			if (!session) return failed(`${RECALL_TOOL}: the session is not readable right now.`);
			let answer: Record<string, unknown>;
			const query = { session, ref: params.ref ?? null, query: params.query ?? null, leafId };
			try {
				// With a session file the daemon reads the branch itself; inline only without one, or when it refused the file.
				const fromFile = session.sessionFile !== null && leafId !== null;
				try {
					answer = await ask("recall", { ...query, branchEntries: fromFile ? null : branch }, signal);
				} catch (err) {
					if (!fromFile || sessionFileRefusal(err) === null) throw err;
					answer = await ask("recall", { ...query, branchEntries: branch }, signal);
				}
			} catch (err) {
				return failed(unreachableText(RECALL_TOOL, err));
			}
			const text = answer.text as string;
			if (!answer.ok) return failed(text);
			const spans = Array.isArray(answer.spans) ? answer.spans.filter((n): n is number => Number.isInteger(n)) : [];
			return ok(text, { spans });
		},
	});

	// TOOLS-8: a returned error result (never a throw) still reaches the model as an error.
	pi.on("tool_result", (event) => {
		if (event.toolName !== REMEMBER_TOOL && event.toolName !== RECALL_TOOL) return undefined;
		return isObj(event.details) && event.details.longhaulError === true ? { isError: true } : undefined;
	});

	registerKeptWindowStrip(pi, facts);
}

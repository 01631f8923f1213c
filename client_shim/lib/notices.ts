/**
 * Every notice Longhaul shows the user goes through `Notices.show`, so each one lands where it stays readable.
 *
 * pi's interactive screen clears and redraws its chat when a compaction ends (pi 0.73.1: on `compaction_end`,
 * which pi emits right after the extensions' `session_compact`). A notice sent from inside the compaction hook is
 * drawn and then wiped a moment later, so notices raised during a compaction are held and shown one event-loop
 * turn after `session_compact`: after the redraw, below the compaction block. A held notice whose compaction never
 * reached `session_compact` (pi's own summary failed, or the compaction was cancelled) is shown when the next agent
 * run starts. Outside a compaction a notice shows at once. RPC mode gets the same `notify` calls (as UI requests);
 * print and JSON modes have no screen, so the text goes to standard error, or, for what the user asked for (the
 * report), to standard output in print mode. Nothing here is ever sent to the model.
 */
import { writeSync } from "node:fs";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";

export type NoticeLevel = "info" | "warning";
export type NoticeContext = Pick<ExtensionContext, "hasUI" | "ui">;

/** Where a notice goes without a UI: "answer" is output the user asked for (stdout in print mode, stderr in JSON). */
export type NoUiStream = "answer" | "diagnostic";

type Held = { text: string; level: NoticeLevel; ctx: NoticeContext };

// C0 controls but newline and tab, DEL and C1 (ESC starts terminal sequences), bidi embeddings and isolates.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** A notice can quote a path or a model id; strip what could steer the terminal or reorder the text. */
export function safeText(text: string): string {
	return text.replace(UNSAFE, "");
}

/** "json" when pi runs with `--mode json`, "print" for `-p`/`--print`, else null (pi 0.73.1 argv forms). */
export function printMode(argv: readonly string[] = process.argv): "json" | "print" | null {
	for (let i = 0; i < argv.length; i++) {
		if ((argv[i] === "--mode" && argv[i + 1] === "json") || argv[i] === "--mode=json") return "json";
	}
	return argv.includes("-p") || argv.includes("--print") ? "print" : null;
}

export class Notices {
	private held: Held[] = [];

	constructor(
		private readonly argv: readonly string[] = process.argv,
		private readonly defer: (fn: () => void) => void = (fn) => void setTimeout(fn, 0),
	) {}

	/** Show `text` now, where the user reads it in this mode. Never throws (a stale ctx, a closed stream). */
	show(ctx: NoticeContext, text: string, level: NoticeLevel, stream: NoUiStream = "diagnostic"): void {
		const clean = safeText(text);
		try {
			if (ctx.hasUI) {
				ctx.ui.notify(clean, level);
				return;
			}
			const fd = stream === "answer" && printMode(this.argv) === "print" ? 1 : 2;
			writeSync(fd, `${clean}\n`);
		} catch {
			// the ctx went stale (pi shut the session down) or the stream is gone: the daemon's records remain
		}
	}

	/** Keep a notice raised inside a compaction until that compaction has ended (see the module comment). */
	hold(ctx: NoticeContext, text: string, level: NoticeLevel): void {
		this.held.push({ text, level, ctx });
	}

	/**
	 * A compaction ended (`session_compact`) or the next agent run began: show what is held, one event-loop turn
	 * later so pi's redraw of the chat comes first. `ctx` is the newest context, used in place of a stale one.
	 */
	release(ctx?: NoticeContext): void {
		if (this.held.length === 0) return;
		// pi -p can run two compactions at once and write one: both hooks may have held the same notice.
		const due = this.held.filter((n, i, all) => all.findIndex((m) => m.text === n.text) === i);
		this.held = [];
		this.defer(() => {
			for (const n of due) this.show(ctx ?? n.ctx, n.text, n.level);
		});
	}

	/** The held notices, oldest first (for tests and diagnostics). */
	pending(): readonly string[] {
		return this.held.map((n) => n.text);
	}
}

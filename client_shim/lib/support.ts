/**
 * Which pi the shim can serve, decided before any other part of it loads.
 *
 * The oldest pi is 0.69.0, the first that hands extensions TypeBox 1.x as `typebox` (the schemas of the two tools)
 * and that makes a replaced session's old `pi` and `ctx` throw instead of acting on the new session (what the
 * shim's stale-context guards expect). The rest came earlier: `session_start` with its reason for every new,
 * resumed or forked session in 0.65.0, `modelRegistry.getApiKeyAndHeaders` in 0.63.0. On an older pi, or a host
 * without the event or entry method the hooks need, Longhaul stands down: it registers no handler, so pi's own
 * compaction runs, and it says so in one notice. Only type imports and node built-ins here, so this module loads
 * on any pi.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { type NoticeContext, Notices } from "./notices.ts";

export const OLDEST_PI = "0.69.0";
export const NEWEST_TESTED_PI = "0.73.1";

// Compaction needs these two; the tools and the report command are registered only where the host offers them.
const NEEDED_METHODS = ["on", "appendEntry"] as const;
const UPDATE_HINT = `update pi (npm install -g @mariozechner/pi-coding-agent@${NEWEST_TESTED_PI}) to use Longhaul`;

/** [major, minor, patch] of "1.2.3" (a pre-release or build suffix ignored), or null. */
export function parseVersion(version: unknown): [number, number, number] | null {
	if (typeof version !== "string") return null;
	const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
	return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function olderThan(a: [number, number, number], b: [number, number, number]): boolean {
	for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
	return false;
}

/** Why this pi cannot be served, as the notice the user sees; null when it can. */
export function piRefusal(version: unknown, pi: object): string | null {
	const shown = typeof version === "string" ? version : "of unknown version";
	const parsed = parseVersion(version);
	const oldest = parseVersion(OLDEST_PI) as [number, number, number];
	if (parsed && olderThan(parsed, oldest)) {
		return `Longhaul: pi ${shown} is older than ${OLDEST_PI}, the oldest pi Longhaul works with; pi's own compaction runs instead (${UPDATE_HINT}).`;
	}
	const host = pi as Record<string, unknown>;
	const missing = NEEDED_METHODS.filter((name) => typeof host[name] !== "function");
	if (missing.length > 0) {
		const names = missing.map((name) => `pi.${name}`).join(", ");
		return `Longhaul: this pi (${shown}) lacks ${names}, which Longhaul needs; pi's own compaction runs instead (${UPDATE_HINT}).`;
	}
	return null;
}

/** The notice when the shim's own modules could not be loaded into this pi. */
export function loadFailure(version: unknown, err: unknown): string {
	const shown = typeof version === "string" ? version : "of unknown version";
	const why = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).split("\n")[0];
	return `Longhaul could not load into pi ${shown} (${why.slice(0, 300)}); pi's own compaction runs instead (${UPDATE_HINT}).`;
}

/**
 * Register nothing but one notice at the first session start. Never throws: a host too old even for `pi.on`
 * simply gets no notice, and pi still starts.
 */
export function standDown(pi: ExtensionAPI, notice: string, notices: Notices = new Notices()): void {
	let shown = false;
	try {
		pi.on("session_start", (_event, ctx) => {
			if (shown) return;
			shown = true;
			notices.show(ctx as NoticeContext, notice, "warning");
		});
	} catch {
		// no event API at all: nothing can be shown, and nothing of Longhaul's runs
	}
}

/**
 * Longhaul's pi extension: hands pi's compaction hook to the per-user longhaul daemon and writes back what it returns.
 *
 * This entry only decides whether this pi is one the shim can serve (lib/support.ts) and then loads the hooks
 * (lib/compaction.ts). It imports nothing a supported pi provides and an older one lacks, so on an older pi, or
 * when loading the rest fails, Longhaul stands down with one notice and pi's own compaction runs; pi itself never
 * fails to start over the shim. Nothing here connects or throws at load time (a load-time throw makes `pi -p` exit 1).
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { VERSION } from "@mariozechner/pi-coding-agent";
import { Notices } from "./lib/notices.ts";
import { loadFailure, piRefusal, standDown } from "./lib/support.ts";

export default async function longhaul(pi: ExtensionAPI): Promise<void> {
	const notices = new Notices();
	const refusal = piRefusal(VERSION, pi);
	if (refusal !== null) return standDown(pi, refusal, notices);
	let hooks: typeof import("./lib/compaction.ts");
	try {
		hooks = await import("./lib/compaction.ts");
	} catch (err) {
		return standDown(pi, loadFailure(VERSION, err), notices);
	}
	hooks.serve(pi, notices);
}

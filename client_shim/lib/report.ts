/**
 * `/longhaul-report`: asks the daemon for the digest of this session's log and shows it to the user (REPORT-1,
 * REPORT-4). The digest never goes to the model (no sendMessage). Interactive and RPC modes show it as a UI notice;
 * print mode writes it to pi's real standard output (pi redirects `process.stdout` to stderr in `-p`), and JSON
 * mode to stderr, so the JSON event stream on stdout stays clean (lib/notices.ts).
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Notices } from "./notices.ts";
import { call, socketPath } from "./rpc.ts";
import { errorText, type SessionFacts, sessionFacts } from "./serialize.ts";

const REPORT_CALL_MS = 10_000;

export const NO_DAEMON_REPORT =
	"Longhaul report: the daemon did not answer, so no digest was made here. Run `longhaul-daemon report` in a shell: it reads the log directly.";

/** The digest text from the daemon, or the one line saying it could not be made. Never throws. */
export async function fetchDigest(session: SessionFacts): Promise<string> {
	try {
		const result = (await call("report", { session }, { socketPath: socketPath(), timeoutMs: REPORT_CALL_MS })) as {
			digest?: unknown;
		} | null;
		if (result && typeof result.digest === "string") return result.digest;
		return `${NO_DAEMON_REPORT} (malformed reply)`;
	} catch (err) {
		return `${NO_DAEMON_REPORT} (${errorText(err).errorClass})`;
	}
}

export function registerReportCommand(pi: ExtensionAPI, notices: Notices = new Notices()): void {
	pi.registerCommand("longhaul-report", {
		description: "Show a digest of Longhaul's newest log records, safe to attach to a public issue",
		handler: async (_args, ctx) => {
			let session: SessionFacts;
			try {
				session = sessionFacts(pi, ctx);
			} catch {
				return;
			}
			notices.show(ctx, await fetchDigest(session), "info", "answer");
		},
	});
}

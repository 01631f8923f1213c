// FAIL-15: with the daemon unreachable the shim appends its one `fallback` record itself, under the LOG-1..12 file
// rules; and /longhaul-report (REPORT-1, REPORT-4).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { createJiti } from "jiti";
import { beforeCompactEvent, deadSocket, fakeCtx, fakePi, loadShim, startDaemon, waitFor } from "../testing/fakes.mjs";

const jiti = createJiti(import.meta.url);
const recordlog = await jiti.import(new URL("../lib/recordlog.ts", import.meta.url).pathname);
const reportLib = await jiti.import(new URL("../lib/report.ts", import.meta.url).pathname);
const noticesLib = await jiti.import(new URL("../lib/notices.ts", import.meta.url).pathname);
const factory = await loadShim();

let root;
let agentDir;
let cwd;
let daemon;
const ENV = ["PI_CODING_AGENT_DIR", "PI_COMPACT_STATE_DEBUG", "PI_COMPACTOR", "LONGHAUL_SOCKET"];

beforeEach(() => {
	for (const k of ENV) delete process.env[k];
	root = mkdtempSync(join(tmpdir(), "lh-recordlog-"));
	agentDir = join(root, "agent");
	cwd = join(root, "proj");
	mkdirSync(agentDir);
	mkdirSync(cwd);
	process.env.PI_CODING_AGENT_DIR = agentDir;
});
afterEach(async () => {
	await daemon?.stop();
	daemon = undefined;
	for (const k of ENV) delete process.env[k];
	rmSync(root, { recursive: true, force: true });
});

const logPath = () => join(agentDir, "logs", "compaction-state.jsonl");
const records = (path = logPath()) =>
	readFileSync(path, "utf8")
		.split("\n")
		.filter(Boolean)
		.map((l) => JSON.parse(l));

/** Run one session_before_compact against a dead socket; resolves with the hook's answer. */
async function compactWithoutDaemon() {
	deadSocket();
	const pi = fakePi();
	await factory(pi);
	const ctx = fakeCtx({ cwd });
	return pi.handlers.session_before_compact(beforeCompactEvent(), ctx);
}

test("FAIL-15, LOG-4, LOG-6, LOG-8: daemon unreachable → one fallback record, 0600 in 0700", async () => {
	const answer = await compactWithoutDaemon();
	assert.equal(answer, undefined, "pi's own compaction runs");
	await waitFor(() => existsSync(logPath()));
	const recs = records();
	assert.equal(recs.length, 1);
	const [r] = recs;
	assert.equal(r.v, 1);
	assert.equal(r.event, "fallback");
	assert.equal(r.reason, "daemon-unavailable");
	assert.equal(r.errorClass, "DaemonUnavailableError");
	assert.ok(r.error.length <= 200);
	assert.match(r.ts, /^\d{4}-\d\d-\d\dT.*Z$/);
	assert.deepEqual(r.session, {
		cwd,
		sessionId: "0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
		model: "fake/fake-model",
		thinkingLevel: "medium",
	});
	assert.equal(statSync(logPath()).mode & 0o777, 0o600);
	assert.equal(statSync(join(agentDir, "logs")).mode & 0o777, 0o700);
});

test("LOG-3: an off value writes nothing and creates no directory", async () => {
	for (const off of ["off", " NONE ", "0", "False", "no", ""]) {
		process.env.PI_COMPACT_STATE_DEBUG = off;
		const rec = recordlog.fallbackRecord(sessionOf(), { reason: "daemon-unavailable" });
		assert.equal(recordlog.appendRecord(sessionOf(), rec), false, `off value ${JSON.stringify(off)}`);
	}
	assert.equal(existsSync(join(agentDir, "logs")), false);
});

test("LOG-2: PI_COMPACT_STATE_DEBUG=1 writes a file named 1 in the working directory", async () => {
	process.env.PI_COMPACT_STATE_DEBUG = "1";
	await compactWithoutDaemon();
	await waitFor(() => existsSync(join(cwd, "1")));
	assert.equal(records(join(cwd, "1"))[0].event, "fallback");
	assert.equal(existsSync(join(agentDir, "logs")), false);
});

test("LOG-10: a symlink at the log path is never written through", () => {
	mkdirSync(join(agentDir, "logs"), { mode: 0o700 });
	const victim = join(root, "victim.txt");
	writeFileSync(victim, "untouched\n");
	symlinkSync(victim, logPath());
	assert.equal(recordlog.appendRecord(sessionOf(), { v: 1, event: "fallback" }), false);
	assert.equal(readFileSync(victim, "utf8"), "untouched\n");
});

test("LOG-10: a symlinked logs directory is refused", () => {
	const elsewhere = join(root, "elsewhere");
	mkdirSync(elsewhere, { mode: 0o700 });
	symlinkSync(elsewhere, join(agentDir, "logs"));
	assert.equal(recordlog.appendRecord(sessionOf(), { v: 1, event: "fallback" }), false);
	assert.equal(existsSync(join(elsewhere, "compaction-state.jsonl")), false);
});

test("LOG-11: a FIFO or a directory at the log path is skipped without blocking", () => {
	mkdirSync(join(agentDir, "logs"), { mode: 0o700 });
	execFileSync("mkfifo", [logPath()]);
	assert.equal(recordlog.appendRecord(sessionOf(), { v: 1, event: "fallback" }), false);
	assert.ok(lstatSync(logPath()).isFIFO());
	rmSync(logPath());
	mkdirSync(logPath());
	assert.equal(recordlog.appendRecord(sessionOf(), { v: 1, event: "fallback" }), false);
});

test("LOG-8: an existing broader file and directory are narrowed", () => {
	mkdirSync(join(agentDir, "logs"), { mode: 0o755 });
	execFileSync("chmod", ["0755", join(agentDir, "logs")]);
	writeFileSync(logPath(), "", { mode: 0o644 });
	execFileSync("chmod", ["0644", logPath()]);
	assert.equal(recordlog.appendRecord(sessionOf(), { v: 1, event: "fallback" }), true);
	assert.equal(statSync(logPath()).mode & 0o777, 0o600);
	assert.equal(statSync(join(agentDir, "logs")).mode & 0o777, 0o700);
});

test("LOG-9: rotation past the limit keeps one .1 backup; a symlinked backup refuses the write", () => {
	const line = { v: 1, event: "fallback", pad: "x".repeat(100) };
	const limit = 400;
	for (let i = 0; i < 10; i++) assert.equal(recordlog.appendRecord(sessionOf(), { ...line, i }, limit), true);
	assert.ok(statSync(logPath()).size <= limit);
	assert.ok(statSync(`${logPath()}.1`).size <= limit);
	assert.equal(records().at(-1).i, 9);
	rmSync(`${logPath()}.1`);
	const victim = join(root, "victim.txt");
	writeFileSync(victim, "untouched\n");
	symlinkSync(victim, `${logPath()}.1`);
	for (let i = 0; i < 4; i++) recordlog.appendRecord(sessionOf(), { ...line, i }, limit);
	assert.equal(readFileSync(victim, "utf8"), "untouched\n");
});

test("LOG-7: home becomes ~ before the cut to 200 characters", () => {
	const home = "/home/someone";
	const text = `${home}/${"d".repeat(300)}`;
	const cut = recordlog.cutError(text, home);
	assert.ok(cut.startsWith("~/ddd"));
	assert.equal(cut.length, 200);
});

test("LOG-7: the cut counts code points, as the daemon does, and never splits a surrogate pair", () => {
	const text = `${"x".repeat(199)}${"\u{1F600}".repeat(5)}`; // 204 code points, 209 UTF-16 units
	const cut = recordlog.cutError(text, "/home/someone");
	assert.equal(Array.from(cut).length, 200);
	assert.equal(cut, `${"x".repeat(199)}\u{1F600}`);
	assert.ok(!/[\uD800-\uDBFF]$/.test(cut), "no lone high surrogate at the end");
});

test("REPORT-1/4: /longhaul-report shows the daemon's digest as a notice, and one line without a daemon", async () => {
	daemon = await startDaemon((req, dflt) =>
		req.method === "report" ? { jsonrpc: "2.0", id: req.id, result: { digest: "Longhaul report: DIGEST", records: 1 } } : dflt(req),
	);
	const commands = {};
	const pi = { ...fakePi(), registerCommand: (name, spec) => (commands[name] = spec) };
	await factory(pi);
	assert.ok(commands["longhaul-report"], "the command is registered");
	const ctx = fakeCtx({ cwd, hasUI: true });
	await commands["longhaul-report"].handler("", ctx);
	assert.deepEqual(ctx.notices, [{ message: "Longhaul report: DIGEST", level: "info" }]);
	assert.equal(daemon.byMethod("report")[0].params.session.cwd, cwd);
	await daemon.stop();
	daemon = undefined;
	deadSocket();
	const ctx2 = fakeCtx({ cwd, hasUI: true });
	await commands["longhaul-report"].handler("", ctx2);
	assert.equal(ctx2.notices.length, 1);
	assert.ok(ctx2.notices[0].message.startsWith(reportLib.NO_DAEMON_REPORT));
});

test("REPORT-4: print mode detection", () => {
	assert.equal(noticesLib.printMode(["node", "pi", "-p", "x"]), "print");
	assert.equal(noticesLib.printMode(["node", "pi", "--mode", "json", "x"]), "json");
	assert.equal(noticesLib.printMode(["node", "pi", "--mode", "rpc"]), null);
});

function sessionOf() {
	const env = {};
	if (process.env.PI_COMPACT_STATE_DEBUG !== undefined) env.PI_COMPACT_STATE_DEBUG = process.env.PI_COMPACT_STATE_DEBUG;
	return { cwd, sessionId: "s-1", sessionFile: null, agentDir, piVersion: "0.73.1", model: null, thinkingLevel: null, env };
}

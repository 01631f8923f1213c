// Where Longhaul's notices go (lib/notices.ts) and which pi the shim serves (lib/support.ts). The screen itself,
// pi's interactive TUI in tmux, is checked by tests/e2e/test_e2e_tui_notices.py; real old pi by test_e2e_pi_versions.py.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { createJiti } from "jiti";
import { fakeCtx, fakePi, loadShim } from "../testing/fakes.mjs";

const jiti = createJiti(import.meta.url);
const lib = (name) => jiti.import(new URL(`../lib/${name}.ts`, import.meta.url).pathname);
const { Notices, safeText } = await lib("notices");
const support = await lib("support");
const factory = await loadShim();

/** A Notices whose deferred work runs when the test says so. */
function manual(argv = ["node", "pi"]) {
	const queue = [];
	return { notices: new Notices(argv, (fn) => queue.push(fn)), runDeferred: () => queue.splice(0).forEach((fn) => fn()) };
}

test("a held notice waits for its compaction's end, then shows once on the newest ctx", () => {
	const { notices, runDeferred } = manual();
	const hookCtx = fakeCtx();
	const laterCtx = fakeCtx();
	notices.hold(hookCtx, "Longhaul: first", "warning");
	notices.hold(hookCtx, "Longhaul: second", "info");
	assert.deepEqual(notices.pending(), ["Longhaul: first", "Longhaul: second"]);
	notices.release(laterCtx);
	assert.deepEqual(laterCtx.notices, [], "not in the same turn as session_compact: pi redraws right after it");
	runDeferred();
	assert.deepEqual(laterCtx.notices, [
		{ message: "Longhaul: first", level: "warning" },
		{ message: "Longhaul: second", level: "info" },
	]);
	assert.deepEqual(hookCtx.notices, []);
	notices.release(laterCtx);
	runDeferred();
	assert.equal(laterCtx.notices.length, 2, "nothing is shown twice");
});

test("the same notice held twice (two racing compactions in pi -p) is shown once", () => {
	const { notices, runDeferred } = manual();
	const ctx = fakeCtx();
	notices.hold(ctx, "Longhaul: daemon not running (x)", "warning");
	notices.hold(ctx, "Longhaul: daemon not running (x)", "warning");
	notices.release(ctx);
	runDeferred();
	assert.deepEqual(ctx.notices, [{ message: "Longhaul: daemon not running (x)", level: "warning" }]);
});

test("a stale ctx never throws out of a notice", () => {
	const { notices, runDeferred } = manual();
	const stale = fakeCtx({
		ui: {
			notify: () => {
				throw new Error("This extension ctx is stale");
			},
		},
	});
	notices.hold(stale, "Longhaul: x", "info");
	notices.release(stale);
	assert.doesNotThrow(runDeferred);
	assert.doesNotThrow(() => notices.show(stale, "Longhaul: y", "info"));
});

test("terminal controls and bidi overrides are stripped; newlines stay", () => {
	assert.equal(safeText("Longhaul: \u001b[31mred\u001b[0m\u0007 \u202eevil\u202c\nnext\tline"), "Longhaul: [31mred[0m evil\nnext\tline");
	const ctx = fakeCtx();
	new Notices().show(ctx, "a\u009bb", "info");
	assert.deepEqual(ctx.notices, [{ message: "ab", level: "info" }]);
});

test("without a UI a notice goes to stderr, and an answer to stdout in print mode only", () => {
	// A child process, so its real file descriptors 1 and 2 can be read.
	const script = `
		import { createJiti } from "jiti";
		const jiti = createJiti(import.meta.url);
		const { Notices } = await jiti.import(${JSON.stringify(new URL("../lib/notices.ts", import.meta.url).pathname)});
		const ctx = { hasUI: false, ui: { notify: () => { throw new Error("no UI in this mode"); } } };
		new Notices(JSON.parse(process.argv[1])).show(ctx, "Longhaul: diagnostic", "warning");
		new Notices(JSON.parse(process.argv[1])).show(ctx, "Longhaul report: answer", "info", "answer");
	`;
	const run = (argv) =>
		spawnSync(process.execPath, ["--input-type=module", "-e", script, JSON.stringify(argv)], {
			cwd: new URL("..", import.meta.url).pathname,
			encoding: "utf8",
		});
	const print = run(["node", "pi", "-p", "hello"]);
	assert.equal(print.status, 0, print.stderr);
	assert.equal(print.stdout, "Longhaul report: answer\n");
	assert.equal(print.stderr, "Longhaul: diagnostic\n");
	const json = run(["node", "pi", "--mode", "json", "hello"]);
	assert.equal(json.stdout, "", "JSON mode keeps stdout for pi's event stream");
	assert.equal(json.stderr, "Longhaul: diagnostic\nLonghaul report: answer\n");
});

test("the supported range: 0.69.0 and later are served, older ones refused with the update hint", () => {
	const pi = fakePi();
	for (const v of ["0.69.0", "0.70.6", "0.73.1", "0.74.0", "1.0.0", "0.73.1-beta.1", "dev"]) {
		assert.equal(support.piRefusal(v, pi), null, v);
	}
	for (const v of ["0.68.1", "0.63.2", "0.7.6"]) {
		const refusal = support.piRefusal(v, pi);
		assert.match(refusal, new RegExp(`^Longhaul: pi ${v.replaceAll(".", "\\.")} is older than 0\\.69\\.0`));
		assert.match(refusal, /pi's own compaction runs instead/);
		assert.match(refusal, /npm install -g @mariozechner\/pi-coding-agent@0\.73\.1/);
	}
	assert.equal(support.OLDEST_PI, "0.69.0");
});

test("a host without pi.appendEntry is refused by name", () => {
	const pi = fakePi();
	delete pi.appendEntry;
	assert.match(support.piRefusal("0.73.1", pi), /^Longhaul: this pi \(0\.73\.1\) lacks pi\.appendEntry, which Longhaul needs/);
});

test("standing down: no compaction hook, and one notice at the first session start only", async () => {
	const pi = fakePi();
	delete pi.appendEntry;
	await factory(pi);
	assert.deepEqual(Object.keys(pi.handlers), ["session_start"], "pi's own compaction runs: no session_before_compact");
	const ctx = fakeCtx();
	pi.handlers.session_start({ type: "session_start", reason: "startup" }, ctx);
	pi.handlers.session_start({ type: "session_start", reason: "new" }, ctx);
	assert.equal(ctx.notices.length, 1);
	assert.equal(ctx.notices[0].level, "warning");
	assert.match(ctx.notices[0].message, /lacks pi\.appendEntry/);
});

test("a load failure names its first line only", () => {
	const err = new Error("Cannot find module 'typebox'\nRequire stack:\n- /somewhere/lib/tools.ts");
	assert.equal(
		support.loadFailure("0.68.1", err),
		"Longhaul could not load into pi 0.68.1 (Error: Cannot find module 'typebox'); pi's own compaction runs instead " +
			"(update pi (npm install -g @mariozechner/pi-coding-agent@0.73.1) to use Longhaul).",
	);
});

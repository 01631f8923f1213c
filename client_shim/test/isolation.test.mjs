// The test runner's HOME guard (testing/isolated.mjs): a suite that writes into the real agent dir fails, naming
// the file; one that stays in the scratch dirs passes. The "real" HOME here is a directory made by the test.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { compare, realPlaces, snapshot } from "../testing/isolated.mjs";

const RUNNER = new URL("../testing/isolated.mjs", import.meta.url).pathname;
const RECORD = JSON.stringify({ event: "fallback", session: { cwd: join(tmpdir(), "proj") } });

function innerRun(body) {
	const root = mkdtempSync(join(tmpdir(), "lh-guard-"));
	const real = join(root, "real-home");
	mkdirSync(join(real, ".pi", "agent"), { recursive: true });
	writeFileSync(
		join(root, "inner.test.mjs"),
		`import { appendFileSync, mkdirSync } from "node:fs";\nimport { join } from "node:path";\nimport { test } from "node:test";\n` +
			`test("inner", () => {\n${body}\n});\n`,
	);
	const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("XDG_") && !k.startsWith("LONGHAUL_TEST_")));
	delete env.PI_CODING_AGENT_DIR;
	env.HOME = real;
	const run = spawnSync(process.execPath, [RUNNER, join(root, "inner.test.mjs")], { env, encoding: "utf8" });
	return { run, real, root };
}

test("a suite that appends to the real record log fails and names the file", () => {
	const { run, real, root } = innerRun(
		`const logs = join(process.env.LONGHAUL_TEST_REAL_HOME, ".pi", "agent", "logs");\n` +
			`mkdirSync(logs);\nappendFileSync(join(logs, "compaction-state.jsonl"), ${JSON.stringify(RECORD + "\n")});`,
	);
	try {
		assert.equal(run.status, 1, run.stdout + run.stderr);
		assert.match(run.stderr, /the real HOME was touched/);
		assert.ok(run.stderr.includes(`changed ${join(real, ".pi", "agent", "logs", "compaction-state.jsonl")}`), run.stderr);
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
});

test("a suite that writes only in the scratch dirs passes and leaves the real HOME as it was", () => {
	const { run, real, root } = innerRun(
		`const logs = join(process.env.PI_CODING_AGENT_DIR, "logs");\n` +
			`mkdirSync(logs);\nappendFileSync(join(logs, "compaction-state.jsonl"), ${JSON.stringify(RECORD + "\n")});`,
	);
	try {
		assert.equal(run.status, 0, run.stdout + run.stderr);
		assert.doesNotMatch(run.stderr, /real HOME/);
		assert.deepEqual(readdirSync(join(real, ".pi", "agent")), []);
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
});

test("this suite itself runs with HOME and pi's agent dir in the scratch dirs", () => {
	assert.ok(process.env.LONGHAUL_TEST_SCRATCH, "run through testing/isolated.mjs (npm test)");
	assert.ok(process.env.HOME.startsWith(process.env.LONGHAUL_TEST_SCRATCH));
	assert.ok(process.env.PI_CODING_AGENT_DIR.startsWith(process.env.LONGHAUL_TEST_SCRATCH));
	assert.ok(process.env.XDG_RUNTIME_DIR.startsWith(process.env.LONGHAUL_TEST_SCRATCH));
});

test("inside the agent dir the user's own pi at work is no change", () => {
	const home = mkdtempSync(join(tmpdir(), "lh-guard-home-"));
	const agent = join(home, ".pi", "agent");
	mkdirSync(join(agent, "sessions", "--home-me-proj--"), { recursive: true });
	const places = realPlaces({ HOME: home }, home);
	const before = snapshot(places);
	try {
		writeFileSync(join(agent, "sessions", "--home-me-proj--", "s.jsonl"), "{}\n");
		writeFileSync(join(agent, "auth.json"), "{}");
		mkdirSync(join(agent, "logs"));
		writeFileSync(join(agent, "logs", "compaction-state.jsonl"), `${JSON.stringify({ session: { cwd: "/home/me/proj" } })}\n`);
		assert.deepEqual(compare(before, snapshot(places)), []);
		writeFileSync(join(agent, "settings.json"), JSON.stringify({ packages: ["../longhaul"] }));
		assert.deepEqual(
			compare(before, snapshot(places)).map((line) => line.split(": ")[0]),
			[`changed ${join(agent, "settings.json")}`],
		);
	} finally {
		rmSync(home, { recursive: true, force: true });
	}
});

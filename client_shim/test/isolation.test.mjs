// The test runner's HOME guard (testing/isolated.mjs): a suite that writes into the real agent dir fails, naming
// the file; one that stays in the scratch dirs passes. The "real" HOME here is a directory made by the test.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { leftovers, realPlaces, sessionSlug } from "../testing/isolated.mjs";

const RUNNER = new URL("../testing/isolated.mjs", import.meta.url).pathname;

function innerRun(body) {
	const root = mkdtempSync(join(tmpdir(), "lh-guard-"));
	const real = join(root, "real-home");
	mkdirSync(join(real, ".pi", "agent"), { recursive: true });
	writeFileSync(
		join(root, "inner.test.mjs"),
		`import { appendFileSync, mkdirSync } from "node:fs";\nimport { tmpdir } from "node:os";\nimport { join } from "node:path";\nimport { test } from "node:test";\n` +
			`const RECORD = JSON.stringify({ event: "fallback", session: { cwd: join(tmpdir(), "proj") } });\n` +
			`test("inner", () => {\n${body}\n});\n`,
	);
	const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("XDG_") && !k.startsWith("LONGHAUL_TEST_")));
	delete env.PI_CODING_AGENT_DIR;
	env.HOME = real;
	const run = spawnSync(process.execPath, [RUNNER, join(root, "inner.test.mjs")], { env, encoding: "utf8" });
	return { run, real, root };
}

test("a suite that appends a record of its own session to the real record log fails and names the file", () => {
	const { run, real, root } = innerRun(
		`const logs = join(process.env.LONGHAUL_TEST_REAL_HOME, ".pi", "agent", "logs");\n` +
			`mkdirSync(logs);\nappendFileSync(join(logs, "compaction-state.jsonl"), RECORD + "\\n");`,
	);
	try {
		assert.equal(run.status, 1, run.stdout + run.stderr);
		assert.match(run.stderr, /the real HOME was touched/);
		const log = join(real, ".pi", "agent", "logs", "compaction-state.jsonl");
		assert.ok(run.stderr.includes(`left by a test: 1 record(s) of a test's session in ${log}`), run.stderr);
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
});

test("a suite that writes only in the scratch dirs passes and leaves the real HOME as it was", () => {
	const { run, real, root } = innerRun(
		`const logs = join(process.env.PI_CODING_AGENT_DIR, "logs");\n` +
			`mkdirSync(logs);\nappendFileSync(join(logs, "compaction-state.jsonl"), RECORD + "\\n");`,
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
	assert.equal(tmpdir(), process.env.LONGHAUL_TEST_SCRATCH);
});

test("the user's own pi at work in the real agent dir is never counted; what names the test dir is", () => {
	const home = mkdtempSync(join(tmpdir(), "lh-guard-home-"));
	const agent = join(home, ".pi", "agent");
	const testDir = "/tmp/lh-node-tests-k3j2h1";
	const users = `${testDir}0/mine`; // shares the test dir's name as a prefix: still the user's
	const places = realPlaces({ HOME: home }, home);
	try {
		for (const cwd of [users, "/tmp/proj", "/home/me/proj"]) mkdirSync(join(agent, "sessions", sessionSlug(cwd)), { recursive: true });
		mkdirSync(join(agent, "logs"));
		const log = join(agent, "logs", "compaction-state.jsonl");
		writeFileSync(log, `${JSON.stringify({ session: { cwd: "/tmp/proj" } })}\n`);
		writeFileSync(join(agent, "settings.json"), JSON.stringify({ packages: ["../longhaul"] }));
		writeFileSync(join(agent, "auth.json"), "{}");
		assert.deepEqual(leftovers(places, [testDir]), []);
		mkdirSync(join(agent, "sessions", sessionSlug(`${testDir}/proj`)));
		writeFileSync(log, `${JSON.stringify({ session: { cwd: `${testDir}/proj` } })}\n`, { flag: "a" });
		assert.deepEqual(leftovers(places, [testDir]), [
			`a pi session of a test's working directory: ${join(agent, "sessions", "--tmp-lh-node-tests-k3j2h1-proj--")}`,
			`1 record(s) of a test's session in ${log}`,
		]);
	} finally {
		rmSync(home, { recursive: true, force: true });
	}
});

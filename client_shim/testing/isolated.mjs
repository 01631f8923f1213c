// Runs `node --test` with HOME, PI_CODING_AGENT_DIR, the XDG dirs and TMPDIR pointed at a scratch directory,
// then fails the run if a test left something in the user's real places anyway.
//
// Why: the shim appends a `fallback` record to <agent dir>/logs when the daemon is down, and pi's agent dir comes
// from HOME; `npm test` once put two such records in the user's real log. The child (and every test file node
// spawns) inherits the scratch environment, so nothing reaches the real places unless a test names them itself.
// Afterwards, as tests/home_guard.py does on the Python side, only entries that name this run's scratch dir
// count: a pi session of a working directory there, a record-log line or pi's settings mentioning it, a
// Longhaul unit, binary or shim file whose text or link names it. The scratch dir's name is random and new, so
// whatever the user does in their own HOME during the run (pi in a project under /tmp included) never counts.
//
// Usage: node testing/isolated.mjs [node --test arguments…]   (package.json's "test" script)
import { spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join, relative, sep } from "node:path";

const LOG_NAME = "compaction-state.jsonl";
const TEMP = tmpdir();
const MAX_READ = 1024 * 1024;
// NODE_TEST_CONTEXT too: set inside a test file, it would make the child's `node --test` refuse to run.
const DROPPED = ["LONGHAUL_SOCKET", "PI_COMPACT_STATE_DEBUG", "PI_COMPACTOR", "LONGHAUL_SHIM_DEADLINE_MS", "NODE_TEST_CONTEXT"];

/** The real places for this environment (the passwd home too, should code bypass $HOME). */
export function realPlaces(env, passwdHome = userInfo().homedir) {
	const uid = typeof process.getuid === "function" ? process.getuid() : "unknown";
	const homes = [...new Set([env.HOME, passwdHome].filter(Boolean))];
	const agents = env.PI_CODING_AGENT_DIR ? [env.PI_CODING_AGENT_DIR] : [];
	const owned = [`/tmp/longhaul-${uid}`];
	if (env.XDG_RUNTIME_DIR) owned.push(join(env.XDG_RUNTIME_DIR, "longhaul"));
	for (const home of homes) {
		const config = env.XDG_CONFIG_HOME || join(home, ".config");
		const data = env.XDG_DATA_HOME || join(home, ".local", "share");
		agents.push(join(home, ".pi", "agent"));
		owned.push(join(config, "systemd", "user"), join(data, "longhaul"), join(home, ".local", "bin"));
	}
	return { agents: [...new Set(agents)], owned: [...new Set(owned)], homes };
}

function* walk(root) {
	let info;
	try {
		info = lstatSync(root);
	} catch {
		return;
	}
	yield root;
	if (!info.isDirectory()) return;
	let names = [];
	try {
		names = readdirSync(root);
	} catch {
		return;
	}
	for (const name of names) yield* walk(join(root, name));
}

/** pi 0.73.1's session directory name for a working directory (`/tmp/x` -> `--tmp-x--`). */
export function sessionSlug(cwd) {
	return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

function text(path) {
	try {
		const info = lstatSync(path);
		if (info.isSymbolicLink()) return readlinkSync(path);
		if (info.isFile()) return readFileSync(path).subarray(0, MAX_READ).toString("utf8");
	} catch {
		// gone or unreadable: names nothing
	}
	return "";
}

function escapeRegExp(text) {
	return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * What a test left in the real places: only entries naming one of `testDirs` (this run's scratch dir), whose
 * names are random and new, so nothing the user does in their own HOME during the run can count.
 */
export function leftovers(places, testDirs) {
	const found = [];
	if (testDirs.length === 0) return found;
	const pattern = new RegExp(`(${testDirs.map(escapeRegExp).join("|")})(?=$|[/\\s"'])`, "m");
	const names = (value) => value.match(pattern)?.[1];
	const slugs = testDirs.map((dir) => sessionSlug(dir).slice(0, -1));
	for (const agent of places.agents) {
		let sessions = [];
		try {
			sessions = readdirSync(join(agent, "sessions")).sort();
		} catch {
			// no sessions dir
		}
		for (const name of sessions) {
			if (slugs.some((slug) => name.startsWith(slug))) found.push(`a pi session of a test's working directory: ${join(agent, "sessions", name)}`);
		}
		for (const log of [join(agent, "logs", LOG_NAME), join(agent, "logs", `${LOG_NAME}.1`)]) {
			const lines = text(log).split("\n").filter((line) => names(line));
			if (lines.length > 0) found.push(`${lines.length} record(s) of a test's session in ${log}`);
		}
		if (names(text(join(agent, "settings.json")))) found.push(`pi's settings name a test's directory: ${join(agent, "settings.json")}`);
	}
	for (const root of places.owned) {
		const shared = root.endsWith(`${sep}bin`) || root.endsWith(`${sep}user`); // only our entries count there
		for (const path of walk(root)) {
			if (shared && !relative(root, path).includes("longhaul")) continue;
			const named = names(text(path));
			if (named) found.push(`${path} names the test directory ${named}`);
		}
	}
	return found;
}

/** The scratch environment: the real values kept as LONGHAUL_TEST_REAL_* for tests of this guard. */
function scratchEnv(env, scratch) {
	const home = join(scratch, "home");
	const agent = join(home, ".pi", "agent");
	mkdirSync(agent, { recursive: true, mode: 0o700 });
	mkdirSync(join(scratch, "run"), { mode: 0o700 });
	const out = { ...env, LONGHAUL_TEST_SCRATCH: scratch };
	for (const name of DROPPED) delete out[name];
	for (const name of ["HOME", "PI_CODING_AGENT_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"]) {
		out[`LONGHAUL_TEST_REAL_${name}`] = env[name] ?? "";
	}
	return Object.assign(out, {
		HOME: home,
		PI_CODING_AGENT_DIR: agent,
		XDG_CONFIG_HOME: join(home, ".config"),
		XDG_DATA_HOME: join(home, ".local", "share"),
		XDG_STATE_HOME: join(home, ".local", "state"),
		XDG_CACHE_HOME: join(home, ".cache"),
		XDG_RUNTIME_DIR: join(scratch, "run"),
		TMPDIR: scratch, // every temp dir a test makes is inside the scratch dir, so what names it is a test's
	});
}

function main(args) {
	const places = realPlaces(process.env);
	const scratch = mkdtempSync(join(TEMP, "lh-node-tests-"));
	let status = 1;
	let problems = [];
	try {
		const run = spawnSync(process.execPath, ["--test", ...args], { env: scratchEnv(process.env, scratch), stdio: "inherit" });
		status = run.status ?? 1;
		problems = leftovers(places, [scratch]);
	} finally {
		rmSync(scratch, { recursive: true, force: true });
	}
	if (problems.length > 0) {
		console.error("\nthe real HOME was touched (tests must use the scratch dirs):");
		for (const line of problems) console.error(`  left by a test: ${line}`);
		status = status || 1;
	}
	return status;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));

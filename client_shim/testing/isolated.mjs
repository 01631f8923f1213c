// Runs `node --test` with HOME, PI_CODING_AGENT_DIR and the XDG dirs pointed at a scratch directory, then fails
// the run if the user's real ones changed anyway.
//
// Why: the shim appends a `fallback` record to <agent dir>/logs when the daemon is down, and pi's agent dir comes
// from HOME; `npm test` once put two such records in the user's real log. The child (and every test file node
// spawns) inherits the scratch environment. Afterwards the real places are compared with how they were before,
// by the rules of tests/home_guard.py on the Python side: Longhaul's own places (socket dirs, units, the shim
// copy) must not change at all; inside pi's agent dir, which the user's own pi may be writing meanwhile, only
// what a test would leave counts (sessions and record-log lines of a working directory under the temp dir, a
// change to the packages pi loads, any other new or changed file but auth.json).
//
// Usage: node testing/isolated.mjs [node --test arguments…]   (package.json's "test" script)
import { spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join, relative, sep } from "node:path";

const LOG_NAME = "compaction-state.jsonl";
const TEMP = tmpdir();
const TEMP_SLUG = `--${TEMP.replace(/^\/+|\/+$/g, "").split("/").join("-")}-`; // pi's session dir slug prefix
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

function stamp(path) {
	try {
		const info = lstatSync(path);
		return info.isDirectory() ? "directory" : `${info.mode.toString(8)}:${info.size}:${info.mtimeMs}`;
	} catch {
		return "gone";
	}
}

function tempRecords(path) {
	let count = 0;
	let text = "";
	try {
		text = readFileSync(path, "utf8");
	} catch {
		return 0;
	}
	for (const line of text.split("\n")) {
		try {
			const cwd = JSON.parse(line)?.session?.cwd;
			if (typeof cwd === "string" && cwd.startsWith(`${TEMP}/`)) count++;
		} catch {
			// not a record: nothing a test wrote through the shim
		}
	}
	return count;
}

function loadedPackages(path) {
	try {
		const settings = JSON.parse(readFileSync(path, "utf8"));
		return JSON.stringify([settings?.packages ?? null, settings?.extensions ?? null]);
	} catch (err) {
		return err?.code === "ENOENT" ? JSON.stringify([null, null]) : "unreadable";
	}
}

/** What the comparison looks at, path by path. */
export function snapshot(places) {
	const seen = new Map();
	for (const root of places.owned) {
		const shared = root.endsWith(`${sep}bin`) || root.endsWith(`${sep}user`); // only our entries count there
		for (const path of walk(root)) {
			if (!shared || relative(root, path).includes("longhaul")) seen.set(path, stamp(path));
		}
	}
	for (const agent of places.agents) {
		const logs = join(agent, "logs");
		for (const log of [join(logs, LOG_NAME), join(logs, `${LOG_NAME}.1`)]) {
			seen.set(log, `${tempRecords(log)} record(s) of a session under the temp dir`);
		}
		seen.set(join(agent, "settings.json"), `packages and extensions ${loadedPackages(join(agent, "settings.json"))}`);
		for (const path of walk(agent)) {
			const parts = relative(agent, path).split(sep);
			if (["auth.json", "settings.json"].includes(parts[0]) || path.startsWith(join(logs, LOG_NAME))) continue;
			if (parts[0] === "sessions" && parts.length > 1 && !parts[1].startsWith(TEMP_SLUG)) continue;
			if (parts.length === 1 && ["", "logs", "sessions"].includes(parts[0])) continue;
			seen.set(path, stamp(path));
		}
	}
	for (const home of places.homes) {
		try {
			seen.set(`${home}/ (entries)`, readdirSync(home).sort().join(" "));
		} catch {
			seen.set(`${home}/ (entries)`, "unreadable");
		}
	}
	return seen;
}

/** One line per difference. */
export function compare(before, after) {
	const lines = [];
	for (const path of [...after.keys()].sort()) if (!before.has(path)) lines.push(`created ${path}`);
	for (const path of [...before.keys()].sort()) {
		if (!after.has(path)) lines.push(`removed ${path}`);
		else if (before.get(path) !== after.get(path)) lines.push(`changed ${path}: ${before.get(path)} -> ${after.get(path)}`);
	}
	return lines;
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
	});
}

function main(args) {
	const places = realPlaces(process.env);
	const before = snapshot(places);
	const scratch = mkdtempSync(join(TEMP, "lh-node-tests-"));
	let status = 1;
	try {
		const run = spawnSync(process.execPath, ["--test", ...args], { env: scratchEnv(process.env, scratch), stdio: "inherit" });
		status = run.status ?? 1;
	} finally {
		rmSync(scratch, { recursive: true, force: true });
	}
	const problems = compare(before, snapshot(places));
	if (problems.length > 0) {
		console.error("\nthe real HOME was touched (tests must use the scratch dirs):");
		for (const line of problems) console.error(`  ${line}`);
		status = status || 1;
	}
	return status;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));

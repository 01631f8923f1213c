/**
 * Credentials for the daemon's model calls, resolved with pi's own model registry for one pass (PASS-22, CONFIG-8).
 *
 * The daemon owns routing but cannot read pi's auth; pi's registry can. So per compaction the shim resolves the
 * session model and the configured summarizer and sends both with `compact`. Nothing here throws or logs: every
 * failure becomes a `problem` code the daemon records, and keys only ever go into the request object.
 */
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { AbortedError, call, socketPath } from "./rpc.ts";
import { type ModelFacts, modelFacts } from "./serialize.ts";

/** protocol.py ModelCredentials; `oauth`: pi holds an OAuth login (`/login`) for the provider. */
export interface ModelCredentials {
	apiKey: string | null;
	headers: Record<string, string>;
	oauth: boolean;
}

/** protocol.py SummarizerRoute. */
export interface SummarizerRoute {
	spec: string;
	model: ModelFacts | null;
	credentials: ModelCredentials | null;
	problem: "unknown-model" | "no-credentials" | "resolve-error" | null;
}

/** What `compact` carries besides the event: the session model's credentials and the summarizer route. */
export interface ResolvedModels {
	credentials: ModelCredentials | null;
	summarizer: SummarizerRoute | null;
}

type PiModel = NonNullable<ExtensionContext["model"]>;
type Registry = Pick<ExtensionContext["modelRegistry"], "find" | "getApiKeyAndHeaders"> & {
	authStorage?: { get(provider: string): { type?: unknown } | undefined };
};

/** Whether pi's auth storage holds an OAuth login for `provider`: the daemon then never calls it directly. */
function oauthLogin(registry: Registry, provider: string): boolean {
	try {
		return registry.authStorage?.get(provider)?.type === "oauth";
	} catch {
		return false;
	}
}

/** The registry and session model, taken from ctx before any await (ctx may go stale during the pass). */
export interface PiModels {
	registry: Registry | undefined;
	model: PiModel | undefined;
}

/** A registry lookup that runs a configured command (`"!cmd"` keys) must not hold the compaction forever. */
export const RESOLVE_TIMEOUT_MS = 10_000;

class ResolveTimeout extends Error {
	override name = "ResolveTimeout";
}

export function piModels(ctx: ExtensionContext): PiModels {
	try {
		return { registry: ctx.modelRegistry, model: ctx.model };
	} catch {
		return { registry: undefined, model: undefined }; // stale ctx: nothing to resolve
	}
}

function bounded<T>(work: Promise<T>, ms: number): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new ResolveTimeout()), ms);
	});
	return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** `provider/modelId`, split at the first "/" (model ids such as `org/model` keep their own slashes). */
export function splitSpec(spec: string): { provider: string; id: string } | null {
	const at = spec.indexOf("/");
	if (at <= 0 || at === spec.length - 1) return null;
	return { provider: spec.slice(0, at), id: spec.slice(at + 1) };
}

/**
 * pi's answer for one model: credentials, or null when pi has no usable auth for it. Throws only when the registry
 * itself throws or takes too long (the caller turns that into `resolve-error`).
 */
async function resolveAuth(registry: Registry, model: PiModel, timeoutMs: number): Promise<ModelCredentials | null> {
	const auth = await bounded(Promise.resolve().then(() => registry.getApiKeyAndHeaders(model)), timeoutMs);
	if (!auth || auth.ok !== true) return null;
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(auth.headers ?? {})) {
		if (typeof value === "string") headers[name] = value;
	}
	const apiKey = typeof auth.apiKey === "string" && auth.apiKey ? auth.apiKey : null;
	// pi refuses to compact without auth; a model with neither a key nor auth headers cannot be called either.
	if (apiKey === null && Object.keys(headers).length === 0) return null;
	return { apiKey, headers, oauth: oauthLogin(registry, model.provider) };
}

/** The session model's credentials; null when there is no model or pi has none for it. */
async function sessionCredentials(pi: PiModels, timeoutMs: number): Promise<ModelCredentials | null> {
	if (!pi.registry || !pi.model) return null;
	try {
		return await resolveAuth(pi.registry, pi.model, timeoutMs);
	} catch {
		return null; // the daemon then calls without a key and the pass falls back on its own
	}
}

/** The configured summarizer, resolved through pi's registry; a failure names its problem instead of throwing. */
export async function summarizerRoute(pi: PiModels, spec: string, timeoutMs = RESOLVE_TIMEOUT_MS): Promise<SummarizerRoute> {
	const failed = (problem: NonNullable<SummarizerRoute["problem"]>): SummarizerRoute => ({
		spec,
		model: null,
		credentials: null,
		problem,
	});
	const parts = splitSpec(spec);
	if (!parts) return failed("unknown-model");
	if (!pi.registry) return failed("resolve-error");
	let model: PiModel | undefined;
	try {
		model = pi.registry.find(parts.provider, parts.id);
	} catch {
		return failed("resolve-error");
	}
	const facts = model ? modelFacts(model) : null;
	if (!model || !facts) return failed("unknown-model");
	let credentials: ModelCredentials | null;
	try {
		credentials = await resolveAuth(pi.registry, model, timeoutMs);
	} catch {
		return failed("resolve-error");
	}
	if (!credentials) return failed("no-credentials");
	return { spec, model: facts, credentials, problem: null };
}

/**
 * `work`, or an AbortedError as soon as `signal` aborts (PASS-18): a registry lookup that runs a slow key command
 * cannot be cancelled, but pi need not wait for it to get its `{cancel: true}`.
 */
export function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
	if (!signal) return work;
	if (signal.aborted) return Promise.reject(new AbortedError("compaction aborted by pi (event.signal)"));
	let onAbort: (() => void) | undefined;
	const aborted = new Promise<never>((_, reject) => {
		onAbort = () => reject(new AbortedError("compaction aborted by pi (event.signal)"));
		signal.addEventListener("abort", onAbort, { once: true });
	});
	return Promise.race([work, aborted]).finally(() => {
		if (onAbort) signal.removeEventListener("abort", onAbort);
	});
}

/**
 * Both parts of `compact`'s model access; `spec` is the summarizer the daemon named for this pass, if any. An abort
 * of `signal` rejects with AbortedError at once, whatever the registry is still doing.
 */
export async function resolveModels(
	pi: PiModels,
	spec: string | null,
	timeoutMs = RESOLVE_TIMEOUT_MS,
	signal?: AbortSignal,
): Promise<ResolvedModels> {
	const both = Promise.all([
		sessionCredentials(pi, timeoutMs),
		spec ? summarizerRoute(pi, spec, timeoutMs) : Promise.resolve(null),
	]);
	const [credentials, summarizer] = await untilAborted(both, signal);
	return { credentials, summarizer };
}

/** How long the shim waits for `route` before compacting without a summarizer: the daemon answers from a file. */
export const ROUTE_TIMEOUT_MS = 2_000;

/** The summarizer spec the daemon reads from longhaul.json now; null when none is set or the daemon did not say. */
export async function summarizerSpec(session: object, signal?: AbortSignal, timeoutMs = ROUTE_TIMEOUT_MS): Promise<string | null> {
	try {
		const reply = await call("route", { session }, { socketPath: socketPath(), timeoutMs, signal });
		const spec = (reply as { summarizer?: unknown } | null)?.summarizer;
		return typeof spec === "string" && spec ? spec : null;
	} catch (err) {
		if (err instanceof AbortedError) throw err; // PASS-18: pi cancelled; nothing more is asked
		return null; // an older daemon or a slow one: the pass runs on the session model
	}
}

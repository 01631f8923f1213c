// What pi-ai itself does, for the Python tests: `models` prints pi-ai's built-in model list (models.generated.js, as
// pi's registry loads it); `requests` reads cases from stdin and has pi-ai's own streamSimple send each one, in
// order, to the base URL the case names (a capturing loopback server), with the shim's payload merge in onPayload.
// Run with LONGHAUL_SHIM_DIR set to client_shim (its node_modules hold pi 0.73.1).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const shim = process.env.LONGHAUL_SHIM_DIR;
if (!shim) throw new Error("LONGHAUL_SHIM_DIR is not set");
const piAi = await import(pathToFileURL(join(shim, "node_modules/@mariozechner/pi-ai/dist/index.js")).href);

async function readStdin() {
	const parts = [];
	for await (const chunk of process.stdin) parts.push(chunk);
	return JSON.parse(Buffer.concat(parts).toString("utf8"));
}

if (process.argv[2] === "models") {
	const models = piAi.getProviders().flatMap((provider) => piAi.getModels(provider));
	process.stdout.write(JSON.stringify({ providers: piAi.getProviders(), models }));
} else if (process.argv[2] === "requests") {
	const { createJiti } = await import(pathToFileURL(join(shim, "node_modules/jiti/lib/jiti.mjs")).href);
	const jiti = createJiti(import.meta.url);
	const { mergePayload } = await jiti.import(join(shim, "lib/modelcall.ts"));
	const { cases } = await readStdin();
	const out = [];
	for (const c of cases) {
		const context = { systemPrompt: c.system, messages: [{ role: "user", content: c.text, timestamp: 0 }] };
		const stream = piAi.streamSimple(c.model, context, {
			apiKey: c.apiKey,
			headers: c.headers,
			maxTokens: c.maxTokens,
			...(c.reasoning ? { reasoning: c.reasoning } : {}),
			maxRetries: 0,
			...(c.payload ? { onPayload: (params) => mergePayload(params, c.payload) } : {}),
		});
		const result = await stream.result();
		out.push({ stopReason: result.stopReason });
	}
	process.stdout.write(JSON.stringify(out));
} else {
	throw new Error("usage: pi_ai_probe.mjs models|requests");
}

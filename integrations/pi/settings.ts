/**
 * settings.ts - the "dolsot" key of pi's settings (the project's
 * .pi/settings.json over the global ~/.pi/agent/settings.json, key by key),
 * read when pi loads the extension, and the dolsot command line and
 * environment it makes.
 */
import { getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";

/** What the README's "Using dolsot from pi" documents, key by key. */
export interface DolsotSettings {
	/** The dolsot binary: a path, or a name looked up on PATH. */
	binary: string;
	/** MODULE:ALIAS, as --toolbox takes them. */
	toolboxes: string[];
	sandbox: boolean;
	/** HOST:VIRTUAL[:MODE], as --mount takes them. */
	mounts: string[];
	/** NAME or NAME=VALUE, as --env takes them (what a sandboxed cell sees). */
	env: string[];
	/** --memory, --max-procs, --max-file-size, --cpu-seconds, --recursion-limit. */
	limits: Record<string, string | number>;
	/** Seconds a cell may run when the call names none (dolsot's default: 20). */
	timeout?: number;
	/** DOLSOT_CACHE_DIR for every call: where sessions are kept. */
	cacheDir?: string;
	/** The default session is PREFIX-<pi session id>. */
	sessionPrefix: string;
	/** Characters dolsot keeps of stdout, stderr, the value and the error
	 *  (DOLSOT_MAX_OUTPUT) before the tool bounds what the model sees. */
	maxOutput: number;
	/** The dolsot namespace of every call, --describe and /python: the
	 *  setting, else DOLSOT_NAMESPACE, else DEFAULT_NAMESPACE. */
	namespace: string;
	/** Further dolsot flags for every call and --describe, as they are
	 *  (a flag the keys above do not cover). */
	args: string[];
}

/** pi's own namespace, as `dolsot mcp` has `mcp`: a `/python reset all`
 *  (or a model's session id) never reaches the command line's sessions. */
export const DEFAULT_NAMESPACE = "pi";

export const LIMIT_KEYS = ["memory", "max-procs", "max-file-size", "cpu-seconds", "recursion-limit"];

const DEFAULTS: DolsotSettings = {
	binary: "dolsot",
	toolboxes: [],
	sandbox: false,
	mounts: [],
	env: [],
	limits: {},
	sessionPrefix: "pi",
	maxOutput: 20_000_000,
	namespace: DEFAULT_NAMESPACE,
	args: [],
};

function strings(v: unknown, key: string): string[] {
	if (v === undefined) return [];
	if (!Array.isArray(v) || v.some((s) => typeof s !== "string"))
		throw new Error(`settings: dolsot.${key} must be a list of strings`);
	return v as string[];
}

/** The merged "dolsot" object, checked; throws saying which key is wrong. */
export function readSettings(cwd: string): DolsotSettings {
	const manager = SettingsManager.create(cwd, getAgentDir());
	const pick = (s: unknown) => ((s as Record<string, unknown>)?.dolsot ?? {}) as Record<string, unknown>;
	const raw = { ...pick(manager.getGlobalSettings()), ...pick(manager.getProjectSettings()) };
	const out: DolsotSettings = { ...DEFAULTS, limits: {} };
	// An empty DOLSOT_NAMESPACE counts as unset, as dolsot counts it.
	if (process.env.DOLSOT_NAMESPACE) out.namespace = process.env.DOLSOT_NAMESPACE;

	if (raw.binary !== undefined) {
		if (typeof raw.binary !== "string" || !raw.binary) throw new Error("settings: dolsot.binary must be a path");
		out.binary = raw.binary;
	}
	out.toolboxes = strings(raw.toolboxes, "toolboxes");
	out.mounts = strings(raw.mounts, "mounts");
	out.env = strings(raw.env, "env");
	out.args = strings(raw.args, "args");
	if (raw.sandbox !== undefined) {
		if (typeof raw.sandbox !== "boolean") throw new Error("settings: dolsot.sandbox must be true or false");
		out.sandbox = raw.sandbox;
	}
	if (raw.limits !== undefined) {
		if (typeof raw.limits !== "object" || raw.limits === null) throw new Error("settings: dolsot.limits must be an object");
		for (const [k, v] of Object.entries(raw.limits)) {
			if (!LIMIT_KEYS.includes(k)) throw new Error(`settings: dolsot.limits.${k} is not one of ${LIMIT_KEYS.join(", ")}`);
			if (typeof v !== "string" && typeof v !== "number") throw new Error(`settings: dolsot.limits.${k} must be a number or a size`);
			out.limits[k] = v;
		}
	}
	for (const key of ["timeout", "maxOutput"] as const) {
		const v = raw[key];
		if (v === undefined) continue;
		if (typeof v !== "number" || !(v >= 0)) throw new Error(`settings: dolsot.${key} must be a number`);
		out[key] = v;
	}
	for (const key of ["cacheDir", "sessionPrefix", "namespace"] as const) {
		const v = raw[key];
		if (v === undefined) continue;
		if (typeof v !== "string" || !v) throw new Error(`settings: dolsot.${key} must be a string`);
		out[key] = v;
	}
	return out;
}

/** The flags of every dolsot command these settings run: the namespace
 *  (dolsot says what is wrong with a bad one). */
export function namespaceArgs(s: DolsotSettings): string[] {
	return ["--namespace", s.namespace];
}

/** The flags every call of these settings takes (the namespace, toolboxes,
 *  sandbox, mounts, environment, limits), for a cell and for --describe alike. */
export function environmentArgs(s: DolsotSettings): string[] {
	const args: string[] = namespaceArgs(s);
	for (const t of s.toolboxes) args.push("--toolbox", t);
	if (s.sandbox) args.push("--sandbox");
	for (const m of s.mounts) args.push("--mount", m);
	for (const e of s.env) args.push("--env", e);
	for (const [k, v] of Object.entries(s.limits)) args.push(`--${k}`, String(v));
	args.push(...s.args);
	return args;
}

/** The process environment of a dolsot call. */
export function processEnv(s: DolsotSettings): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = { ...process.env, DOLSOT_MAX_OUTPUT: String(s.maxOutput) };
	if (s.cacheDir) env.DOLSOT_CACHE_DIR = s.cacheDir;
	return env;
}

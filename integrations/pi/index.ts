/**
 * dolsot for pi: a `python` tool that runs each cell in a persistent
 * dolsot session (one per pi session unless the call names one), and a
 * `/python` command that lists this pi session's dolsot sessions and
 * resets one.  Settings: the "dolsot" key of pi's settings (settings.ts);
 * the README's "Using dolsot from pi" says what each does.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { describeText } from "./describe.ts";
import { MAX_BYTES, MAX_LINES, toolResult } from "./result.ts";
import { type Progress, runDolsot } from "./run.ts";
import { type DolsotSettings, environmentArgs, namespaceArgs, processEnv, readSettings } from "./settings.ts";

const TOOL = "python";

const Params = Type.Object({
	code: Type.String({ description: "The Python cell to run" }),
	session: Type.Optional(
		Type.String({
			description:
				"The dolsot session to run it in (letters, digits, '.', '_', '-'); by default this conversation's own session",
		}),
	),
	timeout: Type.Optional(Type.Number({ description: "Seconds the cell may run before it is killed and rolled back" })),
});

function defaultSession(ctx: ExtensionContext, s: DolsotSettings): string {
	return `${s.sessionPrefix}-${ctx.sessionManager.getSessionId()}`;
}

/** The dolsot sessions this pi session's python calls used, in order of first use. */
function sessionsUsed(ctx: ExtensionContext, s: DolsotSettings): string[] {
	const seen = new Set<string>([defaultSession(ctx, s)]);
	for (const e of ctx.sessionManager.getBranch() as any[]) {
		const m = e.type === "message" ? e.message : undefined;
		if (m?.role === "toolResult" && m.toolName === TOOL && typeof m.details?.session === "string")
			seen.add(m.details.session);
	}
	return [...seen];
}

function seconds(ms: number): string {
	return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** The words dolsot said on stderr when it printed no --json object. */
function lastLines(stderr: string): string {
	return stderr.trim().split("\n").slice(-5).join("\n");
}

/** What pi shows while a cell runs: its output so far, then the time. */
function progressText(session: string, p: Progress): string {
	const status = `running in session ${session}: ${seconds(p.elapsedMs)}`;
	return p.output ? `${p.output}\n${status}` : status;
}

export default async function dolsot(pi: ExtensionAPI) {
	const cwd = process.cwd();
	let settingsError: string | undefined;
	let settings: DolsotSettings;
	try {
		settings = readSettings(cwd);
	} catch (e) {
		settingsError = (e as Error).message;
		settings = {} as DolsotSettings;
	}
	const environment = settingsError ? null : await describeText(settings, cwd);

	pi.registerTool({
		name: TOOL,
		label: "Python (dolsot)",
		description:
			"Run a cell of Python in a persistent session: variables, imports and functions stay between calls, " +
			"so load data once and build on it. The cell's output comes back, then the value of its last " +
			"expression, the error with its traceback when it raised, and the names the session holds. " +
			"A cell that raises keeps what earlier cells made; one that times out or is aborted is rolled back " +
			"(nothing it did is kept). Figures (matplotlib) come back as images. " +
			`Output is cut to its first and last lines past ${MAX_LINES} lines or ${MAX_BYTES / 1024} KB; ` +
			"the whole of it is then written to a file named in the result." +
			(environment ? `\n\n${environment}` : ""),
		promptSnippet: "Run Python in a persistent session (state kept between calls)",
		promptGuidelines: [
			"Use python for computation and data work in Python; state persists between python calls of this conversation.",
		],
		parameters: Params,
		executionMode: "sequential",
		async execute(_id, params, signal, onUpdate, ctx) {
			if (settingsError) throw new Error(settingsError);
			const session = params.session ?? defaultSession(ctx, settings);
			const args = ["--json-stream", "--session", session, ...environmentArgs(settings)];
			const timeout = params.timeout ?? settings.timeout;
			if (timeout !== undefined) args.push("--timeout", String(timeout));
			const run = await runDolsot({
				binary: settings.binary,
				args,
				stdin: params.code,
				env: processEnv(settings),
				cwd: ctx.cwd,
				signal,
				stream: true,
				onProgress: (p) =>
					onUpdate?.({
						content: [{ type: "text", text: progressText(session, p) }],
						details: { session, namespace: settings.namespace, elapsedMs: p.elapsedMs },
					}),
			});
			const before = run.output ? `${run.output}\n` : "";
			if (run.aborted) {
				const said = lastLines(run.stderr);
				throw new Error(
					`${before}Aborted: the cell was stopped after ${seconds(run.elapsedMs)} and session ${session} was rolled back ` +
						`to before it (nothing this cell did was kept).${said ? `\n${said}` : ""}`,
				);
			}
			let parsed: any;
			try {
				parsed = JSON.parse(run.stdout);
			} catch {
				const why = run.signal ? `was killed by ${run.signal}` : `exited with ${run.code}`;
				throw new Error(`${before}dolsot ${why} without a result:\n${lastLines(run.stderr) || "(nothing on stderr)"}`);
			}
			return toolResult(parsed, session, settings.namespace);
		},
	});

	// A failed cell keeps its text and its figures; pi marks it an error.
	pi.on("tool_result", (event) => {
		if (event.toolName === TOOL && (event.details as any)?.failed) return { isError: true };
	});

	/** A --json command of dolsot's (not a cell): its object, or throws its words. */
	async function dolsotJson(args: string[], cwd: string): Promise<any> {
		const r = await runDolsot({
			binary: settings.binary,
			args: ["--json", ...namespaceArgs(settings), ...args],
			stdin: "",
			env: processEnv(settings),
			cwd,
		});
		try {
			if (r.code === 0) return JSON.parse(r.stdout);
		} catch {
			// said below
		}
		throw new Error(`dolsot ${args.join(" ")} failed: ${lastLines(r.stderr) || `exit ${r.code}`}`);
	}

	pi.registerCommand("python", {
		description:
			"List this conversation's dolsot sessions, or reset one: /python reset [SESSION], or all of pi's namespace: /python reset all",
		handler: async (args, ctx) => {
			const words = args.trim().split(/\s+/).filter((w) => w);
			try {
				if (settingsError) throw new Error(settingsError);
				if (words[0] === "reset" && words.length <= 2) {
					const id = words[1] ?? defaultSession(ctx, settings);
					const done = await dolsotJson(["--reset", id], ctx.cwd);
					const where = id === "all" ? ` of namespace ${settings.namespace}` : "";
					ctx.ui.notify(`reset ${id}${where}: ${done.removed} removed`, "info");
				} else if (words.length === 0) {
					const stored = new Map<string, any>();
					for (const s of (await dolsotJson(["--list-sessions"], ctx.cwd)).sessions) stored.set(s.id, s);
					const lines = sessionsUsed(ctx, settings).map((id) => {
						const s = stored.get(id);
						return s ? `${id}: ${s.size} bytes, last used ${s.last_used}` : `${id}: not stored`;
					});
					ctx.ui.notify(
						`dolsot sessions of this conversation (namespace ${settings.namespace}):\n${lines.join("\n")}`,
						"info",
					);
				} else {
					ctx.ui.notify("usage: /python, or /python reset [SESSION|all]", "error");
				}
			} catch (e) {
				ctx.ui.notify((e as Error).message, "error");
			}
		},
	});
}

/**
 * describe.ts - the python tool's picture of its environment, from
 * `dolsot --json --describe` with the settings' flags: the toolboxes and
 * their functions, the sandbox, the mounts and the limits.
 */
import { runDolsot } from "./run.ts";
import { type DolsotSettings, environmentArgs, processEnv } from "./settings.ts";

/** --describe is quick; past this the tool goes without it. */
const DESCRIBE_TIMEOUT_MS = 30_000;
/** At most this many functions of a toolbox are listed by signature. */
const FUNCTIONS_MAX = 40;

// biome-ignore lint: the describe object of schema/result.schema.json
type Json = any;

function toolboxLines(t: Json): string[] {
	const out = [`- ${t.alias} (module ${t.module})${t.doc ? `: ${t.doc.split("\n")[0]}` : ""}`];
	for (const f of (t.functions ?? []).slice(0, FUNCTIONS_MAX))
		out.push(`    ${t.alias}.${f.name}${f.signature}${f.doc ? `: ${f.doc.split("\n")[0]}` : ""}`);
	for (const c of t.classes ?? []) out.push(`    class ${t.alias}.${c.name}${c.doc ? `: ${c.doc.split("\n")[0]}` : ""}`);
	const more = Math.max(0, (t.functions ?? []).length - FUNCTIONS_MAX) + (t.omitted ?? 0);
	if (more) out.push(`    (${more} more: call ${t.alias}.help() or dir(${t.alias}))`);
	return out;
}

function limitLines(limits: Json): string {
	const parts = [`timeout ${limits.timeout} s a cell`];
	for (const [k, v] of Object.entries(limits))
		if (k !== "timeout" && v !== null && v !== undefined) parts.push(`${k} ${v}`);
	return `Limits: ${parts.join(", ")}.`;
}

/** The text, or null when dolsot cannot describe (the tool still works,
 *  and its calls then say what is wrong). */
export async function describeText(s: DolsotSettings, cwd: string): Promise<string | null> {
	const abort = new AbortController();
	const timer = setTimeout(() => abort.abort(), DESCRIBE_TIMEOUT_MS);
	try {
		const r = await runDolsot({
			binary: s.binary,
			args: ["--json", "--describe", ...environmentArgs(s)],
			stdin: "",
			env: processEnv(s),
			cwd,
			signal: abort.signal,
		});
		if (r.code !== 0) return null;
		const d: Json = JSON.parse(r.stdout);
		const lines: string[] = [];
		if (d.toolboxes?.length) {
			lines.push("Toolboxes, imported under their aliases in every cell:");
			for (const t of d.toolboxes) lines.push(...toolboxLines(t));
		}
		lines.push(
			d.sandbox
				? "Cells run sandboxed: no network, and of the host's files only the mounts below."
				: "Cells run as the user, with the host's files and network.",
		);
		for (const m of d.mounts ?? []) lines.push(`- mount ${m.path} (${m.mode})${m.error ? `: ${m.error}` : ""}`);
		if (d.limits) lines.push(limitLines(d.limits));
		return lines.join("\n");
	} catch {
		return null;
	} finally {
		clearTimeout(timer);
	}
}

/**
 * result.ts - what the model gets from one cell: dolsot's --json object
 * (schema/result.schema.json) as text and images, bounded as pi bounds
 * one tool result (MAX_LINES lines, MAX_BYTES bytes), keeping the head and
 * the tail of a long output and saying what was cut and where it all is.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const MAX_LINES = 2000;
export const MAX_BYTES = 50 * 1024;
/** Room kept for the line that says what was cut. */
export const NOTE_ROOM = 400;

export interface TextPart {
	type: "text";
	text: string;
}
export interface ImagePart {
	type: "image";
	data: string;
	mimeType: string;
}

/** pi's details of a python call, for its UI and for /python. */
export interface CallDetails {
	session: string;
	/** The dolsot namespace the session is in. */
	namespace: string;
	status: string;
	exitCode: number;
	executionCount: number | null;
	state: string | null;
	held: string[] | null;
	timingsMs: Record<string, number | null> | null;
	figures: number;
	/** The whole text the model would have seen, when it was cut. */
	fullOutputPath?: string;
	cut?: { lines: number; bytes: number };
	/** The call failed (an exception, a timeout, a refusal): pi marks it an error. */
	failed: boolean;
}

interface Cut {
	text: string;
	lines: number;
	bytes: number;
}

/** text bounded to maxLines and maxBytes: its head and its tail, and in
 *  between one line saying how much was cut and where the whole is. */
export function headAndTail(text: string, maxLines: number, maxBytes: number, whole: () => string): Cut {
	const bytes = Buffer.byteLength(text, "utf8");
	const lines = text.split("\n");
	if (lines.length <= maxLines && bytes <= maxBytes) return { text, lines: 0, bytes: 0 };
	const half = Math.floor(Math.max(0, maxBytes - NOTE_ROOM) / 2);
	const keep = Math.max(2, maxLines - 1);
	const head = takeLines(lines, 0, 1, Math.ceil(keep / 2), half);
	const tail = takeLines(lines, lines.length - 1, -1, Math.floor(keep / 2), half, head.length);
	let partial = false;
	// A line longer than half the room: its start (and, alone, its end).
	if (head.length === 0) {
		head.push(cutBytes(lines[0], half, false));
		partial = true;
	}
	if (tail.length === 0) {
		tail.push(cutBytes(lines[lines.length - 1], half, true));
		partial = true;
	}
	const cutLines = Math.max(0, lines.length - head.length - tail.length);
	const kept = Buffer.byteLength(`${head.join("\n")}\n${tail.join("\n")}`, "utf8");
	const cutBytesN = Math.max(0, bytes - kept);
	const wholeLines = cutLines ? `${cutLines} of ${lines.length} lines` : "";
	const what =
		lines.length === 1
			? "the middle of its one line"
			: [wholeLines, partial ? "part of a long line" : ""].filter((w) => w).join(" and ");
	const shown = lines.length === 1 ? "its start and its end" : `lines 1-${head.length} and ${lines.length - tail.length + 1}-${lines.length}`;
	const note =
		`[... ${what} (${size(cutBytesN)} of ${size(bytes)}) cut here: shown are ${shown}. ` +
		`The whole output is in ${whole()} ...]`;
	return { text: `${head.join("\n")}\n${note}\n${tail.join("\n")}`, lines: cutLines, bytes: cutBytesN };
}

/** Whole lines from index from on, stepping by step (1 or -1), at most
 *  max of them and room bytes, never reaching below index floor; in the
 *  text's order. */
function takeLines(lines: string[], from: number, step: 1 | -1, max: number, room: number, floor = 0): string[] {
	const out: string[] = [];
	let used = 0;
	for (let i = from; i >= floor && i < lines.length && out.length < max; i += step) {
		const n = Buffer.byteLength(lines[i], "utf8") + 1;
		if (used + n > room) break;
		used += n;
		if (step === 1) out.push(lines[i]);
		else out.unshift(lines[i]);
	}
	return out;
}

export function cutBytes(line: string, max: number, fromEnd: boolean): string {
	const b = Buffer.from(line, "utf8");
	const part = fromEnd ? b.subarray(b.length - max) : b.subarray(0, max);
	return part.toString("utf8").replace(/^\uFFFD|\uFFFD$/g, "");
}

export function size(n: number): string {
	return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The whole text in a new file of the system's temporary directory. */
function writeWhole(text: string): string {
	const dir = mkdtempSync(join(tmpdir(), "pi-python-"));
	const path = join(dir, "output.txt");
	writeFileSync(path, text, { mode: 0o600 });
	return path;
}

// biome-ignore lint: the --json object, as the schema gives it
type Json = any;

function section(lines: string[], text: string | null | undefined, label?: string) {
	if (!text) return;
	const body = text.endsWith("\n") ? text.slice(0, -1) : text;
	lines.push(label ? `${label}:\n${body}` : body);
}

/** What comes after the cell's stdout: stderr, the value, the error with
 *  its traceback and hints, figures, warnings and what the session holds. */
function afterStdout(r: Json, figures: number): string[] {
	const out: string[] = [];
	section(out, r.stderr, "stderr");
	if (r.value !== null && r.value !== undefined) out.push(`Out[${r.execution_count ?? "-"}]: ${r.value}`);
	if (r.error) {
		section(out, (r.error.traceback ?? []).join("\n") || `${r.error.ename}: ${r.error.evalue}`);
		section(out, (r.error.hints ?? []).join("\n"));
	}
	for (const d of r.diagnostics ?? []) out.push(`line ${d.line ?? "?"}: ${d.code ? `[${d.code}] ` : ""}${d.message}`);
	for (const [what, c] of Object.entries(r.truncated ?? {}) as [string, Json][])
		out.push(`[dolsot kept ${c.kept} characters of the ${what} and cut ${c.cut}]`);
	if (figures) out.push(`[${figures} figure${figures > 1 ? "s" : ""} attached as image${figures > 1 ? "s" : ""}]`);
	for (const w of r.warnings ?? []) out.push(w);
	const s = r.session ?? {};
	const state =
		s.state === "rolled_back"
			? "rolled back: nothing this cell did was kept"
			: s.state === "unchanged"
				? "unchanged"
				: null;
	if (state) out.push(`[session ${s.id} ${state}]`);
	if (s.held) out.push(`session ${s.id} now holds: ${s.held.length ? s.held.join(", ") : "nothing"}`);
	return out;
}

/** The tool result of a --json object: content for the model, details for pi. */
export function toolResult(r: Json, session: string, namespace: string): { content: (TextPart | ImagePart)[]; details: CallDetails } {
	const images: ImagePart[] = [];
	for (const d of r.displays ?? [])
		if (d.data?.["image/png"]) images.push({ type: "image", data: d.data["image/png"], mimeType: "image/png" });
	const rest = afterStdout(r, images.length).join("\n");
	const stdout: string = r.stdout ?? "";
	let whole: string | undefined;
	const wholeText = () => (whole ??= writeWhole(stdout + (rest ? `\n${rest}` : "")));
	const restLines = rest ? rest.split("\n").length : 0;
	const restBytes = Buffer.byteLength(rest, "utf8");
	// stdout gets what the rest leaves; the rest is bounded too, as a whole.
	const cut = headAndTail(
		stdout.endsWith("\n") ? stdout.slice(0, -1) : stdout,
		Math.max(4, MAX_LINES - restLines - 1),
		Math.max(2 * NOTE_ROOM, MAX_BYTES - restBytes - 1),
		wholeText,
	);
	let text = [cut.text, rest].filter((t) => t).join("\n");
	const final = headAndTail(text, MAX_LINES, MAX_BYTES, wholeText);
	text = final.text || "(no output)";
	const details: CallDetails = {
		session,
		namespace,
		status: r.status,
		exitCode: r.exit_code,
		executionCount: r.execution_count ?? null,
		state: r.session?.state ?? null,
		held: r.session?.held ?? null,
		timingsMs: r.timings_ms ?? null,
		figures: images.length,
		failed: r.status !== "ok",
	};
	if (whole) {
		details.fullOutputPath = whole;
		details.cut = { lines: cut.lines + final.lines, bytes: cut.bytes + final.bytes };
	}
	return { content: [{ type: "text", text }, ...images], details };
}

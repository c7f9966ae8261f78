/**
 * run.ts - one dolsot process: the code on its stdin, its stdout and
 * stderr collected, progress reported while it runs, and stopped when pi
 * aborts the tool call.
 *
 * A cell runs with --json-stream: its stdout is JSON lines, a chunk of the
 * cell's output for each line with "stream" (kept by a LiveOutput and
 * reported, at most every UPDATE_MS), and the result, the same object
 * --json prints, as the last line, the one with "status".  Every other
 * command (--describe, --list-sessions, --reset) prints one --json object.
 */
import { spawn } from "node:child_process";
import { LiveOutput } from "./live.ts";

/** How often the elapsed time is reported while a cell runs. */
const TICK_MS = 1000;
/** The least time between two reports of new output (pi's bash tool's). */
const UPDATE_MS = 100;
/** After pi's abort, how long dolsot gets to roll back before SIGKILL. */
const KILL_GRACE_MS = 5000;

export interface Progress {
	elapsedMs: number;
	/** The output so far, its head and its tail ("" before any). */
	output: string;
}

export interface RunRequest {
	binary: string;
	args: string[];
	stdin: string;
	env: NodeJS.ProcessEnv;
	cwd: string;
	signal?: AbortSignal;
	/** args hold --json-stream: read stdout as its lines. */
	stream?: boolean;
	onProgress?: (p: Progress) => void;
}

export interface RunOutcome {
	/** dolsot's exit code, or null when a signal ended it. */
	code: number | null;
	signal: NodeJS.Signals | null;
	/** The --json object's text (for a stream, its last line with "status"). */
	stdout: string;
	stderr: string;
	/** The cell's output as it streamed (its head and tail), for a call
	 *  that ended without a result. */
	output: string;
	/** pi aborted the call and dolsot was stopped. */
	aborted: boolean;
	elapsedMs: number;
}

/** What reads dolsot's stdout. */
interface StdoutReader {
	push(chunk: Buffer): void;
	/** The --json object's text. */
	text(): string;
}

function collectJson(): StdoutReader {
	const chunks: Buffer[] = [];
	return {
		push: (c) => chunks.push(c),
		text: () => Buffer.concat(chunks).toString("utf8"),
	};
}

/** --json-stream's lines, split on LF only (a JSON text holds no raw LF):
 *  chunks go to live, onChunk is told of each, the result line is kept. */
function readStream(live: LiveOutput, onChunk: () => void): StdoutReader {
	let pending: Buffer[] = [];
	let result = "";
	const take = (line: string) => {
		let obj: any;
		try {
			obj = JSON.parse(line);
		} catch {
			result = line; // not JSON: said as dolsot's words when parsing the result fails
			return;
		}
		if (typeof obj?.stream === "string" && typeof obj.text === "string") {
			live.push(obj.text, Number(obj.dropped) || 0);
			onChunk();
		} else {
			result = line;
		}
	};
	return {
		push: (c) => {
			let from = 0;
			for (let nl = c.indexOf(10); nl !== -1; nl = c.indexOf(10, from)) {
				pending.push(c.subarray(from, nl));
				take(Buffer.concat(pending).toString("utf8"));
				pending = [];
				from = nl + 1;
			}
			if (from < c.length) pending.push(c.subarray(from));
		},
		text: () => {
			if (pending.length) take(Buffer.concat(pending).toString("utf8"));
			pending = [];
			return result;
		},
	};
}

/** Run dolsot once; rejects only when it cannot be started. */
export function runDolsot(req: RunRequest): Promise<RunOutcome> {
	return new Promise((resolve, reject) => {
		const started = Date.now();
		const live = new LiveOutput();
		let lastReport = 0;
		let reportTimer: NodeJS.Timeout | undefined;
		const report = () => {
			if (reportTimer) clearTimeout(reportTimer);
			reportTimer = undefined;
			lastReport = Date.now();
			req.onProgress?.({ elapsedMs: lastReport - started, output: live.text() });
		};
		// New output is reported at once, or UPDATE_MS after the last report.
		const onChunk = () => {
			const wait = UPDATE_MS - (Date.now() - lastReport);
			if (wait <= 0) report();
			else reportTimer ??= setTimeout(report, wait);
		};
		const out = req.stream ? readStream(live, onChunk) : collectJson();
		const err: Buffer[] = [];
		let aborted = false;
		let killTimer: NodeJS.Timeout | undefined;
		const child = spawn(req.binary, req.args, { cwd: req.cwd, env: req.env, stdio: ["pipe", "pipe", "pipe"] });
		const tick = req.onProgress ? setInterval(report, TICK_MS) : undefined;
		const onAbort = () => {
			if (aborted || child.exitCode !== null) return;
			aborted = true;
			// SIGTERM: dolsot kills the cell and leaves the session as it was.
			child.kill("SIGTERM");
			killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
		};
		const finish = () => {
			clearInterval(tick);
			clearTimeout(reportTimer);
			if (killTimer) clearTimeout(killTimer);
			req.signal?.removeEventListener("abort", onAbort);
		};

		child.stdout.on("data", (c: Buffer) => out.push(c));
		child.stderr.on("data", (c: Buffer) => err.push(c));
		child.on("error", (e) => {
			finish();
			reject(new Error(`cannot run ${req.binary}: ${e.message} (set dolsot.binary in pi's settings)`));
		});
		child.on("close", (code, signal) => {
			finish();
			resolve({
				code,
				signal,
				stdout: out.text(),
				stderr: Buffer.concat(err).toString("utf8"),
				output: live.text(),
				aborted,
				elapsedMs: Date.now() - started,
			});
		});
		// A cell that never reads stdin may exit before it is all written.
		child.stdin.on("error", () => {});
		child.stdin.end(req.stdin);
		if (req.signal?.aborted) onAbort();
		else req.signal?.addEventListener("abort", onAbort, { once: true });
	});
}

/**
 * run.ts - one dolsot process: the code on its stdin, its stdout and
 * stderr collected, progress reported while it runs, and stopped when pi
 * aborts the tool call.
 *
 * Streaming: dolsot prints its --json object only at the end today, so
 * progress is the elapsed time (a tick every TICK_MS).  When dolsot's
 * --json-stream lands (issue 38, item 3: one JSON line per event, the
 * result last), the wiring is one change here: pass that flag instead of
 * --json in index.ts and replace collectJson with a reader that hands each
 * stream event to onProgress and keeps the last line as the result.
 */
import { spawn } from "node:child_process";

/** How often the elapsed time is reported while a cell runs. */
const TICK_MS = 1000;
/** After pi's abort, how long dolsot gets to roll back before SIGKILL. */
const KILL_GRACE_MS = 5000;

export interface Progress {
	elapsedMs: number;
	/** Output received so far (none until dolsot streams). */
	stdout: string;
}

export interface RunRequest {
	binary: string;
	args: string[];
	stdin: string;
	env: NodeJS.ProcessEnv;
	cwd: string;
	signal?: AbortSignal;
	onProgress?: (p: Progress) => void;
}

export interface RunOutcome {
	/** dolsot's exit code, or null when a signal ended it. */
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
	/** pi aborted the call and dolsot was stopped. */
	aborted: boolean;
	elapsedMs: number;
}

/** What reads dolsot's stdout: the whole of it, for --json. */
interface StdoutReader {
	push(chunk: Buffer): void;
	text(): string;
	/** What arrived so far, for a progress report. */
	partial(): string;
}

function collectJson(): StdoutReader {
	const chunks: Buffer[] = [];
	return {
		push: (c) => chunks.push(c),
		text: () => Buffer.concat(chunks).toString("utf8"),
		partial: () => "",
	};
}

/** Run dolsot once; rejects only when it cannot be started. */
export function runDolsot(req: RunRequest): Promise<RunOutcome> {
	return new Promise((resolve, reject) => {
		const started = Date.now();
		const out = collectJson();
		const err: Buffer[] = [];
		let aborted = false;
		let killTimer: NodeJS.Timeout | undefined;
		const child = spawn(req.binary, req.args, { cwd: req.cwd, env: req.env, stdio: ["pipe", "pipe", "pipe"] });
		const tick = setInterval(() => {
			req.onProgress?.({ elapsedMs: Date.now() - started, stdout: out.partial() });
		}, TICK_MS);
		const onAbort = () => {
			if (aborted || child.exitCode !== null) return;
			aborted = true;
			// SIGTERM: dolsot kills the cell and leaves the session as it was.
			child.kill("SIGTERM");
			killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
		};
		const finish = () => {
			clearInterval(tick);
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

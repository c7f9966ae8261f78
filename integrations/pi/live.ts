/**
 * live.ts - what pi shows while a cell runs: the output dolsot streamed so
 * far (--json-stream's chunks, stdout and stderr as they came), kept as its
 * head and its tail so that neither memory nor the view grows with the
 * output, within pi's bound for one result (MAX_LINES, MAX_BYTES).
 */
import { cutBytes, MAX_BYTES, MAX_LINES, NOTE_ROOM, size } from "./result.ts";

/** The head and the tail each get half of pi's bound, less the room for
 *  the line between them and the elapsed time's line. */
const SIDE_BYTES = Math.floor((MAX_BYTES - 2 * NOTE_ROOM) / 2);
const SIDE_LINES = Math.floor((MAX_LINES - 3) / 2);

function lineCount(text: string): number {
	let n = 0;
	for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
	return n;
}

/** Text and its size, kept up to date as it grows. */
class Part {
	text = "";
	bytes = 0;
	lines = 0;
	add(t: string): void {
		this.text += t;
		this.bytes += Buffer.byteLength(t, "utf8");
		this.lines += lineCount(t);
	}
	set(t: string): void {
		this.text = "";
		this.bytes = 0;
		this.lines = 0;
		this.add(t);
	}
	fits(times: number): boolean {
		return this.bytes <= times * SIDE_BYTES && this.lines <= times * SIDE_LINES;
	}
}

function body(t: string): string {
	return t.endsWith("\n") ? t.slice(0, -1) : t;
}

export class LiveOutput {
	private head = new Part();
	/** The head takes no more once anything was cut after it. */
	private headDone = false;
	/** After the head: at most twice a half, shown as its last half. */
	private tail = new Part();
	/** What was cut between the head and the tail. */
	private gap = { bytes: 0, lines: 0, inexact: false };

	/** One chunk: its text, after dropped bytes dolsot left out before it. */
	push(text: string, dropped: number): void {
		if (dropped > 0) {
			// The tail so far and the bytes left out become one gap; a flood's
			// lines are not known.
			this.headDone = true;
			this.cut(this.tail.text, dropped, true);
			this.tail.set("");
		}
		if (!this.headDone) {
			this.head.add(text);
			if (!this.head.fits(1)) this.splitHead();
		} else {
			this.tail.add(text);
		}
		// Cut only when the tail doubled: a chunk costs no scan of the tail.
		if (!this.tail.fits(2)) {
			const shown = shownTail(this.tail.text);
			this.cut(this.tail.text.slice(0, this.tail.text.length - shown.length), 0, false);
			this.tail.set(shown);
		}
	}

	/** The view: the head, a line saying what was cut so far, the tail. */
	text(): string {
		const shown = this.tail.fits(1) ? this.tail.text : shownTail(this.tail.text);
		const hidden = this.tail.text.slice(0, this.tail.text.length - shown.length);
		const bytes = this.gap.bytes + Buffer.byteLength(hidden, "utf8");
		if (!bytes) return body(this.head.text + shown);
		const n = this.gap.lines + lineCount(hidden);
		const lines = n ? `${n}${this.gap.inexact ? " or more" : ""} line${n === 1 ? "" : "s"}, ` : "";
		const note = `[... ${lines}${size(bytes)} cut here so far; the result keeps the head and the tail of all of it ...]`;
		return [body(this.head.text), note, body(shown)].filter((t) => t).join("\n");
	}

	private cut(text: string, moreBytes: number, inexact: boolean): void {
		this.gap.bytes += Buffer.byteLength(text, "utf8") + moreBytes;
		this.gap.lines += lineCount(text);
		this.gap.inexact ||= inexact;
	}

	/** Keep the head's whole lines within its half; the rest starts the tail. */
	private splitHead(): void {
		this.headDone = true;
		const all = this.head.text;
		let end = headEnd(all);
		let kept = all.slice(0, end);
		if (end === 0) {
			// A first line longer than the head's half: its start.
			kept = cutBytes(all, SIDE_BYTES, false);
			end = kept.length;
			kept += "\n";
		}
		this.head.set(kept);
		this.tail.add(all.slice(end));
	}
}

/** The end of text that the view shows: its last whole lines within a
 *  half, or the end of its last line when that alone is longer. */
function shownTail(text: string): string {
	const start = tailStart(text);
	return start < 0 ? cutBytes(text, SIDE_BYTES, true) : text.slice(start);
}

/** Where the most whole lines from text's start that fit one half end (0: none fit). */
function headEnd(text: string): number {
	let end = 0;
	let bytes = 0;
	for (let lines = 0, i = text.indexOf("\n"); i !== -1 && lines < SIDE_LINES; i = text.indexOf("\n", i + 1), lines++) {
		bytes += Buffer.byteLength(text.slice(end, i + 1), "utf8");
		if (bytes > SIDE_BYTES) break;
		end = i + 1;
	}
	return end;
}

/** Where the most whole lines at text's end that fit one half start (-1: not even the last one). */
function tailStart(text: string): number {
	let start = -1;
	let bytes = 0;
	let from = text.length;
	// i: the line break before the line being added (-1: it is the first).
	const before = (at: number) => (at > 0 ? text.lastIndexOf("\n", at - 1) : -1);
	for (let lines = 1, i = before(text.length - 1); lines <= SIDE_LINES; lines++) {
		const at = i + 1;
		bytes += Buffer.byteLength(text.slice(at, from), "utf8");
		if (bytes > SIDE_BYTES) break;
		start = at;
		from = at;
		if (i < 0) break;
		i = before(i);
	}
	return start;
}

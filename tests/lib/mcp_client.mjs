// mcp_client.mjs - `dolsot mcp` driven by the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, installed into tools/node by tools/npm-deps.sh)
// over stdio, as an agent host drives it.  tests/check_mcp.c runs it, cold
// and warm, in a private store; tests/check_mcp_http.c runs the same steps
// over Streamable HTTP against a `dolsot mcp --http` it started (URL), with
// the initialize's revision set to REVISION when given.
//
// usage: node tests/lib/mcp_client.mjs DOLSOT_BINARY SCRATCH_DIR [URL [REVISION]]
// Prints "ok NAME" per step; exits 1 at the first failed step, with why.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const sdk = path.join(root, 'tools/node/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(pathToFileURL(path.join(sdk, 'client/index.js')).href);
const { StdioClientTransport } =
	await import(pathToFileURL(path.join(sdk, 'client/stdio.js')).href);

const [bin, scratch, url, revision] = process.argv.slice(2);
const { StreamableHTTPClientTransport } = url ?
	await import(pathToFileURL(path.join(sdk, 'client/streamableHttp.js')).href) : {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(cond, what, detail) {
	if (!cond) {
		console.log(`FAIL ${what}` + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
		process.exit(1);
	}
}

function alive(pid) {
	try {
		process.kill(pid, 0);
	} catch (e) {
		return e.code !== 'ESRCH';
	}
	// A zombie is gone for our purposes.
	try {
		return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
	} catch {
		return false;
	}
}

async function gone(pid, seconds) {
	for (let i = 0; i < seconds * 10; i++) {
		if (!alive(pid))
			return true;
		await sleep(100);
	}
	return false;
}

// structuredContent and outputSchema exist from 2025-06-18 on.
const structured = !revision || revision >= '2025-06-18';
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// The error the SDK raises for a call the server refuses, or null.
async function refused(name, args) {
	try {
		await client.callTool({ name, arguments: args });
	} catch (e) {
		return e;
	}
	return null;
}

const transport = url ? new StreamableHTTPClientTransport(new URL(url)) :
	new StdioClientTransport({
		command: bin, args: ['mcp', '--timeout', '60'], env: process.env, stderr: 'inherit',
	});
if (revision) {
	// The SDK asks for its newest revision; ask for an older one instead.
	const send = transport.send.bind(transport);
	transport.send = (msg, opts) => send(msg.method === 'initialize' ?
		{ ...msg, params: { ...msg.params, protocolVersion: revision } } : msg, opts);
}
const client = new Client({ name: 'dolsot-test', version: '1.0.0' });
await client.connect(transport);
const serverPid = transport.pid;

// initialize: the SDK's newest revision is answered in kind.
const info = client.getServerVersion();
check(!revision || transport.protocolVersion === revision, 'initialize: the revision asked',
      transport.protocolVersion);
check(info && info.name === 'dolsot', 'initialize: serverInfo', info);
check(client.getServerCapabilities().tools, 'initialize: the tools capability');
check(/python tool/.test(client.getInstructions() ?? ''), 'initialize: instructions');
console.log('ok initialize');

// tools/list: ten tools, schemas, the describe text in python's description.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
check(JSON.stringify(names) ===
      '["python","list_sessions","reset_session","history","undo","checkout",' +
      '"export_notebook","wait","peek","cancel"]', 'tools/list', names);
const py = tools[0];
check(py.inputSchema.required[0] === 'code' && py.inputSchema.properties.session &&
      py.inputSchema.properties.timeout.maximum === 60, 'python inputSchema', py.inputSchema);
check(structured ? py.outputSchema && py.outputSchema.type === 'object' : !py.outputSchema,
      'python outputSchema (none before 2025-06-18)', py.outputSchema);
check(/What a cell gets:\n[\s\S]*limits: --timeout 60s/.test(py.description),
      'python description carries --describe', py.description);
check(/until unused for \d+ days|until reset_session/.test(py.description),
      'python description states a session\'s lifetime');
check(/keep their first 10000 and last 10000/.test(py.description) &&
      /`in_text`/.test(py.description) &&
      /progress notifications carry the cell's output/.test(py.description),
      'python description says how output is cut, carried once and streamed');
console.log('ok tools/list');

// 2025-03-26 has no structured results: a short run of the steps the text
// and the notifications show, then the end every run has.
if (!structured) {
	let u = await client.callTool({ name: 'python', arguments: { code: 'x = 20', session: 'u' } });
	check(!u.isError && !('structuredContent' in u), 'no structuredContent', u);
	u = await client.callTool({ name: 'python', arguments: { code: 'x * 2 + 2', session: 'u' } },
		undefined, { onprogress: () => {} });
	check(text(u).startsWith('42\n') && /session now holds: x/.test(text(u)),
	      'state across calls, in the text', u);
	const notes = [];
	u = await client.callTool({ name: 'python', arguments: { session: 'u', code:
		"print('out', flush=True)\nimport time\ntime.sleep(1.2)\n'v'" } }, undefined,
		{ onprogress: (p) => notes.push(p) });
	check(text(u).includes("'v'") && notes.some((p) => /out/.test(p.message ?? '')),
	      'progress carries the output', [u, notes]);
	u = await client.callTool({ name: 'python', arguments: { code: '1/0', session: 'u' } });
	check(u.isError === true && /ZeroDivisionError/.test(text(u)), 'raising cell', u);
	console.log('ok unstructured results');
	await finish();
}

// State across calls (the SDK validates structuredContent against outputSchema).
let r = await client.callTool({ name: 'python', arguments: { code: 'x = 20', session: 's1' } });
check(!r.isError && r.structuredContent.status === 'ok', 'first cell', r);
r = await client.callTool({ name: 'python', arguments: { code: 'x * 2 + 2', session: 's1' } });
check(!r.isError && r.structuredContent.value === '42', 'state across calls', r);
check(text(r).startsWith('42\n') && /session now holds: x/.test(text(r)), 'text contract', r);
console.log('ok stateful cells');

// A session made for the call, returned, and usable later.
r = await client.callTool({ name: 'python', arguments: { code: 'made = "here"' } });
const minted = r.structuredContent.session.id;
check(/^mcp-[0-9a-f]{16}$/.test(minted) && text(r).includes(minted), 'minted session', r);
r = await client.callTool({ name: 'python', arguments: { code: 'made', session: minted } });
check(r.structuredContent.value === "'here'", 'the minted session keeps state', r);
console.log('ok minted session');

// call_id: a retry gets the first answer back and the cell does not run again.
const counted = { code: 'k = globals().get("k", 0) + 1\nk', session: 's-id', call_id: 'try-1' };
const once = await client.callTool({ name: 'python', arguments: counted });
const twice = await client.callTool({ name: 'python', arguments: counted });
check(once.structuredContent.value === '1' && JSON.stringify(twice) === JSON.stringify(once),
      'call_id: a retry is answered with the recorded result', [once, twice]);
r = await client.callTool({ name: 'python', arguments: { code: 'k', session: 's-id' } });
check(r.structuredContent.value === '1', 'call_id: the retry did not run the cell', r);
console.log('ok call_id retry');

// A raising cell and a timeout: isError results, never protocol errors.
r = await client.callTool({ name: 'python', arguments: { code: '1/0', session: 's1' } });
check(r.isError === true && r.structuredContent.status === 'error' &&
      r.structuredContent.error.ename === 'ZeroDivisionError' &&
      /ZeroDivisionError/.test(text(r)), 'raising cell', r);
r = await client.callTool({ name: 'python',
	arguments: { code: 'x = 99\nimport time\ntime.sleep(30)', session: 's1', timeout: 1 } });
check(r.isError === true && r.structuredContent.status === 'timeout', 'timeout', r);
r = await client.callTool({ name: 'python', arguments: { code: 'x', session: 's1' } });
check(r.structuredContent.value === '20', 'the timeout rolled back', r);
console.log('ok isError for a raising cell and a timeout');

// A matplotlib figure comes back as an image block.
r = await client.callTool({ name: 'python', arguments: { session: 'fig', code:
	"import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n" +
	"fig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3])\nprint('drawn')\n" } });
const img = r.content.find((c) => c.type === 'image');
check(!r.isError && img && img.mimeType === 'image/png' &&
      Buffer.from(img.data, 'base64').subarray(1, 4).toString() === 'PNG', 'image block', r);
check(/image 1 \(400x300 image\/png\) is attached/.test(text(r)), 'the text names the image',
      text(r));
console.log('ok image block');

// Progress notifications when the call carries a progress token.
const seen = [];
r = await client.callTool({ name: 'python',
	arguments: { code: 'import time\ntime.sleep(2.5)\n"slept"', session: 'prog' } },
	undefined, { onprogress: (p) => seen.push(p) });
check(r.structuredContent.value === "'slept'", 'progress cell', r);
check(seen.length >= 1 && seen[0].total === 60 && seen.every((p, i) => i === 0 ||
      p.progress > seen[i - 1].progress), 'progress notifications', seen);
console.log('ok progress');

// The output while the cell runs: a progress notification carries the new
// output; the cell waits on a FIFO that is opened only once it has come.
const fifo = path.join(scratch, 'release.fifo');
execFileSync('mkfifo', [fifo]);
const streamed = [];
let released = false;
r = await client.callTool({ name: 'python', arguments: { session: 'stream', code:
	`import sys\nprint('first chunk', flush=True)\nopen(${JSON.stringify(fifo)}).read()\n` +
	"print('after')\n'done'" } }, undefined, { onprogress: (p) => {
	streamed.push(p);
	if (!released && /first chunk/.test(p.message ?? '')) {
		released = true;
		writeFileSync(fifo, 'go');
	}
} });
check(released && r.structuredContent.value === "'done'" &&
      r.structuredContent.stdout === 'first chunk\nafter\n', 'streamed cell', [r, streamed]);
const first = streamed.find((p) => /first chunk/.test(p.message ?? ''));
check(first._meta?.['dolsot/output']?.stream === 'stdout', 'the chunk\'s stream',
      first);
check(streamed.every((p, i) => i === 0 || p.progress > streamed[i - 1].progress),
      'progress increases with output', streamed);
console.log('ok streamed output');

// A long stream is carried once: in the text, not in structuredContent.
r = await client.callTool({ name: 'python', arguments: { session: 'long', code:
	"print('q' * 5000)\n'v'" } });
check(r.structuredContent.stdout === '' &&
      JSON.stringify(r.structuredContent.in_text) === '["stdout"]' &&
      text(r).includes('q'.repeat(5000)) && JSON.stringify(r).length < 7000,
      'a long stdout once', r);
r = await client.callTool({ name: 'python', arguments: { session: 'long', code:
	"print('q' * 50000)" } });
check(/\[output truncated: kept the first 10000 and the last 10000 chars; cut 30001 bytes/
      .test(text(r)) && JSON.stringify(r).length < 25000, 'a runaway print is cut', text(r));
console.log('ok outputs carried once');

// Cancel a running cell: its process is gone, its session rolled back.
const pidfile = path.join(scratch, 'cell.pid');
const abort = new AbortController();
const cancelled = client.callTool({ name: 'python', arguments: { session: 's1', code:
	`import os, time\nx = 7\nopen(${JSON.stringify(pidfile)}, 'w').write(str(os.getpid()))\n` +
	'time.sleep(50)' } }, undefined, { signal: abort.signal }).then(
	() => 'answered', (e) => e);
for (let i = 0; i < 300 && !existsSync(pidfile); i++)
	await sleep(100);
check(existsSync(pidfile), 'the cancelled cell started');
await sleep(200);
const cellPid = Number(readFileSync(pidfile, 'utf8'));
check(cellPid > 0 && alive(cellPid), 'the cell runs', cellPid);
abort.abort('test cancels');
check((await cancelled) !== 'answered', 'the cancelled call is not answered');
check(await gone(cellPid, 20), 'the cancelled cell\'s process is gone', cellPid);
r = await client.callTool({ name: 'python', arguments: { code: 'x', session: 's1' } });
check(r.structuredContent.value === '20', 'the cancel rolled back', r);
console.log('ok cancel');

// Two sessions at once; one session one call after another.
const span = 'import time\nt0 = time.time()\ntime.sleep(3)\n(t0, time.time())';
const [a, b] = await Promise.all(['c1', 'c2'].map((session) =>
	client.callTool({ name: 'python', arguments: { code: span, session } })));
const [a0, a1] = JSON.parse(a.structuredContent.value.replace(/\(/, '[').replace(/\)/, ']'));
const [b0, b1] = JSON.parse(b.structuredContent.value.replace(/\(/, '[').replace(/\)/, ']'));
check(a0 < b1 && b0 < a1, 'two sessions ran concurrently', [a0, a1, b0, b1]);
const one = 'import time\nt0 = time.time()\ntime.sleep(1)\n(t0, time.time())';
const [c, d] = await Promise.all([1, 2].map(() =>
	client.callTool({ name: 'python', arguments: { code: one, session: 'c1' } })));
const [c0, c1] = JSON.parse(c.structuredContent.value.replace(/\(/, '[').replace(/\)/, ']'));
const [d0] = JSON.parse(d.structuredContent.value.replace(/\(/, '[').replace(/\)/, ']'));
check(d0 >= c1 && c.structuredContent.execution_count + 1 ===
      d.structuredContent.execution_count, 'one session serializes', [c0, c1, d0]);
console.log('ok concurrency');

// history, undo and checkout: a destructive cell undone at no cost, then
// redone by checking its state out (the SDK validates each
// structuredContent against the tool's outputSchema).
const t1 = (code) => client.callTool({ name: 'python', arguments: { code, session: 't1' } });
await t1('df = list(range(5))');
await t1('df = df[:2]');
r = await client.callTool({ name: 'history', arguments: { session: 't1' } });
check(!r.isError && r.structuredContent.current === 2 &&
      r.structuredContent.states[1].code === 'df = df[:2]' &&
      /^1\t\S+\tok\t\d+\t-\tdf = list\(range\(5\)\)\n2\*\t/.test(text(r)), 'history', r);
r = await client.callTool({ name: 'undo', arguments: { session: 't1' } });
check(!r.isError && text(r) === 'undo t1: back to state 1, now state 3\n' &&
      JSON.stringify(r.structuredContent) ===
      '{"session":"t1","action":"undo","to":1,"state":3}', 'undo', r);
r = await t1('df');
check(r.structuredContent.value === '[0, 1, 2, 3, 4]', 'the undo brought df back', r);
r = await client.callTool({ name: 'checkout', arguments: { session: 't1', state: 2 } });
check(!r.isError && r.structuredContent.to === 2 && r.structuredContent.state === 5, 'checkout',
      r);
r = await t1('df');
check(r.structuredContent.value === '[0, 1]', 'the checkout went to state 2', r);
r = await client.callTool({ name: 'undo', arguments: { session: 'nosuch' } });
check(r.isError === true && /session 'nosuch' does not exist/.test(text(r)),
      'undo of a session that does not exist', r);
let err = await refused('checkout', { session: 't1' });
check(err && err.code === -32602, 'checkout without state is invalid params', String(err));
console.log('ok history, undo and checkout');
// export_notebook: the history as an embedded resource, the figure in it.
r = await client.callTool({ name: 'export_notebook', arguments: { session: 'fig' } });
const res = r.content.find((c) => c.type === 'resource');
check(!r.isError && res && res.resource.mimeType === 'application/x-ipynb+json' &&
      res.resource.uri === r.structuredContent.uri && r.structuredContent.states === 1,
      'export_notebook', r);
const nb = JSON.parse(res.resource.text);
const cell = nb.cells.find((c) => c.cell_type === 'code');
check(nb.nbformat === 4 && nb.nbformat_minor === 5 && cell.outputs.some((o) =>
      o.output_type === 'display_data' && o.data['image/png']), 'the notebook', nb);
r = await client.callTool({ name: 'export_notebook', arguments: { session: 'fig', format: 'py' } });
check(r.structuredContent.mimeType === 'text/x-python' &&
      /# %% state 1\nimport matplotlib/.test(r.content[1].resource.text), 'export as py', r);
console.log('ok export_notebook');

// list_sessions and reset_session.
r = await client.callTool({ name: 'list_sessions', arguments: {} });
let ids = r.structuredContent.sessions.map((s) => s.id);
check(!r.isError && ids.includes('s1') && ids.includes(minted) && /^s1\t\d+\t/m.test(text(r)),
      'list_sessions', r);
r = await client.callTool({ name: 'reset_session', arguments: { session: 's1' } });
check(!r.isError && r.structuredContent.reset === 's1' && r.structuredContent.removed === 1,
      'reset_session', r);
r = await client.callTool({ name: 'list_sessions', arguments: {} });
ids = r.structuredContent.sessions.map((s) => s.id);
check(!ids.includes('s1'), 'the reset session is gone', ids);
r = await client.callTool({ name: 'reset_session', arguments: { session: 'all' } });
check(r.structuredContent.removed >= 3, 'reset all', r);
r = await client.callTool({ name: 'list_sessions', arguments: {} });
check(r.structuredContent.sessions.length === 0 && /\(no sessions\)/.test(text(r)),
      'nothing left', r);
console.log('ok list and reset sessions');

// A detached cell: python with detach_after hands back a handle while the
// cell waits on a FIFO; wait, peek and cancel take it (the SDK validates
// each structuredContent against the tool's outputSchema).
const gate = path.join(scratch, 'detach.fifo');
execFileSync('mkfifo', [gate]);
const gated = `print('a')\nopen(${JSON.stringify(gate)}).read()\nd = 1`;
r = await client.callTool({ name: 'python',
                            arguments: { code: gated, session: 'det', detach_after: 0 } });
check(!r.isError && r.structuredContent.status === 'detached' &&
      /^[0-9a-f]{32}$/.test(r.structuredContent.handle), 'python detaches', r);
const handle = r.structuredContent.handle;
r = await client.callTool({ name: 'wait', arguments: { handle, timeout: 0.2 } });
check(!r.isError && r.structuredContent.status === 'detached' &&
      r.structuredContent.state === 'running', 'wait past its timeout: the handle again', r);
r = await client.callTool({ name: 'peek', arguments: { handle } });
check(!r.isError && r.structuredContent.status === 'peek', 'peek', r);
writeFileSync(gate, 'go');
r = await client.callTool({ name: 'wait', arguments: { handle } });
check(!r.isError && r.structuredContent.status === 'ok' && r.structuredContent.stdout === 'a\n',
      'wait: the cell\'s result', r);
r = await client.callTool({ name: 'python', arguments: { code: 'd', session: 'det' } });
check(r.structuredContent.value === '1', 'the detached cell committed', r);
r = await client.callTool({ name: 'python', arguments: {
	code: `open(${JSON.stringify(gate)}).read()\ne = 1`, session: 'det', detach_after: 0 } });
check(r.structuredContent.status === 'detached', 'a second detached cell', r);
r = await client.callTool({ name: 'cancel', arguments: { handle: r.structuredContent.handle } });
check(!r.isError && r.structuredContent.status === 'cancelled', 'cancel', r);
r = await client.callTool({ name: 'python', arguments: { code: "'e' in globals()",
                                                        session: 'det' } });
check(r.structuredContent.value === 'False', 'the cancelled cell left its session', r);
// Progress notifications carry a detached call's output while it waits:
// the gate opens only once 'early' has come as one.
let opened = false;
r = await client.callTool({ name: 'python', arguments: {
	code: `print('early')\nopen(${JSON.stringify(gate)}).read()\nprint('late')`,
	session: 'det', detach_after: 60 } }, undefined, {
	onprogress: (p) => {
		if (!opened && /early/.test(p.message ?? '')) {
			opened = true;
			writeFileSync(gate, 'go');
		}
	},
});
check(opened && r.structuredContent.status === 'ok' &&
      r.structuredContent.stdout === 'early\nlate\n', 'progress while detachable', r);
console.log('ok detached cells');

// The tasks utility (2025-11-25, the SDK's experimental client): python
// (execution.taskSupport "optional") runs as a task, polled with tasks/get
// to its end, its result from tasks/result; a handle is a task's id for
// tasks/get, tasks/list and tasks/cancel.
// Only 2025-11-25 has the utility: an older revision is offered none.
if (!revision || revision >= '2025-11-25') {
	check(py.execution && py.execution.taskSupport === 'optional', 'python takes a task', py);
	check(client.getServerCapabilities().tasks?.requests?.tools?.call, 'the tasks capability');
	let created = null, final = null;
	for await (const msg of client.experimental.tasks.callToolStream(
		{ name: 'python', arguments: { code: 't = 6 * 7\nt', session: 'tsk' } })) {
		if (msg.type === 'taskCreated')
			created = msg.task;
		else if (msg.type === 'result')
			final = msg.result;
		else if (msg.type === 'error')
			check(false, 'the task stream', String(msg.error));
	}
	check(created && /^[0-9a-f]{32}$/.test(created.taskId), 'a task is made', created);
	check(final && final.structuredContent.value === '42', 'the task\'s result', final);
	r = await client.callTool({ name: 'python', arguments: {
		code: `open(${JSON.stringify(gate)}).read()`, session: 'tsk', detach_after: 0 } });
	const tid = r.structuredContent.handle;
	let task = await client.experimental.tasks.getTask(tid);
	check(task.status === 'working', 'tasks/get: working', task);
	const listed = await client.experimental.tasks.listTasks();
	check(listed.tasks.some((t) => t.taskId === tid), 'tasks/list', listed);
	task = await client.experimental.tasks.cancelTask(tid);
	check(task.status === 'cancelled', 'tasks/cancel', task);
	err = await client.experimental.tasks.cancelTask(tid).then(() => null, (e) => e);
	check(err && err.code === -32602, 'an ended task cannot be cancelled', String(err));
	console.log('ok tasks');
} else {
	check(!client.getServerCapabilities().tasks, 'no tasks capability before 2025-11-25');
	console.log('ok no tasks');
}

await finish();

// The end of every run: a refused call, then DELETE (HTTP) or the server's
// exit (stdio).
async function finish() {
	// A wrong argument is a protocol error the SDK raises.
	const wrong = await refused('python', { session: 'x' });
	check(wrong && wrong.code === -32602, 'missing code is invalid params', String(wrong));
	console.log('ok invalid params');

	if (url) {
		// DELETE ends the session: its id is refused afterwards.
		const sid = transport.sessionId;
		await transport.terminateSession();
		const after = await fetch(url, { method: 'POST', body: '{"jsonrpc":"2.0","id":9,"method":"ping"}',
			headers: { 'content-type': 'application/json', 'mcp-session-id': sid,
			           accept: 'application/json, text/event-stream' } });
		check(after.status === 404, 'a deleted session is gone', after.status);
		await client.close();
		console.log('ok close');
		process.exit(0);
	}
	await client.close();
	check(await gone(serverPid, 20), 'the server exits when the client closes', serverPid);
	console.log('ok close');
	process.exit(0);
}

// mcp_resume.mjs - a lost stream resumed through the MCP TypeScript SDK's
// own resumption support, against a `dolsot mcp --http` that
// tests/check_mcp_http.c started (URL): StreamableHTTPClientTransport's
// onresumptiontoken gives each event's id; the stream is lost mid-cell (the
// transport closed); a second transport on the same session resumes it
// from the last id (resumeStream: a GET with Last-Event-ID) and gets the
// events after it, each once, and the answer.
//
// usage: node tests/lib/mcp_resume.mjs URL SCRATCH_DIR
// Prints "ok sdk resumes"; exits 1 with why otherwise.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const sdk = path.join(root, 'tools/node/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { StreamableHTTPClientTransport } =
	await import(pathToFileURL(path.join(sdk, 'client/streamableHttp.js')).href);
const [url, scratch] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(cond, what, detail) {
	if (!cond) {
		console.log(`FAIL ${what}` + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
		process.exit(1);
	}
}

// Wait (at most a minute, never asserted as a timing) until want(inbox).
async function until(inbox, want, what) {
	for (let i = 0; i < 600 && !want(inbox); i++)
		await sleep(100);
	check(want(inbox), what, inbox);
}

const output = (inbox) => inbox.filter((m) => m.method === 'notifications/progress' &&
	m.params._meta?.['dolsot/output']).map((m) => m.params.message).join('');

function transport(sessionId) {
	const t = new StreamableHTTPClientTransport(new URL(url), sessionId ? { sessionId } : {});
	const inbox = [];
	t.onmessage = (m) => inbox.push(m);
	t.onerror = () => {};   // the first stream's abort is the point
	return [t, inbox];
}

const [t1, inbox1] = transport();
await t1.start();
await t1.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
	protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'resume', version: '1' } } });
await until(inbox1, (b) => b.some((m) => m.id === 1), 'initialize');
await t1.send({ jsonrpc: '2.0', method: 'notifications/initialized' });

const go = path.join(scratch, 'sdk-go');
const code = "import os, sys, time\nsys.stdout.write('A1\\nA2\\n'); sys.stdout.flush()\n" +
	`while not os.path.exists(${JSON.stringify(go)}): time.sleep(0.02)\n` +
	"sys.stdout.write('B1\\nB2\\n'); sys.stdout.flush()\n6 * 7";
const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: {
	name: 'python', arguments: { session: 'sdk-resume', code }, _meta: { progressToken: 'r' } } };
const tokens = [];
await t1.send(call, { onresumptiontoken: (token) => tokens.push(token) });
await until(inbox1, (b) => output(b) === 'A1\nA2\n', 'part A');
await t1.close();   // the stream is lost mid-cell
const last = tokens.at(-1);
check(/^[0-9a-f]{16}-\d+-\d+$/.test(last), 'an event id', tokens);
writeFileSync(go, '');

const [t2, inbox2] = transport(t1.sessionId);
const later = [];
await t2.start();
// (send(call, { resumptionToken }) resumes too, but does not pass on the new ids.)
await t2.resumeStream(last, { onresumptiontoken: (token) => later.push(token) });
await until(inbox2, (b) => b.some((m) => m.id === 2), 'the answer on the resumed stream');
const answer = inbox2.find((m) => m.id === 2);
check(answer.result?.structuredContent?.value === '42', 'the answer', answer);
check(output(inbox1) + output(inbox2) === 'A1\nA2\nB1\nB2\n', 'each output once',
      [output(inbox1), output(inbox2)]);
const seq = (token) => Number(token.split('-')[2]);
check(later.length > 0 && later.every((token, i) => seq(token) === seq(last) + 1 + i),
      'the events after the last one seen, in order', [last, later]);
console.log('ok sdk resumes');
await t2.terminateSession();
await t2.close();
process.exit(0);

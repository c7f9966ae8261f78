// mcp_namespaces.mjs - two `dolsot mcp` servers and the CLI on one store
// (whatever DOLSOT_STORE says), driven by the official MCP TypeScript SDK:
// one server in its default namespace ("mcp"), one asked for another
// (--namespace other), the CLI in its own (today's).  A reset_session
// "all" of either server removes its own sessions and never another's.
// tests/cli/check_mcp.c runs it once per store kind.
//
// usage: node tests/lib/mcp_namespaces.mjs DOLSOT_BINARY
// Prints "ok NAME" per step; exits 1 at the first failed step, with why.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const sdk = path.join(root, 'tools/node/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(pathToFileURL(path.join(sdk, 'client/index.js')).href);
const { StdioClientTransport } =
	await import(pathToFileURL(path.join(sdk, 'client/stdio.js')).href);

const [bin] = process.argv.slice(2);

function check(cond, what, detail) {
	if (!cond) {
		console.log(`FAIL ${what}` + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
		process.exit(1);
	}
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

async function server(extra) {
	const transport = new StdioClientTransport({
		command: bin, args: ['mcp', '--timeout', '60', ...extra], env: process.env,
		stderr: 'inherit',
	});
	const client = new Client({ name: 'dolsot-ns-test', version: '1.0.0' });
	await client.connect(transport);
	return client;
}

function cli(...args) {
	return execFileSync(bin, args, { env: process.env, encoding: 'utf8' });
}

async function run(client, session, code) {
	return client.callTool({ name: 'python', arguments: { session, code } });
}

async function ids(client) {
	const r = await client.callTool({ name: 'list_sessions', arguments: {} });
	check(!r.isError, 'list_sessions', r);
	return r.structuredContent.sessions.map((s) => s.id).sort();
}

const a = await server([]);
const b = await server(['--namespace', 'other']);

cli('--session', 'shared', "who = 'cli'");
cli('--session', 'cli-only', 'n = 1');
let r = await run(a, 'shared', "who = 'a'");
check(!r.isError, 'server a runs a cell', r);
r = await run(a, 'a-only', 'n = 2');
check(!r.isError, 'server a runs a second session', r);
r = await run(b, 'shared', "who = 'b'");
check(!r.isError, 'server b runs a cell', r);
check(r.structuredContent.session.id === 'shared', 'a result names the id as given', r);
console.log('ok one id in three namespaces');

check(JSON.stringify(await ids(a)) === '["a-only","shared"]', 'a lists its own',
      await ids(a));
check(JSON.stringify(await ids(b)) === '["shared"]', 'b lists its own', await ids(b));
const listed = cli('--list-sessions').split('\n').filter((l) => l).map((l) => l.split('\t')[0]);
check(JSON.stringify(listed.sort()) === '["cli-only","shared"]', 'the CLI lists its own',
      listed);
check(/^shared\t/m.test(cli('--namespace', 'mcp', '--list-sessions')),
      'the CLI lists the mcp namespace when asked');
console.log('ok listing stays within the namespace');

r = await a.callTool({ name: 'reset_session', arguments: { session: 'all' } });
check(!r.isError && r.structuredContent.removed === 2, 'a resets all of its own', r);
check((await ids(a)).length === 0, 'a has nothing left', await ids(a));
r = await run(b, 'shared', 'who');
check(text(r).includes("'b'"), "b's session is untouched", r);
check(cli('--session', 'shared', 'who').includes("'cli'"), "the CLI's session is untouched");
check(cli('--session', 'cli-only', 'n').includes('1'), "the CLI's other session too");
r = await run(a, 'shared', 'who');
check(r.isError && /NameError/.test(text(r)), "a's session is gone", r);
console.log('ok reset all stays within the namespace');

r = await b.callTool({ name: 'reset_session', arguments: { session: 'all' } });
check(!r.isError && r.structuredContent.removed === 1, 'b resets all of its own', r);
check(cli('--session', 'shared', 'who').includes("'cli'"), 'the CLI still has its own');
r = await a.callTool({ name: 'reset_session', arguments: { session: 'all' } });
check(cli('--list-sessions').split('\n').filter((l) => l).length === 2,
      'the CLI keeps both of its sessions');
cli('--reset', 'all');
console.log('ok the other server and the CLI');

await a.close();
await b.close();
console.log('ok close');

// mcp_proxy_client.mjs - `dolsot mcp --proxy` between two real SDK peers
// (@modelcontextprotocol/sdk): this client, which answers sampling with a
// scripted reply, attaches dolsot, which proxies two copies of
// tests/lib/mcp_proxy_server.mjs (alpha, given as --proxy -- CMD ARGS, and
// beta, as --proxy COMMAND) beside a --tool named shout.
// tests/cli/check_hosttools.c runs it, cold and warm, in a private store.
//
// usage: node tests/lib/mcp_proxy_client.mjs DOLSOT_BINARY [typegate]
// Prints "ok NAME" per step; exits 1 at the first failed step, with why.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const sdk = path.join(root, 'tools/node/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(pathToFileURL(path.join(sdk, 'client/index.js')).href);
const { StdioClientTransport } =
	await import(pathToFileURL(path.join(sdk, 'client/stdio.js')).href);
const { CreateMessageRequestSchema, McpError } =
	await import(pathToFileURL(path.join(sdk, 'types.js')).href);

const [bin, gate] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const server = 'node tests/lib/mcp_proxy_server.mjs';

function check(cond, what, detail) {
	if (!cond) {
		console.log(`FAIL ${what}` + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
		process.exit(1);
	}
}

// Every process under pid (its children, theirs, ...).
function descendants(pid) {
	const kids = [];

	for (const d of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
		try {
			const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
			const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);

			if (ppid === pid)
				kids.push(Number(d), ...descendants(Number(d)));
		} catch {
			// gone meanwhile
		}
	}
	return kids;
}

function alive(pid) {
	try {
		return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
	} catch {
		return false;
	}
}

async function allGone(pids, seconds) {
	for (let i = 0; i < seconds * 10; i++) {
		if (!pids.some(alive))
			return true;
		await sleep(100);
	}
	return false;
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

async function connect(sampling, args) {
	const transport = new StdioClientTransport({
		command: bin, args: ['mcp', '--timeout', '60', ...args],
		env: { ...process.env, DOLSOT_TOOL_TIMEOUT: '3' }, stderr: 'pipe',
	});
	const client = new Client({ name: 'proxy-test', version: '1.0.0' },
	                           { capabilities: sampling ? { sampling: {} } : {} });
	let err = '';

	transport.stderr.on('data', (d) => { err += d; });
	await client.connect(transport);
	return { client, transport, stderr: () => err };
}

// ---- a client that samples, two proxied servers and a --tool ----

const asked = [];
const { client, transport, stderr } = await connect(true, [
	'--tool', 'shout=cat >/dev/null; echo \'"helper"\'',
	'--proxy', '--', 'node', 'tests/lib/mcp_proxy_server.mjs', 'alpha',
	'--proxy', `${server} beta`,
]);
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
	const p = req.params;
	const prompt = p.messages[0].content.text;

	asked.push(p);
	if (prompt === 'refuse')
		throw new McpError(-1, 'the user declined');
	if (prompt === 'wait')
		return new Promise(() => {});
	return { role: 'assistant', model: 'scripted', stopReason: 'endTurn',
	         content: { type: 'text', text: `echo(${p.systemPrompt}|${p.maxTokens}): ${prompt}` } };
});
const serverPid = transport.pid;
const run = async (code, session = 'p') =>
	client.callTool({ name: 'python', arguments: { code, session } });

// The python tool's description lists every tool under its cell name.
const { tools } = await client.listTools();
const desc = tools[0].description;
for (const line of [
	'add(a: int, b: int = 1) -> dict  # Add two integers.',
	'alpha_shout(text: str) -> Any  # Upper-case a text (alpha).',
	'beta_shout(text: str) -> Any  # Upper-case a text (beta).',
	'beta_add(a: int, b: int = 1) -> dict',
	'word_count(text: str) -> Any',
	'llm_query(prompt: str, system_prompt: Optional[str] = None, max_tokens: int = 1024, ' +
	'model_preferences: Optional[dict] = None) -> str',
])
	check(desc.includes(line), `the description lists ${line}`, desc);
check(/  shout\(\*\*kwargs: Any\) -> Any/.test(desc), 'the --tool keeps its name', desc);
check(!desc.includes('not defined'), 'llm_query is defined', desc);
console.log('ok tools listed under their names');

// One cell calls proxied tools of both servers, the helper and the model.
let r = await run(
	"total = add(20, b=22)['sum']\n" +
	"words = word_count('one two three')\n" +
	"answer = llm_query(f'total is {total}', system_prompt='be brief', max_tokens=50)\n" +
	"print(total, words, alpha_shout('hi'), beta_shout('yo'), shout(), answer)\n" +
	"print(type(words).__name__, beta_add(1))");
check(!r.isError && r.structuredContent.stdout ===
      '42 3 HI! YO! helper echo(be brief|50): total is 42\nstr {\'sum\': 2}\n',
      'one cell calls proxied tools, a helper and llm_query', r);
check(asked.length === 1 && asked[0].messages[0].role === 'user' &&
      asked[0].systemPrompt === 'be brief' && asked[0].maxTokens === 50,
      'the sampling request', asked);
r = await run("llm_query('plain')");
check(r.structuredContent.value === "'echo(undefined|1024): plain'", 'llm_query defaults', r);
console.log('ok code mode: proxied tools, helper and llm_query in one cell');

// Errors come back as exceptions in the cell with the server's message.
const raised = async (code, ename, evalue, what) => {
	const got = await run(code);
	const e = got.structuredContent.error;

	check(got.isError && e && e.ename === ename && e.evalue.includes(evalue), what, got);
};
await raised('fail()', 'HostToolError', 'the widget is broken', 'a tool\'s isError');
await raised("llm_query('refuse')", 'HostToolError', 'the user declined',
             'a refused sampling request');
await raised("import json\nadd(json.loads('\"x\"'))", 'HostToolError', 'Input validation error',
             'the server\'s own argument check');
await raised("import sys\nsys.modules['_dolsot_hostcall']._channel.call('nope', {})",
             'HostToolError', "no host tool named 'nope'", 'an undeclared tool');
await raised("globals()['add']()", 'TypeError', "add(a: int, b: int = 1) -> dict: missing a required " +
             "argument: 'a'", 'arguments that do not fit the signature');
r = await run('x = 5\nimport json\nprint(json.dumps({"jsonrpc": "2.0", "id": 1000, ' +
              '"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}))');
check(!r.isError && r.structuredContent.stdout.startsWith('{"jsonrpc"') && asked.length === 3,
      'a frame printed on stdout reaches nobody: it is output', [r, asked.length]);
console.log('ok errors are exceptions carrying the server\'s message');

// A tool or a model that does not answer: TimeoutError, then all goes on.
await raised('hang()', 'TimeoutError', "tool 'hang' did not answer in time", 'a hanging tool');
await raised("llm_query('wait')", 'TimeoutError', "tool 'llm_query' did not answer in time",
             'a client that does not answer sampling');
r = await run("print(alpha_shout('after'), x)");
check(!r.isError && r.structuredContent.stdout === 'AFTER! 5\n', 'the server answers after', r);
console.log('ok a hanging tool or model raises TimeoutError');

// A server that dies: its calls fail saying so, the other goes on.
await raised('die()', 'HostToolError', "proxied server 'alpha' ended (exit status 3)",
             'a dying server');
await raised('add(1)', 'HostToolError', "proxied server 'alpha' ended (exit status 3)",
             'the dead server\'s tools');
r = await run("beta_add(2, 3)['sum']");
check(!r.isError && r.structuredContent.value === '5', 'the other server goes on', r);
check(/proxied server 'alpha' ended \(exit status 3\)/.test(stderr()), 'said on stderr',
      stderr());
console.log('ok a dead server\'s tools fail, the others go on');

// The type gate checks a call of a proxied tool against its schema.
if (gate === 'typegate') {
	r = await run("print('ran')\nbeta_add('x')", 'g');
	check(r.structuredContent.status === 'rejected' &&
	      /Argument 1 to "beta_add" has incompatible type "str"; expected "int"/.test(text(r)) &&
	      /hint: beta_add\(a: int, b: int = 1\) -> dict/.test(text(r)) &&
	      r.structuredContent.stdout === '', 'the type gate', r);
	console.log('ok the type gate checks proxied calls');
}

const kids = descendants(serverPid);
check(kids.length >= 1, 'the proxied servers are the server\'s children', kids);
await client.close();
check(await allGone([serverPid, ...kids], 20), 'every process ends with the client',
      [serverPid, ...kids].filter(alive));
console.log('ok close');

// ---- a client that does not sample: no llm_query ----

const plain = await connect(false, ['--proxy', `${server} alpha`]);
const listed = await plain.client.listTools();
check(!listed.tools[0].description.includes('llm_query(prompt') &&
      listed.tools[0].description.includes('llm_query(): not defined (the MCP client did ' +
                                           'not declare the sampling capability)') &&
      listed.tools[0].description.includes('add(a: int'), 'no llm_query, and why',
      listed.tools[0].description);
r = await plain.client.callTool({ name: 'python', arguments: { code: "llm_query('x')" } });
check(r.isError && r.structuredContent.error.ename === 'NameError', 'llm_query undefined', r);
await plain.client.close();
console.log('ok no sampling, no llm_query');

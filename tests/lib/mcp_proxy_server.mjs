// mcp_proxy_server.mjs - an MCP server written with the official SDK
// (@modelcontextprotocol/sdk's McpServer over stdio) for `dolsot mcp
// --proxy` to proxy (tests/lib/mcp_proxy_client.mjs drives it).
//
// usage: node tests/lib/mcp_proxy_server.mjs [NAME]   (serverInfo.name; "alpha")
// Tools: add (a schema with a default and an output schema), shout (text),
// word-count (a name that is no Python identifier), fail (isError), hang
// (never answers), die (the server exits, status 3).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const nm = path.join(root, 'tools/node/node_modules');
const sdk = path.join(nm, '@modelcontextprotocol/sdk/dist/esm');
const { McpServer } = await import(pathToFileURL(path.join(sdk, 'server/mcp.js')).href);
const { StdioServerTransport } =
	await import(pathToFileURL(path.join(sdk, 'server/stdio.js')).href);
const { z } = await import(pathToFileURL(path.join(nm, 'zod/index.js')).href);

const name = process.argv[2] ?? 'alpha';
const server = new McpServer({ name, version: '1.0.0' });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

server.registerTool('add', {
	description: 'Add two integers.',
	inputSchema: { a: z.number().int().describe('the first'), b: z.number().int().default(1) },
	outputSchema: { sum: z.number().int() },
}, async ({ a, b }) => ({ content: [{ type: 'text', text: `${a + b}` }],
                          structuredContent: { sum: a + b } }));
server.registerTool('shout', {
	description: `Upper-case a text (${name}).`,
	inputSchema: { text: z.string() },
}, async ({ text: t }) => text(`${t.toUpperCase()}!`));
server.registerTool('word-count', {
	description: 'Count the words of a text.',
	inputSchema: { text: z.string() },
}, async ({ text: t }) => text(`${t.split(/\s+/).filter(Boolean).length}`));
server.registerTool('fail', { description: 'Always fails.' },
	async () => ({ isError: true, content: [{ type: 'text', text: 'the widget is broken' }] }));
server.registerTool('hang', { description: 'Never answers.' }, () => new Promise(() => {}));
server.registerTool('die', { description: 'Ends the server.' }, async () => process.exit(3));

await server.connect(new StdioServerTransport());

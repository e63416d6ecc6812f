// A 2025-era host (@modelcontextprotocol/sdk 1.32.2, 2025-11-25 only) that launched
// `fernhill-gate serve` over stdio:
//
//   node gate-v1.mjs GATE_BINARY POLICY TOOL ARGUMENTS_JSON
//
// Calls the tool once and prints what came back as one JSON line (see gate.mjs). A question on
// the back-channel (the server behind the gate asking, relayed) is answered yes
// ({"release": true}) and counted. The gate gets this process's environment (USER: the host's
// user). Run it from the folder where npm installed the SDK.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [gate, policy, tool, argumentsJson] = process.argv.slice(2);
if (!gate || !policy || !tool || !argumentsJson) throw new Error('usage: node gate-v1.mjs GATE_BINARY POLICY TOOL ARGUMENTS_JSON');
let asked = 0;

const client = new Client({ name: 'ts-sdk-v1-gate-check', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async () => {
    asked += 1;
    return { action: 'accept', content: { release: true } };
});
await client.connect(new StdioClientTransport({ command: gate, args: ['serve', policy], env: process.env, stderr: 'inherit' }));
try {
    const result = await client.callTool({ name: tool, arguments: JSON.parse(argumentsJson) });
    console.log(
        JSON.stringify({
            isError: result.isError === true,
            text: result.content?.find(block => block.type === 'text')?.text ?? null,
            structured: result.structuredContent ?? null,
            held: result._meta?.['fernhill/held'] ?? null,
            asked
        })
    );
} finally {
    await client.close();
}

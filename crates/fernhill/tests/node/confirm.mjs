// The TypeScript SDK's 2026-07-28 client (@modelcontextprotocol/client 2.4.0) against
// `fernhill-mcp serve`, over stdio or Streamable HTTP: one refund released, one declined.
//
//   node confirm.mjs stdio FERNHILL_MCP_BINARY SHOP_API_URL
//   node confirm.mjs http MCP_URL [ISSUER CLIENT_ID CLIENT_SECRET]
//
// With an issuer, the client authorizes as a machine (the SDK's ClientCredentialsProvider:
// discovery from the server's 401, a token for the server's URL).
//
// Prints one line per step; the Rust test compares them. NODE_PATH names the folder where
// npm installed the SDK.
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [transportKind, ...rest] = process.argv.slice(2);
const answers = ['accept', 'decline'];
const asked = [];

const client = new Client(
    { name: 'ts-sdk-check', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } }
);
client.setRequestHandler('elicitation/create', async request => {
    asked.push(request.params.message);
    const action = answers.shift() ?? 'cancel';
    return action === 'accept' ? { action, content: { release: true } } : { action };
});

const transport =
    transportKind === 'stdio'
        ? new StdioClientTransport({ command: rest[0], args: ['serve'], env: { ...process.env, SHOP_API_URL: rest[1] } })
        : new StreamableHTTPClientTransport(new URL(rest[0]), rest[1] ? { authProvider: credentials(rest) } : {});

function credentials([, expectedIssuer, clientId, clientSecret]) {
    return new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer, scope: 'orders:read refunds:write' });
}
await client.connect(transport);

async function refund(order) {
    const quote = await client.callTool({ name: 'quote_refund', arguments: { order_id: order } });
    const done = await client.callTool({ name: 'issue_refund', arguments: { quote_id: quote.structuredContent.quote_id } });
    return `${done.structuredContent.refund_id} ${done.structuredContent.status}`;
}

console.log(`asked and released: ${await refund('O-2289')}`);
console.log(`asked and declined: ${await refund('O-1145')}`);
console.log(`questions: ${asked.length}`);
console.log(`first question: ${asked[0]}`);
await client.close();

// A 2025-era host played by the TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2, which
// speaks 2025-11-25 only) against `fernhill-mcp serve`, over stdio or Streamable HTTP (a session):
// the server asks on the back-channel and the call waits for the answer.
//
//   node legacy.mjs stdio FERNHILL_MCP_BINARY SHOP_API_URL
//   node legacy.mjs http MCP_URL
//
// Three hosts in turn, each on its own connection: a lead who confirms (O-2289), one who
// declines (O-1145), and a host with no elicitation capability (O-1145, one line).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [transportKind, ...rest] = process.argv.slice(2);

function transport() {
    return transportKind === 'stdio'
        ? new StdioClientTransport({ command: rest[0], args: ['serve'], env: { ...process.env, SHOP_API_URL: rest[1] } })
        : new StreamableHTTPClientTransport(new URL(rest[0]));
}

async function host(label, action, order, skus) {
    const asked = [];
    const capabilities = action ? { elicitation: { form: {} } } : {};
    const client = new Client({ name: `ts-sdk-v1-${label.replace(' ', '-')}`, version: '1.0.0' }, { capabilities });
    if (action) {
        client.setRequestHandler(ElicitRequestSchema, async request => {
            asked.push(request.params.message);
            return action === 'accept' ? { action, content: { release: true } } : { action };
        });
    }
    // The SDK keeps the negotiated revision to itself; it tells the transport, so listen there.
    const wire = transport();
    let negotiated = 'none';
    const setVersion = wire.setProtocolVersion?.bind(wire);
    wire.setProtocolVersion = version => {
        negotiated = version;
        setVersion?.(version);
    };
    await client.connect(wire);
    const quote = await client.callTool({ name: 'quote_refund', arguments: { order_id: order, ...(skus ? { skus } : {}) } });
    let outcome;
    try {
        const done = await client.callTool({ name: 'issue_refund', arguments: { quote_id: quote.structuredContent.quote_id } });
        outcome = `${done.structuredContent.refund_id} ${done.structuredContent.status}`;
    } catch (error) {
        outcome = `error ${error.code}`;
    }
    console.log(`${label}: ${negotiated}, ${outcome}, questions asked: ${asked.length}`);
    await client.close();
}

await host('confirm', 'accept', 'O-2289');
await host('decline', 'decline', 'O-1145');
await host('no elicitation', null, 'O-1145', ['KG-1043']);

// The official Tasks client library (@modelcontextprotocol/ext-tasks 0.2.2) over the TypeScript
// SDK's 2026-07-28 client (@modelcontextprotocol/client 2.4.0) against `fernhill-mcp serve` over
// Streamable HTTP under `--approval another-lead`: one refund above the limit, which its
// requester may not decide, runs as a task that waits for another lead.
//
//   SHOP_API_TOKEN=… node tasks.mjs http MCP_URL SHOP_API_URL
//
// issue_refund answers with a task (working); the library polls tasks/get while a lead decides
// the refund in the shop's back office (this script, at the shop's API, as lead-2), and the
// task completes with the released refund. Prints one line per step; the Rust test compares
// them. Run it from the folder where npm installed both packages (ES modules resolve from
// there, not NODE_PATH).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
    createApplicationInputHandler,
    createTaskSessionFromClient,
    DispatchError,
    resultFromTaskOutcome,
    taskViewFromExecutionEvent
} from '@modelcontextprotocol/ext-tasks/client';

const [transportKind, url, shopApi] = process.argv.slice(2);
if (transportKind !== 'http' || !url || !shopApi) throw new Error('usage: node tasks.mjs http MCP_URL SHOP_API_URL');

const clientInfo = { name: 'ts-sdk-tasks-check', version: '1.0.0' };
const capabilities = { elicitation: { form: {} } };
const asked = [];

const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);

// The SDK's codecs do not carry the Tasks wire shapes (a CreateTaskResult, tasks/*), so
// ext-tasks wants a raw path beside them, as the Inspector builds one: the request goes out on
// the SDK's own transport (which derives MCP-Protocol-Version, Mcp-Method and Mcp-Name from
// the body's _meta envelope), and its response is taken off the transport before the SDK
// would see it (the SDK only knows its own, numeric ids).
const rawPrefix = 'ext-tasks-';
const pending = new Map();
let rawCounter = 0;
const sdkOnMessage = transport.onmessage;
transport.onmessage = (message, extra) => {
    const waiter = typeof message.id === 'string' && message.id.startsWith(rawPrefix) ? pending.get(message.id) : undefined;
    if (!waiter) return sdkOnMessage?.(message, extra);
    pending.delete(message.id);
    waiter(message.error ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result });
};

async function rawDispatch(request, options = {}) {
    const id = `${rawPrefix}${++rawCounter}`;
    const timeout = options.context?.requestTimeoutMs ?? 60_000;
    let timer, onAbort;
    const answered = new Promise((resolve, reject) => {
        pending.set(id, resolve);
        timer = setTimeout(() => reject(new DispatchError(`${request.method} timed out after ${timeout} ms`)), timeout);
        onAbort = () => reject(options.signal.reason);
        options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
        options.signal?.throwIfAborted();
        const sent = transport.send({ jsonrpc: '2.0', id, ...request }, {
            ...(options.context?.headers ? { headers: options.context.headers } : {}),
            ...(options.signal ? { requestSignal: options.signal } : {})
        });
        sent.catch(() => {}); // a failure after the answer came changes nothing
        await Promise.race([sent, answered]);
        return await answered;
    } catch (error) {
        if (error instanceof DispatchError || options.signal?.aborted) throw error;
        throw new DispatchError(`${request.method} failed: ${error.message}`, false, { cause: error });
    } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        pending.delete(id);
    }
}

const session = createTaskSessionFromClient(client, {
    endpointId: `fernhill ${url}`,
    rawDispatch,
    v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities: capabilities },
    // The lead accepts: the one question is whether to release the refund.
    onInputRequest: createApplicationInputHandler({
        elicitation: async request => {
            asked.push(request.params.message);
            return { action: 'accept', content: { release: true } };
        },
        sampling: async () => {
            throw new Error('fernhill asked for sampling');
        },
        roots: async () => ({ roots: [] })
    }),
    onError: error => console.error(`ext-tasks: ${error.message}`)
});

try {
    const quote = await client.callTool({ name: 'quote_refund', arguments: { order_id: 'O-2289' } });
    if (quote.isError) throw new Error(`quote_refund failed: ${quote.content[0]?.text}`);
    const execution = await session.callTool('issue_refund', { quote_id: quote.structuredContent.quote_id });
    if (execution.kind !== 'task') throw new Error(`issue_refund was not run as a task (${execution.kind})`);

    const states = [];
    const seen = await session.task(execution.handle.taskId).snapshot();
    console.log(`task: ${seen.status}, says: ${seen.statusMessage}`);
    // Another lead releases it in the shop's back office while the task waits.
    const refundId = /on (R-\d+)/.exec(seen.statusMessage ?? '')?.[1];
    const decided = await fetch(`${shopApi}/refunds/${refundId}/confirm`, {
        method: 'POST',
        headers: {
            authorization: `Bearer ${process.env.SHOP_API_TOKEN}`,
            'content-type': 'application/json',
            'fernhill-on-behalf-of': 'host user lead-2'
        },
        body: '{}'
    });
    if (!decided.ok) throw new Error(`the back office's release failed: ${decided.status} ${await decided.text()}`);
    const { outcome, lastTask } = await execution.settle({
        onEvent: event => {
            const status = taskViewFromExecutionEvent(event)?.status ?? (event.type === 'outcome' ? event.outcome.status : undefined);
            if (status && states.at(-1) !== status) states.push(status);
        }
    });
    const done = resultFromTaskOutcome(outcome);
    if (done.isError) throw new Error(`issue_refund failed: ${JSON.stringify(done.content)}`);
    if (lastTask?.status !== 'completed') throw new Error(`the task ended ${lastTask?.status}`);
    if (asked.length !== 0) throw new Error(`the requester was asked ${asked.length} times`);

    console.log(`task states seen: ${states.join(',')}`);
    console.log(`released: ${done.structuredContent.refund_id} ${done.structuredContent.status}`);
} finally {
    await session.close();
    await client.close();
}

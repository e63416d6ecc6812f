// The TypeScript SDK's 2026-07-28 client (@modelcontextprotocol/client 2.4.0), and the Tasks
// extension's own client library over it (@modelcontextprotocol/ext-tasks 0.2.2, as the MCP
// Inspector 2.x drives tasks), as the host of a desktop that launched `fernhill-gate serve`:
//
//   node gate.mjs call GATE_BINARY POLICY TOOL ARGUMENTS_JSON
//   node gate.mjs task GATE_BINARY POLICY TOOL ARGUMENTS_JSON
//
// `call` calls the tool once and prints what came back as one JSON line: whether it is an
// error, its first text, its structured content, and the gate's `_meta["fernhill/held"]`.
// `task` calls it declaring the Tasks extension: it prints the task as first seen (one JSON
// line), waits for a line on stdin (the test has a person decide the call meanwhile), then
// follows the task to its end and prints the states it saw and its result. A question the
// gate relays from the server behind it is answered yes ({"release": true}) and counted.
//
// The gate is started with this process's environment (USER names the host's user). Run it
// from the folder where npm installed both packages (ES modules resolve from there).
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
    createApplicationInputHandler,
    createTaskSessionFromClient,
    DispatchError,
    resultFromTaskOutcome,
    taskViewFromExecutionEvent
} from '@modelcontextprotocol/ext-tasks/client';
import { createInterface } from 'node:readline';

const [mode, gate, policy, tool, argumentsJson] = process.argv.slice(2);
if (!['call', 'task'].includes(mode) || !gate || !policy || !tool || !argumentsJson) {
    throw new Error('usage: node gate.mjs call|task GATE_BINARY POLICY TOOL ARGUMENTS_JSON');
}
const args = JSON.parse(argumentsJson);
const clientInfo = { name: 'ts-sdk-gate-check', version: '1.0.0' };
const capabilities = { elicitation: { form: {} } };
let asked = 0;
const answer = async () => {
    asked += 1;
    return { action: 'accept', content: { release: true } };
};

const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
client.setRequestHandler('elicitation/create', answer);
const transport = new StdioClientTransport({ command: gate, args: ['serve', policy], env: process.env, stderr: 'inherit' });
await client.connect(transport);

/// What a tool's result says, as one JSON value.
function said(result) {
    return {
        isError: result.isError === true,
        text: result.content?.find(block => block.type === 'text')?.text ?? null,
        structured: result.structuredContent ?? null,
        held: result._meta?.['fernhill/held'] ?? null,
        asked
    };
}

try {
    if (mode === 'call') {
        console.log(JSON.stringify(said(await client.callTool({ name: tool, arguments: args }))));
    } else {
        console.log(JSON.stringify(await followTask()));
    }
} finally {
    await client.close();
}

/// The call made as a task: seen first, then (once stdin says so) followed to its end.
async function followTask() {
    // As tests/node/tasks.mjs does: ext-tasks needs a raw path beside the SDK's codecs, which
    // do not carry the Tasks wire shapes; its responses are taken off the transport first.
    const rawPrefix = 'ext-tasks-';
    const pending = new Map();
    let rawCounter = 0;
    const sdkOnMessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
        const waiter =
            typeof message.id === 'string' && message.id.startsWith(rawPrefix) ? pending.get(message.id) : undefined;
        if (!waiter) return sdkOnMessage?.(message, extra);
        pending.delete(message.id);
        waiter(message.error ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result });
    };
    const rawDispatch = async (request, options = {}) => {
        const id = `${rawPrefix}${++rawCounter}`;
        const timeout = options.context?.requestTimeoutMs ?? 60_000;
        let timer;
        const answered = new Promise((resolve, reject) => {
            pending.set(id, resolve);
            timer = setTimeout(() => reject(new DispatchError(`${request.method} timed out after ${timeout} ms`)), timeout);
        });
        try {
            await transport.send({ jsonrpc: '2.0', id, ...request });
            return await answered;
        } finally {
            clearTimeout(timer);
            pending.delete(id);
        }
    };
    const session = createTaskSessionFromClient(client, {
        endpointId: `fernhill-gate ${policy}`,
        rawDispatch,
        v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities: capabilities },
        onInputRequest: createApplicationInputHandler({
            elicitation: answer,
            sampling: async () => {
                throw new Error('the gate asked for sampling');
            },
            roots: async () => ({ roots: [] })
        }),
        onError: error => console.error(`ext-tasks: ${error.message}`)
    });
    try {
        const execution = await session.callTool(tool, args);
        if (execution.kind !== 'task') return { notATask: execution.kind, ...said(resultFromTaskOutcome(execution.outcome ?? {})) };
        const seen = await session.task(execution.handle.taskId).snapshot();
        console.log(JSON.stringify({ task: seen.status, says: seen.statusMessage ?? null }));
        // The test has a person decide the call, then says so.
        const lines = createInterface({ input: process.stdin });
        for await (const _ of lines) break;
        lines.close();
        const states = [seen.status];
        const { outcome, lastTask } = await execution.settle({
            onEvent: event => {
                const status = taskViewFromExecutionEvent(event)?.status ?? (event.type === 'outcome' ? event.outcome.status : undefined);
                if (status && states.at(-1) !== status) states.push(status);
            }
        });
        return { states, last: lastTask?.status ?? null, ...said(resultFromTaskOutcome(outcome)) };
    } finally {
        await session.close();
    }
}

// The Fernhill shop's two refund tools, quote_refund and issue_refund, on the TypeScript MCP SDK
// v2 (@modelcontextprotocol/server 2.4.0): a performance peer of `fernhill-mcp serve --http` and of
// the Python reference (../shared/peers/python-shop/shop.py), driven by fernhill-load.
//
//   node bench/typescript-shop.mjs --port 0 --shop-api http://127.0.0.1:8710
//
// Streamable HTTP, stateless, protocol revision 2026-07-28 (2025-era requests get the SDK's
// stateless fallback): the SDK's createMcpHandler builds a fresh McpServer per request from the
// factory below, mounted on node:http with toNodeHandler and a parsed body (its Express recipe).
// Prints one line on stdout, the MCP endpoint (http://127.0.0.1:PORT/mcp), and nothing else.
// Needs Node >= 20 and two npm packages in a node_modules in or above this file's folder (a
// symlink to one will do; NODE_PATH does not apply to ES modules):
//   npm install @modelcontextprotocol/server@2.4.0 @modelcontextprotocol/node@2.1.2
// Environment: SHOP_REQUEST_STATE_KEY (secrets, comma-separated: the first seals, all open;
// unset: a random key for this process), SHOP_REQUEST_STATE_TTL (seconds, default 600).
//
// issue_refund asks as ours does: it posts the refund (one API call), and when the API holds it
// (above 150.00) answers input_required with a form-mode question under `confirm` and the
// refund's ID sealed (AES-256-GCM) as requestState. The retry opens the state in the SDK's
// requestState.verify hook (a bad state is a -32602 JSON-RPC error), claims the refund once in
// memory, and makes one API call: confirm on a yes, cancel on a no; a dismissed question
// leaves the refund held.

import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { createMcpHandler, fromJsonSchema, inputRequired, inputResponse, McpServer } from '@modelcontextprotocol/server';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';

const { values: cli } = parseArgs({ options: { port: { type: 'string', default: '0' }, 'shop-api': { type: 'string' } } });
if (!cli['shop-api']) {
    process.stderr.write('usage: node typescript-shop.mjs --port 0 --shop-api http://127.0.0.1:8710\n');
    process.exit(2);
}

// ---- the shop's API: JSON over keep-alive connections ----------------------------------------
const apiBase = new URL(cli['shop-api']);
const apiPrefix = apiBase.pathname.replace(/\/$/, '');
const apiAgent = new http.Agent({ keepAlive: true });

function api(method, path, body) {
    const data = body === undefined ? '' : JSON.stringify(body);
    const headers = { accept: 'application/json', 'content-length': Buffer.byteLength(data) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // The API's credential, as the fernhill server shows it.
    if (process.env.SHOP_API_TOKEN) headers.authorization = `Bearer ${process.env.SHOP_API_TOKEN}`;
    // Who asks for a refund and who decides it, as the fernhill server names a caller it did not
    // authenticate: the API releases a held refund only for a decider it is told of.
    if (method === 'POST' && path.startsWith('/refunds')) headers['fernhill-on-behalf-of'] = 'unauthenticated';
    return new Promise((resolve, reject) => {
        const req = http.request(
            { host: apiBase.hostname, port: apiBase.port, path: apiPrefix + path, method, headers, agent: apiAgent },
            res => {
                const chunks = [];
                res.on('data', chunk => chunks.push(chunk));
                res.on('end', () => {
                    let json = {};
                    try { json = JSON.parse(Buffer.concat(chunks).toString() || '{}'); } catch {}
                    if (res.statusCode < 300) return resolve(json);
                    const error = new Error(json.detail ?? json.title ?? `The shop's API answered HTTP ${res.statusCode}.`);
                    error.status = res.statusCode;
                    reject(error);
                });
            }
        );
        req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
        req.on('error', e => reject(new Error(`The shop's API did not answer (${e.message}). Try again shortly.`)));
        req.end(data);
    });
}

// ---- requestState: {r: refund, q: quote, exp} sealed with AES-256-GCM ------------------------
const stateKeys = (process.env.SHOP_REQUEST_STATE_KEY ?? '').split(',').map(k => k.trim()).filter(Boolean)
    .map(k => createHash('sha256').update(k).digest());
if (stateKeys.length === 0) stateKeys.push(randomBytes(32));
const stateTtl = Number(process.env.SHOP_REQUEST_STATE_TTL ?? 600);

function seal(claims) {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', stateKeys[0], nonce);
    const body = Buffer.concat([cipher.update(JSON.stringify(claims)), cipher.final()]);
    return 'v1.' + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

/** The requestState.verify hook: the claims, or a throw (the SDK answers -32602). */
function open(token) {
    if (!token.startsWith('v1.')) throw new Error('malformed');
    const raw = Buffer.from(token.slice(3), 'base64url');
    if (raw.length < 12 + 16 + 2) throw new Error('malformed');
    const [nonce, body, tag] = [raw.subarray(0, 12), raw.subarray(12, -16), raw.subarray(-16)];
    for (const key of stateKeys) {
        let claims;
        try {
            const decipher = createDecipheriv('aes-256-gcm', key, nonce).setAuthTag(tag);
            claims = JSON.parse(Buffer.concat([decipher.update(body), decipher.final()]).toString());
        } catch { continue; }
        if (!(claims.exp > Date.now() / 1000)) throw new Error('expired');
        return claims;
    }
    throw new Error('seal');
}

// ---- what this process remembers: the quotes it gave out, the refunds already answered -------
const quotes = new Set();
const answered = new Map(); // refund_id -> 'confirmed' | 'declined'

function claim(refundId, word) {
    const before = answered.get(refundId);
    if (before === 'confirmed') throw new Error(`Refund ${refundId} was already confirmed. Don't send the same answer again.`);
    if (before === 'declined') throw new Error(`Refund ${refundId} was declined, and a decline stands. Don't send another answer.`);
    answered.set(refundId, word);
}

function structured(record, note) {
    const content = [{ type: 'text', text: JSON.stringify(record) }];
    if (note) content.unshift({ type: 'text', text: note });
    return { content, structuredContent: record };
}

// ---- the tools' schemas (as `fernhill-mcp serve` lists them), compiled once ----------------------
const ID = { order: '^O-[0-9]{4,9}$', quote: '^Q-[0-9]{4,9}$', refund: '^R-[0-9]{4,9}$', sku: '^[A-Z]{2}-[0-9]{4}$' };
const AMOUNT = { type: 'string', pattern: '^-?[0-9]+\\.[0-9]{2}$', description: 'An amount in euros with two decimals, such as 180.00' };
const schema = s => fromJsonSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', ...s });
const quoteInput = schema({ required: ['order_id'], properties: {
    order_id: { title: 'Order', description: "The shop's order ID, such as O-1145.", type: 'string', pattern: ID.order },
    skus: { title: 'Order lines', type: 'array', items: { type: 'string', pattern: ID.sku }, default: [],
            description: "The SKUs of the order's lines to refund, such as KG-1043. Leave out (or empty) to refund\nthe whole order, shipping included." } } });
const quoteOutput = schema({ required: ['quote_id', 'order_id', 'skus', 'includes_shipping', 'amount', 'currency', 'needs_confirmation'], properties: {
    quote_id: { type: 'string', pattern: ID.quote }, order_id: { type: 'string', pattern: ID.order },
    skus: { type: 'array', items: { type: 'string', pattern: ID.sku } }, includes_shipping: { type: 'boolean' },
    amount: AMOUNT, currency: { type: 'string' }, needs_confirmation: { type: 'boolean' } } });
const issueInput = schema({ required: ['quote_id'], properties: {
    quote_id: { title: 'Quote', description: 'The quote_id that quote_refund returned, such as Q-5001.', type: 'string', pattern: ID.quote } } });
const refundOutput = schema({ required: ['refund_id', 'order_id', 'quote_id', 'amount', 'currency', 'status'], properties: {
    refund_id: { type: 'string', pattern: ID.refund }, order_id: { type: 'string', pattern: ID.order },
    quote_id: { type: 'string', pattern: ID.quote }, amount: AMOUNT, currency: { type: 'string' },
    status: { type: 'string', enum: ['needs_confirmation', 'requested', 'cancelled'] } } });
const RELEASE_FORM = { type: 'object', required: ['release'], properties: { release: { type: 'boolean', title: 'Release this refund',
    description: "Yes releases the refund the shop's API holds; no leaves it held." } } };
const CONFIRM = 'confirm';

// ---- the tools -------------------------------------------------------------------------------
async function quoteRefund({ order_id, skus }) {
    const quote = await api('POST', '/quotes', { order_id, skus: skus?.length ? skus : null });
    quotes.add(quote.quote_id);
    return structured(quote);
}

async function issueRefund({ quote_id }, ctx) {
    // A retry with this call's state and an answer that fits finishes from the state alone.
    const state = ctx.mcpReq.requestState(); // opened by the verify hook, or undefined
    const said = inputResponse(ctx.mcpReq.inputResponses, CONFIRM);
    if (state?.q === quote_id && said.kind === 'elicit') {
        if (said.action === 'cancel') return stillHeld(state.r);
        if (said.action === 'decline') return refuse(state.r);
        if (typeof said.content?.release === 'boolean') return said.content.release ? release(state.r) : refuse(state.r);
    }
    if (!quotes.has(quote_id)) throw new Error(`There is no quote ${quote_id}. Call quote_refund for the order first.`);
    const refund = await api('POST', '/refunds', { quote_id });
    if (refund.status !== 'needs_confirmation') return structured(refund);
    return inputRequired({
        inputRequests: { [CONFIRM]: inputRequired.elicit({ requestedSchema: RELEASE_FORM,
            message: `Refund ${refund.amount} on order ${refund.order_id}? It is above the policy limit, so a lead must confirm it.` }) },
        requestState: seal({ r: refund.refund_id, q: quote_id, exp: Math.floor(Date.now() / 1000) + stateTtl })
    });
}

async function release(refundId) {
    claim(refundId, 'confirmed');
    try {
        return structured(await api('POST', `/refunds/${refundId}/confirm`, {}));
    } catch (error) {
        if (error.status === 409) throw new Error(`Refund ${refundId} is not held any more, so it can't be released again.`);
        throw error;
    }
}

async function refuse(refundId) {
    claim(refundId, 'declined');
    const cancelled = await api('POST', `/refunds/${refundId}/cancel`, {});
    return structured(cancelled, `The lead declined refund ${refundId}, so it is cancelled. Don't issue it again unless the customer's case changes.`);
}

async function stillHeld(refundId) {
    const refund = await api('GET', `/refunds/${refundId}`);
    return structured(refund, refund.status === 'needs_confirmation'
        ? `The lead closed the question without answering. Refund ${refundId} stays held by the shop's API; call issue_refund again later to ask again.`
        : `Refund ${refundId} is ${refund.status}; nothing more to confirm.`);
}

// ---- one McpServer per request (the SDK's stateless model); everything above is shared ------
const serverInfo = { name: 'shop', title: 'Fernhill shop', version: '0.1.0',
    description: 'Orders, refund quotes and refunds of the Fernhill kitchen and garden shop.' };
const instructions = 'Support tools for the Fernhill shop. Quote a refund with quote_refund before issuing it with issue_refund. ' +
    "A refund above the policy limit needs a support lead's confirmation: issue_refund asks the person at the host, and a decline stands.";
const writes = { readOnlyHint: false, destructiveHint: false, openWorldHint: false };

function shop() {
    const server = new McpServer(serverInfo, { instructions, requestState: { verify: open } });
    server.registerTool('quote_refund', {
        title: 'Quote a refund',
        description: 'Quote a refund for an order before issuing it. Without skus the quote covers the whole order, shipping included. Returns a quote_id for issue_refund.',
        inputSchema: quoteInput, outputSchema: quoteOutput, annotations: { ...writes, idempotentHint: false }
    }, quoteRefund);
    server.registerTool('issue_refund', {
        title: 'Issue a refund',
        description: "Issue the refund a quote_refund quote describes, by its quote_id. The shop's API holds a refund above the policy limit with status needs_confirmation until a support lead confirms it; this tool then asks the lead at the host, and releases or cancels the refund on their answer.",
        inputSchema: issueInput, outputSchema: refundOutput, annotations: { ...writes, idempotentHint: true }
    }, issueRefund);
    return server;
}

// Mounted as the SDK's Express recipe does (express.json(), then toNodeHandler with the parsed
// body): a parsed body spares the handler a clone and a second read of every request.
const handler = toNodeHandler(createMcpHandler(shop), { onerror: e => process.stderr.write(`typescript-shop: ${e.stack ?? e}\n`) });
const validHost = localhostHostValidation();
const validOrigin = localhostOriginValidation();
const BODY_LIMIT = 4 * 1024 * 1024;
const answer = (res, status, code, message) => res.writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));

const listener = http.createServer((req, res) => {
    if (!validHost(req, res) || !validOrigin(req, res)) return;
    if (req.url !== '/mcp' && !req.url.startsWith('/mcp?')) return answer(res, 404, -32601, 'Not found: the MCP endpoint is /mcp');
    if (req.method !== 'POST') return void handler(req, res); // the SDK answers GET and DELETE (405)
    const chunks = [];
    let size = 0;
    req.on('data', chunk => {
        size += chunk.length;
        if (size > BODY_LIMIT) req.destroy();
        else chunks.push(chunk);
    });
    req.on('end', () => {
        let body;
        try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch {
            return answer(res, 400, -32700, 'Parse error: the request body is not valid JSON');
        }
        void handler(req, res, body);
    });
});
listener.keepAliveTimeout = 65_000;
listener.headersTimeout = 66_000;
listener.listen(Number(cli.port), '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${listener.address().port}/mcp\n`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));

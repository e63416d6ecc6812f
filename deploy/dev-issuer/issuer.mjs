// A development OAuth authorization server, for the tests and for trying Fernhill and its gate
// on one machine (docs/gate.md, "Five minutes"): oidc-provider (npm), on a loopback port (PORT,
// or an ephemeral one), issuing ES256 JWT access tokens (typ at+jwt) whose audience is the MCP
// endpoint a client names as its resource (RFC 8707). Prints its issuer URL, then serves until
// killed. Its sign-in page lets anyone in by any name, with any password: never run it where
// anyone but you can reach it.
//
//   npm install && PORT=8700 node issuer.mjs
//
// Clients:
//   lead     confidential (client_secret_basic, secret "lead-secret"): client credentials,
//            scopes orders:read and refunds:write
//   other-lead  the same as lead, another person (secret "other-lead-secret")
//   reader   confidential (secret "reader-secret"): client credentials, orders:read only
//   agent    confidential (secret "agent-secret"): client credentials, orders:read and
//            refunds:request (asks for refunds, decides none)
//   approvals  the approval pages' client (the shop's and the gate's): confidential (secret
//            "approvals-secret"), authorization code with PKCE, redirected to
//            /approvals/callback on loopback, any port; scopes refunds:write and approvals:decide
//   host     public (PKCE, no secret): authorization code with a loopback redirect
//   fernhill-mcp  the MCP server's own client, for introspection (secret "fernhill-mcp-secret")
// With ACCESS_TOKENS=opaque in the environment it issues opaque tokens instead of JWTs, which a
// resource server can only check by introspection. With PAIRWISE=1 the clients people sign in
// with (host, approvals) get pairwise subjects, each its own `sub` for one person (a digest of
// the client and the account: stricter than a sector's, as an issuer may be), so the host's
// token and the approval page's name one person as two. Every person's access token carries
// `staff_id` (`staff-` and the account), the same to every client: the claim an operator names
// with --auth-person-claim. PEOPLE, a JSON object in the environment, gives some accounts the
// `roles` and `groups` claims an approval rule may name (`decided_by = { role = ... }`):
//   PEOPLE='{"pat": {"roles": ["pricing"]}, "sam": {"groups": ["pricing-team"]}}'
// (anyone else's token carries neither).
// The dev login form (`/interaction/:uid`) signs anyone in by name.
import { createServer } from 'node:http';
import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const server = createServer();
await new Promise(resolve => server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'ES256', use: 'sig' };
const mcpResource = /^http:\/\/(127\.0\.0\.1|localhost):\d+\/mcp$/;
const pairwise = process.env.PAIRWISE === '1';
const people = pairwise ? { subject_type: 'pairwise' } : {};
const holdings = JSON.parse(process.env.PEOPLE ?? '{}');
// What an account's token says it holds: its staff ID, and its roles and groups where PEOPLE names them.
const claimsOf = accountId => {
    const { roles, groups } = holdings[accountId] ?? {};
    return { staff_id: `staff-${accountId}`, ...(roles && { roles }), ...(groups && { groups }) };
};

const provider = new Provider(issuer, {
    clients: [
        { client_id: 'lead', client_secret: 'lead-secret', grant_types: ['client_credentials'], redirect_uris: [],
          response_types: [], scope: 'orders:read refunds:write' },
        { client_id: 'other-lead', client_secret: 'other-lead-secret', grant_types: ['client_credentials'],
          redirect_uris: [], response_types: [], scope: 'orders:read refunds:write' },
        { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'], redirect_uris: [],
          response_types: [], scope: 'orders:read' },
        { client_id: 'agent', client_secret: 'agent-secret', grant_types: ['client_credentials'], redirect_uris: [],
          response_types: [], scope: 'orders:read refunds:request' },
        { client_id: 'approvals', client_secret: 'approvals-secret', application_type: 'native',
          grant_types: ['authorization_code'], response_types: ['code'],
          redirect_uris: ['http://127.0.0.1/approvals/callback'], scope: 'openid refunds:write approvals:decide',
          ...people },
        { client_id: 'fernhill-mcp', client_secret: 'fernhill-mcp-secret', grant_types: [], redirect_uris: [],
          response_types: [] },
        { client_id: 'host', token_endpoint_auth_method: 'none', application_type: 'native',
          grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
          redirect_uris: ['http://127.0.0.1/callback'], scope: 'openid orders:read refunds:write', ...people },
    ],
    jwks: { keys: [signing] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    scopes: ['openid', 'offline_access', 'orders:read', 'refunds:request', 'refunds:write', 'approvals:decide'],
    pkce: { required: () => true },
    subjectTypes: pairwise ? ['public', 'pairwise'] : ['public'],
    pairwiseIdentifier: async (ctx, accountId, client) =>
        createHash('sha256').update(`${client.clientId}\n${accountId}`).digest('hex'),
    extraTokenClaims: async (ctx, token) => (token.accountId ? claimsOf(token.accountId) : undefined),
    features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        introspection: { enabled: true, allowedPolicy: async () => true },
        resourceIndicators: {
            enabled: true,
            defaultResource: () => undefined,
            useGrantedResource: () => true,
            getResourceServerInfo(ctx, resource) {
                if (!mcpResource.test(resource)) throw new errors.InvalidTarget();
                return {
                    scope: 'orders:read refunds:request refunds:write approvals:decide',
                    audience: resource,
                    accessTokenFormat: process.env.ACCESS_TOKENS === 'opaque' ? 'opaque' : 'jwt',
                    accessTokenTTL: 600,
                    jwt: { sign: { alg: 'ES256' } },
                };
            },
        },
    },
});
provider.proxy = false;
server.on('request', provider.callback());
console.log(issuer);

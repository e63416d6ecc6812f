"""The Python SDK (mcp 2.3.0) as a machine with OAuth: its ClientCredentialsOAuthProvider finds
the authorization server from the MCP server's 401 and metadata, gets a token for the server's
URL, and a lead confirms one refund and declines another.

    python oauth_client.py MCP_URL ISSUER CLIENT_ID CLIENT_SECRET
"""
import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult

answers = ["accept", "decline"]


class InMemory:
    """Token storage for one run."""

    def __init__(self):
        self.tokens, self.client_info = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


async def lead(context, params) -> ElicitResult:
    action = answers.pop(0) if answers else "cancel"
    return ElicitResult(action="accept", content={"release": True}) if action == "accept" else ElicitResult(action=action)


async def main(url, issuer, client_id, secret):
    provider = ClientCredentialsOAuthProvider(server_url=url, storage=InMemory(), client_id=client_id,
                                              client_secret=secret, scope="orders:read refunds:write", issuer=issuer)
    async with httpx2.AsyncClient(auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http), elicitation_callback=lead) as client:
            for label, order in (("released", "O-2289"), ("declined", "O-1145")):
                quote = (await client.call_tool("quote_refund", {"order_id": order})).structured_content
                done = (await client.call_tool("issue_refund", {"quote_id": quote["quote_id"]})).structured_content
                print(f"{label}: {done['refund_id']} {done['status']}")


asyncio.run(main(*sys.argv[1:5]))

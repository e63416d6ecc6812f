"""A 2025-era host played by the Python SDK (mcp 2.3.0) in legacy mode: it opens with the
`initialize` handshake and answers the server's `elicitation/create` while the call waits.

    python legacy_client.py stdio API_URL -- COMMAND [ARGS...]
    python legacy_client.py http API_URL MCP_URL

Three hosts in turn, each on its own connection: one whose lead confirms (order O-2289), one
whose lead declines (O-1145), and one with no elicitation callback, so no elicitation
capability (O-1145, one line). Each prints what it saw.
"""
import asyncio
import os
import sys

from mcp import Client, MCPError, StdioServerParameters
from mcp.types import ElicitResult

asked = []


def answering(action):
    async def lead(context, params) -> ElicitResult:
        asked.append(params.message)
        if action == "accept":
            return ElicitResult(action="accept", content={"release": True})
        return ElicitResult(action=action)
    return lead


def target(argv):
    if argv[0] == "stdio":
        command = argv[argv.index("--") + 1:]
        return StdioServerParameters(command=command[0], args=command[1:],
                                     env={**os.environ, "SHOP_API_URL": argv[1]})
    return argv[2]


async def host(label, server, callback, order, skus=None):
    asked.clear()
    options = {"elicitation_callback": callback} if callback else {}
    async with Client(server, mode="legacy", **options) as client:
        arguments = {"order_id": order, **({"skus": skus} if skus else {})}
        quote = (await client.call_tool("quote_refund", arguments)).structured_content
        try:
            done = await client.call_tool("issue_refund", {"quote_id": quote["quote_id"]})
            outcome = f"{done.structured_content['refund_id']} {done.structured_content['status']}"
        except MCPError as error:
            outcome = f"error {error.error.code}"
        print(f"{label}: {client.protocol_version}, {outcome}, questions asked: {len(asked)}")


async def main():
    server = target(sys.argv[1:])
    await host("confirm", server, answering("accept"), "O-2289")
    await host("decline", server, answering("decline"), "O-1145")
    await host("no elicitation", server, None, "O-1145", ["KG-1043"])


asyncio.run(main())

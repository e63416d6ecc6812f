"""mrtr's deploy example, driven by the Python SDK (mcp 2.3.0) in both of its modes: a 2026-07-28
client (the question comes as a round) and a 2025 client in legacy mode (the question comes on the
back-channel while the call waits).

    python deploy_client.py stdio -- COMMAND [ARGS...]
    python deploy_client.py http MCP_URL

Per mode: a yes deploys build 412, a no leaves build 413 undeployed. Each prints what it saw.
"""
import asyncio
import sys

from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult

asked = []


def answering(confirm):
    async def person(context, params) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": confirm})
    return person


def target(argv):
    if argv[0] == "stdio":
        command = argv[argv.index("--") + 1:]
        return StdioServerParameters(command=command[0], args=command[1:])
    return argv[1]


async def run(server, mode, build, confirm):
    asked.clear()
    options = {"mode": mode} if mode else {}
    async with Client(server, elicitation_callback=answering(confirm), **options) as client:
        done = await client.call_tool("deploy", {"build": build})
        words = " ".join(block.text for block in done.content)
        print(f"{mode or 'default'}: {client.protocol_version}, asked {asked}, {words}")


async def main():
    server = target(sys.argv[1:])
    for mode in (None, "legacy"):
        await run(server, mode, 412, True)
        await run(server, mode, 413, False)


asyncio.run(main())

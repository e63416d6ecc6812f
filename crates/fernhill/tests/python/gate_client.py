"""A host played by the Python SDK (mcp 2.3.0) that launched `fernhill-gate serve` over stdio,
in either of its modes ("auto": 2026-07-28 when the gate offers it; "legacy": the 2025
`initialize` handshake):

    python gate_client.py MODE GATE_BINARY POLICY TOOL ARGUMENTS_JSON

Calls the tool once and prints what came back as one JSON line: whether it is an error, its
first text, its structured content, the gate's `_meta["fernhill/held"]`, the protocol version,
and how many questions it was asked (each answered yes, {"release": true}). The gate gets this
process's environment (USER: the host's user).
"""
import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult

asked = 0


async def answer(context, params) -> ElicitResult:
    global asked
    asked += 1
    return ElicitResult(action="accept", content={"release": True})


async def main(mode, gate, policy, tool, arguments):
    server = StdioServerParameters(command=gate, args=["serve", policy], env=dict(os.environ))
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        result = await client.call_tool(tool, json.loads(arguments))
        text = next((block.text for block in result.content if getattr(block, "type", None) == "text"), None)
        meta = result.meta or {}
        print(json.dumps({
            "version": client.protocol_version,
            "isError": bool(result.is_error),
            "text": text,
            "structured": result.structured_content,
            "held": meta.get("fernhill/held"),
            "asked": asked,
        }))


asyncio.run(main(*sys.argv[1:]))

"""The chapter's six programs' client side, run by the Python SDK (mcp 2.3.0) against a server
named on the command line, printing the book's lines.

    python book_client.py PROGRAM stdio API_URL LOG -- COMMAND [ARGS...]
    python book_client.py PROGRAM http API_URL LOG MCP_URL

PROGRAM is one of the book's six. Over stdio the command is started through `fernhill wire`
(its path in FERNHILL), which records the wire to LOG; over HTTP the server is already running
and LOG holds what `fernhill wire --upstream` recorded (the same JSONL records). The payment
provider is PAYMENT_PROVIDER_URL. The code of each program is the book's, with the server's
launch replaced by the given one.
"""
import asyncio
import json
import os
import re
import sys
import urllib.parse
import urllib.request

from mcp import Client, MCPError, StdioServerParameters
from mcp.types import ElicitRequestURLParams, ElicitResult

YES = ElicitResult(action="accept", content={"release": True})
asked = []


def read_trace(log):
    with open(log, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                yield record["direction"], record["message"]


async def say_yes(context, params) -> ElicitResult:
    asked.append(params.message)
    if isinstance(params, ElicitRequestURLParams):
        return ElicitResult(action="accept")
    return YES


def target(argv):
    transport, api, log = argv[0], argv[1], argv[2]
    provider = os.environ.get("PAYMENT_PROVIDER_URL")
    if transport == "stdio":
        command = argv[argv.index("--") + 1:]
        wire = os.environ["FERNHILL"]
        return StdioServerParameters(command=wire, args=["wire", "--log", log, "--", *command],
                                     env={**os.environ, "SHOP_API_URL": api}), log, provider
    return argv[3], log, provider


async def waits(server, log, provider):
    async with Client(server, elicitation_callback=say_yes) as client:
        print("protocol revision:", client.protocol_version)
        quote = (await client.call_tool("quote_refund", {"order_id": "O-2289"})).structured_content
        try:
            await client.call_tool("issue_refund", {"quote_id": quote["quote_id"]})
        except MCPError as error:
            print("error code:", error.error.code)
            print("error message:", error.error.message)
        print("questions the user saw:", len(asked))


async def asks(server, log, provider):
    async with Client(server, elicitation_callback=say_yes) as client:
        quote = (await client.call_tool("quote_refund", {"order_id": "O-2289"})).structured_content
        result = await client.session.call_tool("issue_refund", {"quote_id": quote["quote_id"]}, allow_input_required=True)
        print("result type:", result.result_type)
        for key, request in result.input_requests.items():
            print(f"input request {key}:", request.method, request.params.mode)
            print("message:", request.params.message)
        print("request state sealed:", result.request_state.startswith("v1."))


async def round_trip(server, log, provider):
    async def print_and_say_yes(context, params):
        print("user was asked:", params.message)
        return YES

    async with Client(server, elicitation_callback=print_and_say_yes) as client:
        quote = (await client.call_tool("quote_refund", {"order_id": "O-2289"})).structured_content
        arguments = {"quote_id": quote["quote_id"]}
        first = await client.session.call_tool("issue_refund", arguments, allow_input_required=True)
        done = await client.session.call_tool("issue_refund", arguments, input_responses={"confirm": YES},
                                              request_state=first.request_state, allow_input_required=True)
        print("by hand:", done.structured_content["refund_id"], done.structured_content["status"])
        quote = (await client.call_tool("quote_refund", {"order_id": "O-1145"})).structured_content
        done = await client.call_tool("issue_refund", {"quote_id": quote["quote_id"]})
        print("by Client.call_tool:", done.structured_content["refund_id"], done.structured_content["status"])
    calls, results = [], {}
    for direction, message in read_trace(log):
        if message.get("method") == "tools/call" and message["params"]["name"] == "issue_refund":
            calls.append(message)
        elif direction == "in" and "result" in message:
            results[message["id"]] = message["result"]["resultType"]
    for label, message in zip(["by hand, call", "by hand, retry", "Client.call_tool, call", "Client.call_tool, retry"],
                              calls):
        sent = " and ".join(key for key in ("inputResponses", "requestState") if key in message["params"])
        print(f"{label}: id {message['id']}, sends {sent or 'arguments only'}, gets {results[message['id']]}")


async def wrong_ways(server, log, provider):
    async def retry(client, label, quote_id, state):
        try:
            result = await client.session.call_tool("issue_refund", {"quote_id": quote_id},
                                                    input_responses={"confirm": YES}, request_state=state,
                                                    allow_input_required=True)
        except MCPError as error:
            print(f"{label}:", error.error.code, error.error.message)
            return
        if result.result_type == "input_required":
            print(f"{label}: input_required, the server asks again")
        elif result.is_error:
            print(f"{label}: tool error,", result.content[0].text)
        else:
            print(f"{label}: refund", result.structured_content["refund_id"], result.structured_content["status"])

    async with Client(server, elicitation_callback=say_yes) as client:
        quotes = [(await client.call_tool("quote_refund", {"order_id": order})).structured_content["quote_id"]
                  for order in ("O-2289", "O-1145")]
        first = await client.session.call_tool("issue_refund", {"quote_id": quotes[0]}, allow_input_required=True)
        state = first.request_state
        changed = state[:20] + ("A" if state[20] != "A" else "B") + state[21:]
        await retry(client, "one character changed", quotes[0], changed)
        await retry(client, "answer without state", quotes[0], None)
        await retry(client, "state with other arguments", quotes[1], state)
        await retry(client, "honest retry", quotes[0], state)
        await retry(client, "same retry again", quotes[0], state)


async def record_return(server, log, provider):
    script = [ElicitResult(action="accept", content={"reason": "damaged in transit", "restock": False}),
              ElicitResult(action="decline"), ElicitResult(action="cancel")]
    forms = []

    async def scripted_user(context, params):
        forms.append(params.requested_schema)
        return script.pop(0)

    arguments = {"order_id": "O-1145", "sku": "KG-1043"}
    async with Client(server, elicitation_callback=scripted_user) as client:
        for action in ("accept", "decline", "cancel"):
            print(f"{action}:", (await client.call_tool("record_return", arguments)).content[0].text)
    # The order a person is shown: required fields in the order of `required`, then the rest.
    required = list(forms[0]["required"])
    print("form fields:", ", ".join(required + [f for f in forms[0]["properties"] if f not in required]))
    print("required:", ", ".join(required))
    async with Client(server) as client:
        try:
            await client.call_tool("record_return", arguments)
        except MCPError as error:
            print("client without elicitation:", error.error.code)


def sign_in(provider, flow):
    """What the lead's browser does on the provider's page: read the form, sign in."""
    page = urllib.request.urlopen(f"{provider}/connect/{flow}", timeout=10).read().decode()
    csrf = re.search(r'name="csrf" value="([^"]*)"', page).group(1)
    form = urllib.parse.urlencode({"username": "lead-1", "password": "fernhill-lead-1", "csrf": csrf}).encode()
    urllib.request.urlopen(urllib.request.Request(f"{provider}/connect/{flow}", data=form), timeout=10).read()


async def pay_refund(server, log, provider):
    async with Client(server, elicitation_callback=say_yes) as client:
        quote = (await client.call_tool("quote_refund", {"order_id": "O-2289"})).structured_content
        await client.call_tool("issue_refund", {"quote_id": quote["quote_id"]})   # R-0111, released

        def call(state=None, answers=None):
            return client.session.call_tool("pay_refund", {"refund_id": "R-0111"}, input_responses=answers,
                                            request_state=state, allow_input_required=True)
        first = await call()
        request = first.input_requests["connect"].params
        print("first call:", first.result_type, request.mode)
        print("url:", request.url.rsplit("/", 1)[0] + "/…")
        accepted = {"connect": ElicitResult(action="accept")}
        second = await call(first.request_state, accepted)
        print("after accept:", second.result_type, second.input_requests["connect"].params.mode)
        sign_in(provider, request.url.rsplit("/", 1)[1])
        third = await call(second.request_state, accepted)
        print("after sign-in:", third.result_type, third.content[0].text)


PROGRAMS = {
    "refund-waits-for-answer": waits,
    "refund-asks-to-confirm": asks,
    "refund-confirmed-round-trip": round_trip,
    "refund-retry-wrong-ways": wrong_ways,
    "record-return-form": record_return,
    "pay-refund-url": pay_refund,
}

if __name__ == "__main__":
    program = PROGRAMS[sys.argv[1]]
    server, log, provider = target(sys.argv[2:])
    asyncio.run(program(server, log, provider))

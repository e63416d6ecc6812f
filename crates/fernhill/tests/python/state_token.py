"""Seal or open a requestState with the Python SDK's own boundary (mcp 2.3.0), for interop tests.

    python state_token.py seal KEY METHOD NAME ARGUMENTS_JSON STATE   -> prints the v1. token
    python state_token.py open KEY METHOD NAME ARGUMENTS_JSON TOKEN   -> prints the plaintext state
The audience is "shop", the server name both shops use. A refused token exits 3 and prints the
reason the SDK logged.
"""
import json
import logging
import sys
from types import SimpleNamespace

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError

reasons = []


class Capture(logging.Handler):
    def emit(self, record):
        reasons.append(record.getMessage())


logging.getLogger("mcp.server.request_state").addHandler(Capture())

verb, key, method, name, arguments, value = sys.argv[1:7]
boundary = RequestStateBoundary(RequestStateSecurity(keys=[key]), default_audience="shop")
params = {"name": name, "arguments": json.loads(arguments)}
if verb == "seal":
    print(boundary._seal(SimpleNamespace(method=method, params=params), value))
elif verb == "open":
    try:
        plaintext, _ = boundary._unseal(SimpleNamespace(method=method, params={**params, "requestState": value}))
    except MCPError as error:
        print(error.error.code, error.error.message, "|", "; ".join(reasons))
        sys.exit(3)
    print(plaintext)
else:
    sys.exit(f"unknown verb {verb}")

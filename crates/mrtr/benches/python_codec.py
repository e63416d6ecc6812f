"""Time the Python SDK's (mcp 2.3.0) request-state codec on the payload benches/seal.rs uses.

    python benches/python_codec.py      # with mcp==2.3.0 installed
Prints microseconds per seal and per unseal (best of 5 runs of 20,000).
"""
import timeit

from mcp.server.request_state import AESGCMRequestStateCodec

PAYLOAD = b'{"v":1,"iat":1764443000.123456,"exp":1764443600.123456,"m":"tools/call","t":"issue_refund","a":"xy_coxhCc3I5aDgGBjQ-cw","s":"R-0111","aud":"shop"}'
codec = AESGCMRequestStateCodec([b"a-benchmark-secret-of-at-least-32-bytes"])
token = codec.seal(PAYLOAD)
n = 20_000
seal = min(timeit.repeat(lambda: codec.seal(PAYLOAD), number=n, repeat=5)) / n * 1e6
unseal = min(timeit.repeat(lambda: codec.unseal(token), number=n, repeat=5)) / n * 1e6
print(f"python codec seal: {seal:.2f} us")
print(f"python codec unseal: {unseal:.2f} us")

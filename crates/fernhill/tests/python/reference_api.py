"""The Python reference shop's HTTP API (../shared/peers/python-shop, lib/shop_api.py) on a free
loopback port: prints its base URL, then serves until killed. Run from the reference's folder.

    python -u reference_api.py
"""
import os
import sys
import threading

sys.path.insert(0, os.getcwd())

from lib import loopback, shop_api  # noqa: E402

with loopback.serve(shop_api.create_app()) as url:
    print(url, flush=True)
    threading.Event().wait()

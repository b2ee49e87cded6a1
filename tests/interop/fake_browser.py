#!/usr/bin/env python3
"""A stand-in browser for sign-in tests (set BROWSER to this file).

It GETs the authorization URL and follows the redirects, as a browser whose user
approved at once would: the authorization servers under test redirect straight to
taskrail's loopback listener. Every visit appends one line to $FAKE_BROWSER_LOG, so a
test can tell whether a browser was needed. With $FAKE_BROWSER_WAIT_FOR set it first
waits (at most 60 s) until that file exists, like a person taking their time on the
consent page, so a test decides when the sign-in completes. No proxies; bounded.
"""

import os
import sys
import time
import urllib.request

gate = os.environ.get("FAKE_BROWSER_WAIT_FOR")
deadline = time.monotonic() + 60
while gate and not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.05)

log = os.environ.get("FAKE_BROWSER_LOG")
if log:
    with open(log, "a", encoding="utf-8") as f:
        f.write("visit\n")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(sys.argv[1], timeout=30) as response:
    response.read()

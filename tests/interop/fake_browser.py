#!/usr/bin/env python3
"""A stand-in browser for sign-in tests (set BROWSER to this file).

It GETs the authorization URL and follows the redirects, as a browser whose user
approved at once would: the authorization servers under test redirect straight to
taskrail's loopback listener. Every visit appends one line to $FAKE_BROWSER_LOG, so a
test can tell whether a browser was needed. $FAKE_BROWSER_DELAY (seconds) makes it
take its time, like a person reading the consent page. No proxies; bounded by a timeout.
"""

import os
import sys
import time
import urllib.request

time.sleep(min(float(os.environ.get("FAKE_BROWSER_DELAY") or 0), 30))

log = os.environ.get("FAKE_BROWSER_LOG")
if log:
    with open(log, "a", encoding="utf-8") as f:
        f.write("visit\n")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(sys.argv[1], timeout=30) as response:
    response.read()

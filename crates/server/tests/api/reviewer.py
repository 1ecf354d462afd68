#!/usr/bin/env python3
"""A command reviewer for the reviewer tests: reads the review request on stdin, appends it to
the log file named by its one argument (one JSON line each, so the test counts the reviews), and
answers by the call's path: ok* approve, no* deny, ask* ask, junk* an unreadable answer, hang*
never (it sleeps until it is killed)."""

import json
import os
import sys
import time

request = json.load(sys.stdin)
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps({"request": request, "env": sorted(os.environ)}) + "\n")
path = str(request["call"]["args"].get("path", ""))
name = os.path.basename(path)
if name.startswith("hang"):
    time.sleep(600)
if name.startswith("junk"):
    print("I think it is fine")
    sys.exit(0)
outcome = "approve" if name.startswith("ok") else "deny" if name.startswith("no") else "ask"
risk = {"approve": "low", "deny": "high", "ask": "medium"}[outcome]
print(json.dumps({"outcome": outcome, "risk": risk, "reason": f"the command says {outcome} to {path}"}))

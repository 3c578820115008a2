"""An exec: candidate that speaks the protocol by hand and answers every run message with another
case number (a server that lost count): attest names both numbers (it said "garbage")."""
import json
import os
import socket

channel = socket.socket(fileno=int(os.environ["ATTEST_CHANNEL_FD"]))
lines = channel.makefile("rwb", buffering=0)
lines.write(b'{"attest":1,"op":"hello","family":"indexer","name":"wrong-case","domain":"host",'
            b'"description":"answers another case","conventions":{"masking":"-inf"}}\n')
for line in lines:
    message = json.loads(line)
    if message["op"] != "run":
        break
    lines.write((json.dumps({"op": "done", "case": message["case"] + 5}) + "\n").encode())

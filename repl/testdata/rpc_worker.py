# A stand-in worker for rpc tests: it answers the bootstrap like the real worker, then
# for every execute sends two bridge requests (one for its run, one for another run)
# and reports the replies it got as the run's stdout.
import json
import os
import sys

read_fd, write_fd = map(int, os.environ["REPL_MCP_WORKER_FDS"].split(","))
header = b""
while not header.endswith(b"\n"):
    header += os.read(read_fd, 1)
remaining = int(header.split()[0])  # "SIZE DIGEST"
while remaining:
    remaining -= len(os.read(read_fd, remaining))
commands = os.fdopen(read_fd, "rb")
frames = os.fdopen(write_fd, "wb", buffering=0)


def send(frame):
    frames.write((json.dumps(frame) + "\n").encode())


send({"type": "ready", "protocol": 1, "pid": os.getpid(), "python_version": "3", "python_executable": sys.executable})
for line in commands:
    command = json.loads(line)
    run_id = command["id"]
    send({"type": "rpc", "id": "mine", "run_id": run_id, "op": "servers", "params": {}, "data": "AAEC/w=="})
    send({"type": "rpc", "id": "foreign", "run_id": "another-run", "op": "servers", "params": {}})
    replies = {}
    while len(replies) < 2:
        reply = json.loads(commands.readline())
        replies[reply["id"]] = reply
    os.write(2, ("\x1e" + command["barrier"] + "\x1e").encode())
    send({"type": "result", "id": run_id, "result": {
        "success": True, "stdout": json.dumps(replies, sort_keys=True), "stderr": "",
        "return_value": None, "error": None,
        "truncated": {"stdout": False, "stderr": False, "return": False}, "state": "preserved"}})

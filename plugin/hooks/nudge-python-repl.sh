#!/bin/sh
# PostToolUse hook of the python-repl plugin, for Bash: when the command ran inline Python
# (python -c, a heredoc or here-string fed to python, or a pipe into a bare python), print
# a reminder that the persistent python-repl MCP tools exist. Never blocks and never fails:
# any other command, empty or malformed input, or no python3 ends silently with status 0.
command -v python3 >/dev/null 2>&1 || exit 0
python3 -I -S -c '
import json, re, sys

PY = r"(?<![\w.-])python(?:3(?:\.\d+)?)?(?![\w.-])"
FLAGS = r"(?:\s+-(?!m)[A-Za-z]+)*"  # flag groups such as -u or -IS; -m runs a module
INLINE = re.compile("|".join([
    PY + FLAGS + r"\s+-[A-Za-z]*c(?![\w-])",                # python3 -c CODE, python -uc CODE
    PY + FLAGS + r"(?:\s+-(?:\s+[^\s<|;&]+)*)?\s*<<",     # python3 <<EOF, python3 - a b <<EOF, <<<
    r"\|\s*" + PY + FLAGS + r"(?:\s+-)?\s*(?:$|[;&|)])",  # ... | python3, ... | python3 -
]), re.MULTILINE)

REMINDER = (
    "That Bash command ran inline Python in a throwaway interpreter. For multi-step work prefer "
    "the python-repl MCP tool execute_python: variables, imports and one asyncio event loop "
    "persist across cells, and top-level await works. Inside a cell, sh(cmd) runs a shell "
    "command with bounded capture and returns its stdout as a str (.stderr, .returncode, .ok), "
    "e.g. json.loads(sh(\"gh pr view 1 --json title\")). Cells have full access to the host "
    "filesystem; open() and Path() do not expand ~, so use Path(\"~/x\").expanduser(). For long "
    "runs use python_start, then python_run to poll and python_cancel to stop. A crash or a "
    "forced stop clears the variables (the result says state: cleared and generation grows); "
    "pass expected_generation to avoid running code against lost state. No fixed latency is "
    "promised. If the tool is deferred, load it with ToolSearch query \"execute_python\"."
)

try:
    event = json.load(sys.stdin)
    command = event["tool_input"]["command"]
    if event.get("tool_name", "Bash") != "Bash" or not isinstance(command, str):
        sys.exit(0)
except Exception:
    sys.exit(0)
if INLINE.search(command):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": REMINDER}}))
' 2>/dev/null || true
exit 0

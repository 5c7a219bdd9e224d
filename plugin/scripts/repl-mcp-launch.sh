#!/bin/sh
# repl-mcp launcher of the python-repl plugin: runs this host's wheel of the plugin's
# version with uvx, in the caller's working directory (the default session's project),
# passing every argument through. Claude Code runs it from the plugin's .mcp.json as
# sh ${CLAUDE_PLUGIN_ROOT}/scripts/repl-mcp-launch.sh --transport stdio.
set -eu
# The plugin's version, as its release is tagged (v$version) and as PEP 440 names its
# wheel.
version=0.1.0
wheel_version=0.1.0

# client: whether an MCP client is talking on stdin, as when Claude Code starts the
# server. A person at a terminal, or --help, --version or doctor, is not one.
client=1
if [ -t 0 ]; then client=0; fi
case ${1-} in doctor) client=0 ;; esac
for arg in "$@"; do
	case $arg in -h | -help | --help | -V | -version | --version) client=0 ;; esac
done

# fail says why the server cannot start, in one line on stderr, and exits 1. An MCP
# client keeps stderr in a log and shows only "connection closed", so when a client is
# talking, the same line also answers each request it sends (its server/discover and
# initialize) as a JSON-RPC error, which `claude mcp list` and /mcp show.
fail() {
	echo "$1" >&2
	if [ "$client" = 1 ]; then
		message=$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
		n=0
		while [ "$n" -lt 8 ] && IFS= read -r line; do
			n=$((n + 1))
			# The request's id, a string or a number; a notification has none.
			id=$(printf '%s\n' "$line" | sed -n -e 's/^{.*"id" *: *\("[^"\\]*"\).*$/\1/p' -e t \
				-e 's/^{.*"id" *: *\(-\{0,1\}[0-9][0-9]*\).*$/\1/p')
			if [ -n "$id" ]; then
				printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"%s"}}\n' "$id" "$message"
			fi
		done
	fi
	exit 1
}

os=$(uname -s)
arch=$(uname -m)
case "$os/$arch" in
Linux/x86_64) platform=manylinux_2_17_x86_64.musllinux_1_1_x86_64 ;;
Linux/aarch64 | Linux/arm64) platform=manylinux_2_17_aarch64.musllinux_1_1_aarch64 ;;
Darwin/arm64) platform=macosx_12_0_arm64 ;;
Darwin/x86_64) platform=macosx_12_0_x86_64 ;;
*) fail "repl-mcp: unsupported host $os/$arch; use Linux x86_64 or aarch64, or macOS arm64 or x86_64." ;;
esac
if ! command -v uvx >/dev/null 2>&1; then
	fail "repl-mcp: uvx is required; install uv (https://docs.astral.sh/uv/) or register an installed repl-mcp executable."
fi

# The release's wheel, from the release or from a mirror. A mirror that is a directory
# (a path or a file:// URL) may hold development builds of this version instead (make
# wheel, make wheelhouse: <version>.dev<commit time>+g<commit>): without the release's
# wheel there, the newest of them is taken (the times sort as text).
base=${REPL_MCP_WHEEL_BASE_URL:-https://github.com/iota-uz/repl-mcp/releases/download/v$version}
base=${base%/}
wheel=repl_mcp-$wheel_version-py3-none-$platform.whl
case $base in
file://*) dir=${base#file://} ;;
*://*) dir= ;;
*) dir=$base ;;
esac
if [ -n "$dir" ] && [ ! -f "$dir/$wheel" ]; then
	for f in "$dir"/repl_mcp-"$wheel_version".dev*-py3-none-"$platform".whl; do
		if [ -f "$f" ]; then wheel=${f##*/}; fi
	done
fi

# For a client, a first run that only asks for the version: uv's own error (no such
# wheel, no network, no Python) would otherwise reach the client as a closed
# connection. Once uv's cache holds the environment it costs a fraction of a second.
if [ "$client" = 1 ]; then
	status=0
	out=$(uvx --from "$base/$wheel" repl-mcp --version 2>&1 </dev/null) || status=$?
	if [ "$status" != 0 ]; then
		reason=$(printf '%s\n' "$out" | awk '{
			sub(/^[ \t]+/, ""); sub(/^(error|cause|Caused by|warning):[ \t]*/, "")
			sub(/^(×|├─▶|╰─▶|│)[ \t]*/, "")
			if ($0 != "") { printf "%s%s", sep, $0; sep = ": " }
		}')
		fail "repl-mcp: uvx could not run $base/$wheel: ${reason:-exit status $status}"
	fi
fi
exec uvx --from "$base/$wheel" repl-mcp "$@"

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

# The failure path runs nothing but shell builtins (besides uname and uvx): on a PATH
# without sed or awk it must still say why, and exit 1 rather than 127.

# json_string prints $1 as the inside of a JSON string: backslashes and quotes
# escaped, control characters (uv's tabs) turned into spaces.
json_string() {
	rest=$1 out=
	while :; do
		case $rest in
		*[\\\"[:cntrl:]]*) ;;
		*) break ;;
		esac
		head=${rest%%[\\\"[:cntrl:]]*}
		rest=${rest#"$head"}
		c=${rest%"${rest#?}"}
		rest=${rest#?}
		case $c in
		\\ | \") out=$out$head\\$c ;;
		*) out="$out$head " ;;
		esac
	done
	printf '%s' "$out$rest"
}

# skip_spaces prints $1 without its leading spaces.
skip_spaces() {
	v=$1
	while :; do
		case $v in
		" "*) v=${v# } ;;
		*) break ;;
		esac
	done
	printf '%s' "$v"
}

# rpc_id prints the id of the JSON-RPC request on the line $1 (its last "id" member):
# a string without escapes or an integer, as written; nothing for a notification.
rpc_id() {
	case $1 in "{"*'"id"'*) ;; *) return 0 ;; esac
	v=$(skip_spaces "${1##*'"id"'}")
	case $v in :*) ;; *) return 0 ;; esac
	v=$(skip_spaces "${v#:}")
	case $v in
	'"'*)
		v=${v#'"'}
		case $v in *'"'*) ;; *) return 0 ;; esac
		v=${v%%'"'*}
		case $v in *\\*) return 0 ;; esac
		printf '"%s"' "$v"
		;;
	-[0-9]* | [0-9]*)
		sign=
		case $v in -*) sign=- v=${v#-} ;; esac
		printf '%s%s' "$sign" "${v%%[!0-9]*}"
		;;
	esac
}

# uv_reason prints uv's error ($1, several lines) on one line: each line without its
# indentation, its "error:"/"cause:" label and its tree drawing, joined by ": "; with
# $2 = last, only the last of them (the innermost cause).
uv_reason() {
	joined= sep= last=
	while IFS= read -r l; do
		l=${l#"${l%%[![:space:]]*}"}
		for label in error: cause: "Caused by:" warning:; do
			case $l in "$label"*) l=${l#"$label"} && break ;; esac
		done
		l=${l#"${l%%[![:space:]]*}"}
		for mark in × ├─▶ ╰─▶ │; do
			case $l in "$mark"*) l=${l#"$mark"} && break ;; esac
		done
		l=${l#"${l%%[![:space:]]*}"}
		if [ -n "$l" ]; then
			joined=$joined$sep$l
			sep=": "
			last=$l
		fi
	done <<EOF
$1
EOF
	if [ "${2-}" = last ]; then joined=$last; fi
	printf '%s' "$joined"
}

# fail says why the server cannot start, in one line on stderr, and exits 1. An MCP
# client keeps stderr in a log and shows only "connection closed", so when a client is
# talking, the same line also answers each request it sends (its server/discover and
# initialize) as a JSON-RPC error, which `claude mcp list` and /mcp show.
fail() {
	echo "$1" >&2
	if [ "$client" = 1 ]; then
		message=$(json_string "$1")
		n=0
		while [ "$n" -lt 8 ] && IFS= read -r line; do
			n=$((n + 1))
			id=$(rpc_id "$line")
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
# It does not retry a failed download (UV_HTTP_RETRIES=0 unless set): offline, uv's
# retries cost many seconds before the same failure, and the client's startup
# deadline may cut the line off.
if [ "$client" = 1 ]; then
	status=0
	out=$(UV_HTTP_RETRIES=${UV_HTTP_RETRIES:-0} uvx --from "$base/$wheel" repl-mcp --version 2>&1 </dev/null) || status=$?
	if [ "$status" != 0 ]; then
		case $out in
		*"error sending request"* | *"Network connectivity is disabled"* | *"dns error"* | *"tcp connect error"*)
			# Offline, or uv told to be: say first what to set, which a cut-off
			# line still shows.
			fail "repl-mcp: uvx cannot download the repl-mcp wheel (offline?): set REPL_MCP_WHEEL_BASE_URL and UV_FIND_LINKS to a wheelhouse directory (make wheelhouse DIR=...) and UV_OFFLINE=1, or UV_OFFLINE=1 alone once uv's cache holds this version; uv said for $base/$wheel: $(uv_reason "$out" last)"
			;;
		esac
		reason=$(uv_reason "$out")
		fail "repl-mcp: uvx could not run $base/$wheel: ${reason:-exit status $status}"
	fi
fi
exec uvx --from "$base/$wheel" repl-mcp "$@"

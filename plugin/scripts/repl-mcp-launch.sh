#!/bin/sh
# repl-mcp launcher of the python-repl plugin: runs the release wheel for this host with uvx,
# in the caller's working directory (the default session's project), passing every argument
# through. plugin.json inlines this text; plugin/plugin_test.go keeps the two identical.
set -eu
version=0.1.0
wheel_version=0.1.0
os=$(uname -s)
arch=$(uname -m)
case "$os/$arch" in
Linux/x86_64) platform=manylinux_2_17_x86_64.musllinux_1_1_x86_64 ;;
Linux/aarch64 | Linux/arm64) platform=manylinux_2_17_aarch64.musllinux_1_1_aarch64 ;;
Darwin/arm64) platform=macosx_12_0_arm64 ;;
Darwin/x86_64) platform=macosx_12_0_x86_64 ;;
*)
	echo "repl-mcp: unsupported host $os/$arch; use Linux x86_64 or aarch64, or macOS arm64 or x86_64." >&2
	exit 1
	;;
esac
if ! command -v uvx >/dev/null 2>&1; then
	echo "repl-mcp: uvx is required; install uv (https://docs.astral.sh/uv/) or register an installed repl-mcp executable." >&2
	exit 1
fi
base=${REPL_MCP_WHEEL_BASE_URL:-https://github.com/iota-uz/repl-mcp/releases/download/v$version}
exec uvx --from "${base%/}/repl_mcp-$wheel_version-py3-none-$platform.whl" repl-mcp "$@"

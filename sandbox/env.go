package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// proxyVars are the variables HTTP clients read for their proxy: curl's, Python's
// urllib and requests' (so pip's), uv's, and pip's own option.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "PIP_PROXY"}

// ChildEnv is env as a sandboxed child gets it: TMPDIR, TMP and TEMP name its private
// temp directory, pip's and uv's caches live beneath it (the user's own caches are
// not writable, and a cache a sandboxed cell could fill is one a later unsandboxed
// install would trust), and, with the allowed-domains proxy, every variable an HTTP
// client reads for its proxy names it, with no NO_PROXY exception: the proxy's port
// is the only one a connection reaches.
func ChildEnv(env []string, p *Policy, tempDir string) []string {
	drop := []string{"TMPDIR", "TMP", "TEMP", "PIP_CACHE_DIR", "UV_CACHE_DIR"}
	proxied := !p.Network && p.ProxyPort != 0
	if proxied {
		drop = append(drop, append(proxyVars, "NO_PROXY", "no_proxy")...)
	}
	out := make([]string, 0, len(env)+len(drop))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			out = append(out, kv)
		}
	}
	out = append(out, "TMPDIR="+tempDir, "TMP="+tempDir, "TEMP="+tempDir,
		"PIP_CACHE_DIR="+filepath.Join(tempDir, "pip-cache"), "UV_CACHE_DIR="+filepath.Join(tempDir, "uv-cache"))
	if proxied {
		url := fmt.Sprintf("http://127.0.0.1:%d", p.ProxyPort)
		for _, name := range proxyVars {
			out = append(out, name+"="+url)
		}
	}
	return out
}

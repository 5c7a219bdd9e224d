package wheel

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// MacOSMin is the oldest macOS that binaries built by Go 1.26 run on: Go 1.25 dropped
// macOS 11, and Go's linker writes 12.0 as the minimum OS version into every Mach-O file
// it links (cmd/link/internal/ld/macho.go), so a macosx_11_0 tag would be a lie.
const MacOSMin = "12_0"

// platforms maps GOOS/GOARCH to the wheel platform tag. The binaries are static
// (CGO_ENABLED=0), so the Linux wheels carry both a manylinux tag (the oldest glibc
// baseline pip knows for aarch64, 2.17) and a musllinux one.
var platforms = map[string]string{
	"linux/amd64":  "manylinux_2_17_x86_64.musllinux_1_1_x86_64",
	"linux/arm64":  "manylinux_2_17_aarch64.musllinux_1_1_aarch64",
	"darwin/amd64": "macosx_" + MacOSMin + "_x86_64",
	"darwin/arm64": "macosx_" + MacOSMin + "_arm64",
}

// PlatformFor returns the wheel platform tag for a GOOS and GOARCH.
func PlatformFor(goos, goarch string) (string, error) {
	if p, ok := platforms[goos+"/"+goarch]; ok {
		return p, nil
	}
	return "", fmt.Errorf("no wheel platform for %s/%s: repl-mcp ships linux/amd64, linux/arm64, darwin/amd64 and darwin/arm64", goos, goarch)
}

// HostPlatform returns the platform tag of the wheel for this machine.
func HostPlatform() (string, error) { return PlatformFor(runtime.GOOS, runtime.GOARCH) }

// platformTag is one platform tag taken apart.
type platformTag struct {
	tag          string
	goos, goarch string
	libc         string // linux: "manylinux" or "musllinux"
	macMajor     int    // darwin: the minimum macOS the tag promises
	macMinor     int
}

var platformTagRE = regexp.MustCompile(`^(manylinux|musllinux|macosx)_([0-9]+)_([0-9]+)_(x86_64|aarch64|arm64)$`)

// parsePlatformTag takes apart one of the platform tags repl-mcp wheels use.
func parsePlatformTag(tag string) (platformTag, error) {
	m := platformTagRE.FindStringSubmatch(tag)
	if m == nil {
		return platformTag{}, fmt.Errorf("platform tag %q is not a manylinux, musllinux or macosx tag for x86_64 or arm64", tag)
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	pt := platformTag{tag: tag, goarch: map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[m[4]]}
	switch {
	case m[1] == "macosx" && m[4] != "aarch64":
		pt.goos, pt.macMajor, pt.macMinor = "darwin", major, minor
	case m[1] != "macosx" && m[4] != "arm64":
		pt.goos, pt.libc = "linux", m[1]
	default:
		return platformTag{}, fmt.Errorf("platform tag %q: %s is not spelled that way for %s", tag, m[4], m[1])
	}
	return pt, nil
}

// expandTags returns every py-abi-platform triple of a compressed tag set such as
// py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64, in order.
func expandTags(py, abi, plat string) []string {
	var out []string
	for _, a := range strings.Split(py, ".") {
		for _, b := range strings.Split(abi, ".") {
			for _, c := range strings.Split(plat, ".") {
				out = append(out, a+"-"+b+"-"+c)
			}
		}
	}
	return out
}

package wheel

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
	"fmt"
	"os"
)

// execInfo is what an executable says about the platform it runs on.
type execInfo struct {
	goos, goarch string
	interp       string // ELF: the dynamic loader; empty for a static binary
	macMajor     int    // Mach-O: the minimum macOS from LC_BUILD_VERSION, if present
	macMinor     int
}

// Mach-O load commands that carry the minimum OS version.
const (
	lcBuildVersion    = 0x32
	lcVersionMinMacOS = 0x24
	platformMacOS     = 1
)

// inspectExec reads an ELF or Mach-O executable; ok is false for anything else (a
// script, say), which the caller does not check further.
func inspectExec(data []byte) (info execInfo, ok bool, err error) {
	r := bytes.NewReader(data)
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		f, err := elf.NewFile(r)
		if err != nil {
			return info, true, fmt.Errorf("unreadable ELF file: %w", err)
		}
		info.goos = "linux"
		switch f.Machine {
		case elf.EM_X86_64:
			info.goarch = "amd64"
		case elf.EM_AARCH64:
			info.goarch = "arm64"
		default:
			info.goarch = f.Machine.String()
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err != nil {
					return info, true, fmt.Errorf("unreadable ELF interpreter: %w", err)
				}
				info.interp = string(bytes.TrimRight(b, "\x00"))
			}
		}
		return info, true, nil
	case len(data) >= 4 && (binary.LittleEndian.Uint32(data) == macho.Magic64 || binary.LittleEndian.Uint32(data) == macho.Magic32):
		f, err := macho.NewFile(r)
		if err != nil {
			return info, true, fmt.Errorf("unreadable Mach-O file: %w", err)
		}
		info.goos = "darwin"
		switch f.Cpu {
		case macho.CpuAmd64:
			info.goarch = "amd64"
		case macho.CpuArm64:
			info.goarch = "arm64"
		default:
			info.goarch = f.Cpu.String()
		}
		for _, l := range f.Loads {
			raw := l.Raw()
			if len(raw) < 16 {
				continue
			}
			cmd := f.ByteOrder.Uint32(raw)
			var v uint32
			switch {
			case cmd == lcBuildVersion && f.ByteOrder.Uint32(raw[8:]) == platformMacOS:
				v = f.ByteOrder.Uint32(raw[12:])
			case cmd == lcVersionMinMacOS:
				v = f.ByteOrder.Uint32(raw[8:])
			default:
				continue
			}
			info.macMajor, info.macMinor = int(v>>16), int(v>>8&0xff)
		}
		return info, true, nil
	}
	return info, false, nil
}

// BinaryPlatform returns the wheel platform tag for the executable at path, from its
// ELF or Mach-O header: what pywheel uses when it is given no --platform.
func BinaryPlatform(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	info, ok, err := inspectExec(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return "", fmt.Errorf("%s is neither an ELF nor a Mach-O executable: name its platform", path)
	}
	return PlatformFor(info.goos, info.goarch)
}

// checkExec reports where an executable disagrees with a platform tag.
func checkExec(info execInfo, tag platformTag) error {
	if info.goos != tag.goos || info.goarch != tag.goarch {
		return fmt.Errorf("the binary is for %s/%s", info.goos, info.goarch)
	}
	if tag.goos == "linux" && info.interp != "" {
		return fmt.Errorf("the binary is dynamically linked (interpreter %s), so a %s tag promises too much: build with CGO_ENABLED=0", info.interp, tag.libc)
	}
	if tag.goos == "darwin" && info.macMajor != 0 &&
		(info.macMajor > tag.macMajor || info.macMajor == tag.macMajor && info.macMinor > tag.macMinor) {
		return fmt.Errorf("the binary needs macOS %d.%d", info.macMajor, info.macMinor)
	}
	return nil
}

//go:build !linux

package interop

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// errNoNetns says that this machine gives the test no network namespace of its own.
var errNoNetns = errors.New("no network namespace")

// startIsolated needs Linux network namespaces (netns_linux_test.go).
func startIsolated(int, func([]net.Listener) error) ([]net.Listener, error) {
	return nil, fmt.Errorf("%w: network namespaces are Linux-only and this is %s", errNoNetns, runtime.GOOS)
}

func netnsOf(int) (string, error) { return "", errNoNetns }

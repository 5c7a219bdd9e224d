package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ApplyToThread puts the calling OS thread under p, for good: no_new_privs, then a
// Landlock domain, then seccomp filters. A process this thread starts afterwards
// inherits all three, and neither it nor anything it starts can lift them. The
// caller must hold runtime.LockOSThread and never unlock it (the runtime then ends
// the thread with its goroutine instead of reusing it). Nothing is applied when k
// cannot enforce p (Check's error); an error after that leaves the thread partly
// restricted, and the caller must start nothing on it.
func ApplyToThread(p *Policy, k Kernel) (Enforcement, error) {
	e, err := k.Check(p.Mode, p)
	if err != nil {
		return e, err
	}
	cfg, rules, err := landlockPlan(p, k.LandlockABI)
	if err != nil {
		return e, err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return e, fmt.Errorf("sandbox: build the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return e, errors.New("sandbox: the Landlock ruleset restricts nothing")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return e, fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return e, fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	if err := loadSeccomp(p, k); err != nil {
		return e, err
	}
	return e, nil
}

// The Landlock filesystem rights that write: they are the ones the sandbox handles,
// so reading and executing stay as the file modes allow.
const (
	writeFS = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym
	// writeFile are the rights of writeFS that a rule on a file (not a directory)
	// may carry.
	writeFile = ll.AccessFSWriteFile
)

// landlockPlan is the ruleset for p at ABI abi: writes handled everywhere and
// allowed beneath the writable roots (moving files between directories and
// truncating by path too, where the ABI has those rights); TCP bind and connect
// handled, with connect allowed to the proxy's port alone, unless the network is
// unrestricted; signals and abstract Unix sockets scoped to the sandbox.
func landlockPlan(p *Policy, abi int) (landlock.Config, []landlock.Rule, error) {
	fsSet, fileSet := landlock.AccessFSSet(writeFS), landlock.AccessFSSet(writeFile)
	if abi >= 2 {
		fsSet |= ll.AccessFSRefer
	}
	if abi >= 3 {
		fsSet |= ll.AccessFSTruncate
		fileSet |= ll.AccessFSTruncate
	}
	cfg := landlock.Config{HandledAccessFS: fsSet}
	var rules []landlock.Rule
	for _, root := range p.WritableRoots {
		st, err := os.Stat(root)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // nothing there to write to (a Codex root that does not exist)
		case err != nil:
			return cfg, nil, fmt.Errorf("sandbox: writable root %s: %w", root, err)
		case st.IsDir():
			rules = append(rules, landlock.PathAccess(fsSet, root).IgnoreIfMissing())
		default:
			rules = append(rules, landlock.PathAccess(fileSet, root).IgnoreIfMissing())
		}
	}
	if !p.Network && abi >= 4 {
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		if p.ProxyPort > 0 && p.ProxyPort < 1<<16 {
			rules = append(rules, landlock.ConnectTCP(uint16(p.ProxyPort)))
		}
	}
	if abi >= 6 {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	return cfg, rules, nil
}

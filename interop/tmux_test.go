package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// A terminal for an interactive CLI: a tmux server of the test's own (its socket in
// a temporary directory, no configuration file), one session of one pane, driven
// with send-keys and read with capture-pane.

// tmuxStep is what a missing tmux tells the reader to do (.ci/run does it in CI).
const tmuxStep = "install tmux (apt-get install tmux; .ci/run installs it on a fresh machine)"

// terminal is one tmux session running one command.
type terminal struct {
	tmux, socket string
}

// findTmux is the machine's tmux; the interactive cases cannot run without one, and
// fail (never skip) when it is missing.
func findTmux(t *testing.T) string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux not found on PATH (%v): the interactive Claude Code cases run the CLI in a terminal that tmux drives; %s", err, tmuxStep)
	}
	return tmux
}

// startTerminal starts a detached tmux server and session, 200 columns by 50 lines,
// running argv with exactly env as its environment. The server is started by this
// call, so a caller on startIsolated's locked thread puts it, and the command, in
// that network namespace. Cleanup kills the server.
func startTerminal(t *testing.T, tmux string, env, argv []string) (*terminal, error) {
	term := &terminal{tmux: tmux, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() {
		// The command may outlive its pane for a moment (killed, it still writes
		// its files): the directories it writes in go only once it has.
		pid, err := term.pid()
		exec.Command(term.tmux, "-S", term.socket, "kill-server").Run()
		if err != nil {
			return
		}
		end := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(end) {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	})
	args := append([]string{"-S", term.socket, "-f", os.DevNull, "new-session", "-d", "-x", "200", "-y", "50", "-s", "cli", "--", "env", "-i"}, env...)
	out, err := exec.Command(tmux, append(args, argv...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("tmux new-session: %v: %s", err, out)
	}
	return term, nil
}

func (term *terminal) run(args ...string) (string, error) {
	out, err := exec.Command(term.tmux, append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// screen is what the pane shows now ("" once it is gone).
func (term *terminal) screen() string {
	out, err := term.run("capture-pane", "-p", "-t", "cli")
	if err != nil {
		return ""
	}
	return out
}

// pid is the pane's process: the command.
func (term *terminal) pid() (int, error) {
	out, err := term.run("display-message", "-p", "-t", "cli", "#{pane_pid}")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// typeLine types text as it is, waits until the pane shows it, then presses Enter
// until submitted reports that the line went (an Enter pressed while the CLI still
// takes in the text is lost), at most d in all.
func (term *terminal) typeLine(t *testing.T, text string, submitted func() bool, d time.Duration) error {
	if _, err := term.run("send-keys", "-t", "cli", "-l", text); err != nil {
		return err
	}
	if err := term.waitScreen(t, text, d); err != nil {
		return err
	}
	end := time.Now().Add(testwait.Bound(t, d))
	for {
		if _, err := term.run("send-keys", "-t", "cli", "Enter"); err != nil {
			return err
		}
		for next := time.Now().Add(2 * time.Second); time.Now().Before(next); time.Sleep(50 * time.Millisecond) {
			if submitted() {
				return nil
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("the line %q was not submitted within %v; the terminal shows:\n%s", text, d, term.screen())
		}
	}
}

// keys sends tmux key names (C-c, Escape).
func (term *terminal) keys(names ...string) error {
	_, err := term.run(append([]string{"send-keys", "-t", "cli"}, names...)...)
	return err
}

// waitScreen waits, at most d (cut by the test's deadline), until the pane shows
// want; the error shows what it shows instead.
func (term *terminal) waitScreen(t *testing.T, want string, d time.Duration) error {
	end := time.Now().Add(testwait.Bound(t, d))
	for {
		screen := term.screen()
		switch {
		case strings.Contains(screen, want):
			return nil
		case time.Now().After(end):
			return fmt.Errorf("the terminal did not show %q within %v; it shows:\n%s", want, d, screen)
		}
		select {
		case <-t.Context().Done():
			return t.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

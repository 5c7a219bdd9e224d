package proctable

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

func TestReadFindsAChildWithItsParentGroupNameAndStart(t *testing.T) {
	before, err := BootTicks()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	procs, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := BootTicks()
	var found *Proc
	for i := range procs {
		if procs[i].Pid == cmd.Process.Pid {
			found = &procs[i]
		}
	}
	if found == nil {
		t.Fatalf("pid %d not in the table of %d processes", cmd.Process.Pid, len(procs))
	}
	if found.Ppid != os.Getpid() || found.Pgid != cmd.Process.Pid || found.Name != "sleep" || found.Zombie {
		t.Fatalf("got %+v", *found)
	}
	if found.Start+1 < before || found.Start > after {
		t.Fatalf("start %d outside [%d, %d] ticks", found.Start, before, after)
	}
}

func TestAZombieSaysHowItEnded(t *testing.T) {
	for _, c := range []struct {
		script, want string
	}{
		{"exit 3", "exit status 3"},
		{"kill -INT $$; sleep 5", "SIGINT"},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		var p Proc
		testwait.Until(t, 10*time.Second, "the child to be a zombie", func() bool {
			var ok bool
			p, ok = Stat(pid)
			return ok && p.Zombie
		})
		if got := p.Ended(); got != c.want {
			t.Errorf("%q: Ended() = %q, want %q", c.script, got, c.want)
		}
		_ = cmd.Wait()
		if _, ok := Stat(pid); ok {
			t.Errorf("%q: reaped pid %d still in the table", c.script, pid)
		}
	}
}

func TestParseStatTakesTheFieldsAfterTheLastParenthesis(t *testing.T) {
	line := "42 (a) b (c) S 7 9 9 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0"
	p, ok := parseStat(42, line)
	if !ok || p.Name != "a) b (c" || p.Ppid != 7 || p.Pgid != 9 || p.Start != 12345 || p.Zombie {
		t.Fatalf("got %+v, %v", p, ok)
	}
	if _, ok := parseStat(1, "1 (x) S 0"); ok {
		t.Fatal("a short line parsed")
	}
}

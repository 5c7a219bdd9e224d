package guardian

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStartPipedConnectsEveryDescriptor sends a line down stdin and one down fd 3,
// and reads the child's answers from stdout, from the output pipe (fd 2) and from
// fd 4; once the child exits every server end reads EOF, which proves the child's
// ends were closed on the server's side.
func TestStartPipedConnectsEveryDescriptor(t *testing.T) {
	script := `read a; read b <&3; echo "out $a"; echo "err $b" >&2; echo "four $a$b" >&4`
	p, err := StartPiped("", shell(script), Pipes{Stdin: true, Stdout: true, Output: true, Extra: []Direction{ToChild, FromChild}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseAll()
	defer p.Wait()
	defer p.Close()
	if _, err := io.WriteString(p.Stdin, "x\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Extra[0], "y\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    *os.File
		want string
	}{{"stdout", p.Stdout, "out x\n"}, {"output", p.Output, "err y\n"}, {"fd 4", p.Extra[1], "four xy\n"}} {
		c.f.SetReadDeadline(deadline(t))
		got, err := io.ReadAll(c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Fatalf("%s read %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStartPipedOutputTakesBothStreams: without Stdout, fd 1 and fd 2 share the
// output pipe.
func TestStartPipedOutputTakesBothStreams(t *testing.T) {
	p, err := StartPiped("", shell(`echo one; echo two >&2`), Pipes{Output: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseAll()
	defer p.Wait()
	defer p.Close()
	p.Output.SetReadDeadline(deadline(t))
	sc := bufio.NewScanner(p.Output)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if got := strings.Join(lines, ","); got != "one,two" {
		t.Fatalf("output pipe read %q, want one,two", got)
	}
	if p.Stdin != nil || p.Stdout != nil || len(p.Extra) != 0 {
		t.Fatal("pipes that were not asked for were made")
	}
}

// TestStartPipedFailureClosesEverything: a program that cannot start leaves no
// descriptor behind.
func TestStartPipedFailureClosesEverything(t *testing.T) {
	before := openDescriptors(t)
	_, err := StartPiped("", Spec{Program: "/nonexistent/program"}, Pipes{Stdin: true, Stdout: true, Output: true, Extra: []Direction{FromChild}})
	if err == nil {
		t.Fatal("a missing program started")
	}
	if after := openDescriptors(t); after > before {
		t.Fatalf("%d descriptors open after the failed start, %d before", after, before)
	}
}

func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatalf("count open descriptors: %v", err)
	}
	return len(entries)
}

// deadline is a read deadline well inside the test's own.
func deadline(t *testing.T) time.Time {
	d := time.Now().Add(10 * time.Second)
	if td, ok := t.Deadline(); ok && td.Before(d) {
		d = td.Add(-time.Second)
	}
	return d
}

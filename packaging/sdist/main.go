package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/internal/buildversion"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sdist:", err)
		os.Exit(1)
	}
}

// run parses the command line, writes the sdist and prints its path.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sdist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "dist", "the directory to write repl_mcp-<version>.tar.gz into")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	mtime, err := sourceDate(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	version, err := checkoutVersion(root)
	if err != nil {
		return err
	}
	path, err := Write(ctx, Config{Root: root, OutDir: *out, ModTime: mtime, Version: version})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// checkoutVersion is the version a build of the checkout at root reports, as make
// build and make wheel stamp it: an unreleased checkout's sdist is named for its
// commit, not for the release it will become. Outside a git checkout it is
// pyproject.toml's.
func checkoutVersion(root string) (string, error) {
	proj, err := wheel.LoadProject(filepath.Join(root, "pyproject.toml"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return proj.Version, nil
	}
	return buildversion.Checkout(root, proj.Version)
}

// moduleRoot is the directory of the go.mod that governs the working directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run it inside the repl-mcp module (no go.mod here)")
	}
	return filepath.Dir(gomod), nil
}

// sourceDate is the archive's file time: SOURCE_DATE_EPOCH when set, for reproducible
// builds, else now.
func sourceDate(epoch string) (time.Time, error) {
	if epoch == "" {
		return time.Now().Truncate(time.Second), nil
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", epoch)
	}
	return time.Unix(secs, 0), nil
}

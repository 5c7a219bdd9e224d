package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/buildversion"
	"github.com/iota-uz/repl-mcp/internal/pep440"
	"github.com/iota-uz/repl-mcp/internal/wheel"
)

const usage = `usage: pywheel build --binary FILE [--platform TAG|GOOS/GOARCH] [--version V] [--out DIR] [--pyproject FILE]
       pywheel verify WHEEL...
       pywheel pep440 VERSION
       pywheel version [--dir DIR] [--pyproject FILE]
       pywheel deps [--pyproject FILE]`

// errUsage is a command line that cannot be parsed: exit status 2.
var errUsage = errors.New("bad usage")

func main() {
	err := run(os.Args[1:], os.Stdout)
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "pywheel:", err)
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "pywheel:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "build":
		return build(args[1:], stdout)
	case "verify":
		return verify(args[1:], stdout)
	case "pep440":
		if len(args) != 2 {
			return fmt.Errorf("%w: pep440 takes one version", errUsage)
		}
		v, err := pep440.Normalize(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, v)
		return nil
	case "version":
		return checkoutVersion(args[1:], stdout)
	case "deps":
		return deps(args[1:], stdout)
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

func build(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pywheel build", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg wheel.Config
	fs.StringVar(&cfg.Binary, "binary", "", "the repl-mcp executable")
	fs.StringVar(&cfg.Platform, "platform", "", "wheel platform tag or GOOS/GOARCH (default: read from the binary)")
	fs.StringVar(&cfg.Version, "version", "", "version, tag-style or PEP 440 (default: the binary's own, as its --version says)")
	fs.StringVar(&cfg.OutDir, "out", "dist", "output directory")
	fs.StringVar(&cfg.Pyproject, "pyproject", "pyproject.toml", "pyproject.toml for METADATA")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if cfg.Binary == "" {
		return fmt.Errorf("%w: --binary is required", errUsage)
	}
	var err error
	switch goos, goarch, isPair := strings.Cut(cfg.Platform, "/"); {
	case cfg.Platform == "":
		cfg.Platform, err = wheel.BinaryPlatform(cfg.Binary)
	case isPair:
		cfg.Platform, err = wheel.PlatformFor(goos, goarch)
	}
	if err != nil {
		return err
	}
	if cfg.Version == "" {
		if cfg.Version, err = binaryVersion(cfg.Binary); err != nil {
			return err
		}
	}
	path, err := wheel.Build(cfg)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\t%.1f MiB\n", path, float64(st.Size())/(1<<20))
	return nil
}

// checkoutVersion prints the version a build of the checkout reports
// (internal/buildversion): what `make build` and `make wheel` stamp.
func checkoutVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pywheel version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", ".", "the git checkout")
	pyproject := fs.String("pyproject", "pyproject.toml", "pyproject.toml, whose version is the next release")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	p, err := wheel.LoadProject(*pyproject)
	if err != nil {
		return err
	}
	v, err := buildversion.Checkout(*dir, p.Version)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, v)
	return nil
}

// deps prints pyproject.toml's dependencies one a line, without their environment
// markers: every wheel an installation of repl-mcp may need on any Python, for a
// wheelhouse.
func deps(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pywheel deps", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pyproject := fs.String("pyproject", "pyproject.toml", "pyproject.toml")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	p, err := wheel.LoadProject(*pyproject)
	if err != nil {
		return err
	}
	for _, d := range p.Dependencies {
		req, _, _ := strings.Cut(d, ";")
		fmt.Fprintln(stdout, strings.TrimSpace(req))
	}
	return nil
}

func verify(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: verify needs at least one wheel", errUsage)
	}
	failed := 0
	var errs []error
	for _, w := range args {
		if err := wheel.Verify(w); err != nil {
			failed++
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "ok\t%s\n", w)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d wheels failed verification:\n%w", failed, len(args), errors.Join(errs...))
	}
	return nil
}

// parseFlagsOnly parses args into fs for a command that takes flags and no other
// argument; either mistake is a usage error.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// binaryVersion is what the binary says it is (`repl-mcp --version` prints
// "repl-mcp VERSION"), so that a wheel built without --version is named as its
// binary reports itself: a development build's wheel is not the release's. Only a
// binary for this machine can be asked; for another, --version is required.
func binaryVersion(bin string) (string, error) {
	tag, err := wheel.BinaryPlatform(bin)
	if err != nil {
		return "", err
	}
	if here, err := wheel.PlatformFor(runtime.GOOS, runtime.GOARCH); err != nil || here != tag {
		return "", fmt.Errorf("%w: %s is a binary for %s, which cannot run here to say its version: pass --version (`go run ./pywheel version` prints the checkout's)", errUsage, bin, tag)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "repl-mcp ")
	if !ok || v == "" || strings.ContainsAny(v, " \n") {
		return "", fmt.Errorf("%s --version printed %q, not \"repl-mcp VERSION\": pass --version", bin, strings.TrimSpace(string(out)))
	}
	return v, nil
}

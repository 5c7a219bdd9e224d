package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/oauth"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/buildversion"
	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/server"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/iota-uz/repl-mcp/statedir"
)

// releaseVersion is the release this source is, or will be once tagged:
// pyproject.toml's version (version_test.go keeps them equal).
const releaseVersion = "0.1.0"

// version is the version this build reports, in PEP 440 form (internal/buildversion
// says which): stamped with -ldflags "-X main.version=..." by `make build` and `make
// wheel`; left empty by `go install`, so that Go's build information decides.
var version string

// buildVersion is the version this build reports.
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return buildversion.FromBuildInfo(releaseVersion, bi)
}

func main() { os.Exit(mainExit()) }

// mainExit runs the command line and returns the exit status.
func mainExit() int {
	if len(os.Args) > 1 && os.Args[1] == guardian.Flag {
		return guardian.Main()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "repl-mcp:", err)
		fmt.Fprintln(os.Stderr, usageLine)
		return 2
	default:
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
}

const usageLine = "usage: repl-mcp [--transport stdio|http] [--listen ADDR] [--http-token-file PATH | --http-no-auth] [--python PATH] [--max-memory-mib N] [--config PATH] [--mcp-scope S] [--journal PATH] [--result-format auto|text|structured] [--yield-after SECONDS] [--task-after SECONDS] [--task-poll-interval SECONDS] [--notebook-dir DIR] [--no-spare-worker] [--snapshot-dir DIR] [--no-snapshot] [--snapshot-max-mib N] [--idle-release MINUTES] [--sandbox MODE] [--add-writable-root DIR] [--allow-domain HOST] [--oauth-login SERVER] [--version] [--help] | repl-mcp doctor [flags]"

// usageError is a command line that cannot be parsed: exit status 2.
type usageError struct{ error }

// options are the parsed command line.
type options struct {
	transport    string
	listen       string
	tokenFile    string
	noAuth       bool
	python       string
	maxMemoryMiB int
	config       string
	scope        string
	journal      string
	oauthLogin   string
	resultFormat server.ResultFormat
	yieldAfter   *time.Duration // nil: per client (server.Config.YieldAfter)
	taskAfter    *time.Duration // nil: server.DefaultTaskAfter
	taskPoll     time.Duration  // 0: server.DefaultTaskPoll
	notebookDir  string
	noSpare      bool
	snapshotDir  string
	noSnapshot   bool
	snapshotMiB  int
	idleRelease  time.Duration
	sandbox      sandboxFlags
	showVersion  bool
	doctor       bool
}

func parseArgs(args []string, helpOut io.Writer) (options, error) {
	var o options
	if len(args) > 0 && args[0] == "doctor" {
		o.doctor, args = true, args[1:]
	}
	fs := flag.NewFlagSet("repl-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.transport, "transport", "stdio", "MCP transport: stdio, or http (streamable HTTP at http://ADDR/mcp; the URL is printed on stderr)")
	fs.StringVar(&o.listen, "listen", transport.DefaultHTTPAddr, "with --transport http: the address to listen on, HOST:PORT; loopback unless a bearer token is set (port 0 picks a free port)")
	fs.StringVar(&o.tokenFile, "http-token-file", "", "with --transport http: file (mode 0600) whose first line is the bearer token every request must carry (env "+tokenEnv+"); required for a non-loopback --listen. Without either, a token is generated and its file's path printed on stderr")
	fs.BoolVar(&o.noAuth, "http-no-auth", false, "with --transport http on loopback: require no bearer token, so every local user and process that can connect runs code as you; for clients that cannot send one")
	fs.StringVar(&o.python, "python", "", "Python interpreter for the default session (env REPL_MCP_PYTHON)")
	fs.IntVar(&o.maxMemoryMiB, "max-memory-mib", repl.DefaultMaxRSSMiB(), "worker RSS ceiling in MiB, zero disables; a resource budget, not isolation. The default is half this machine's memory (or its cgroup's limit), at least 2048")
	fs.StringVar(&o.config, "config", "", "explicit broker registry (JSON with mcpServers) for every session; relative to the working directory")
	fs.StringVar(&o.scope, "mcp-scope", "project", "registries the broker reads: project, user, local (comma-separated), all, or none")
	fs.StringVar(&o.journal, "journal", "", "persist redacted external-effect metadata (the call journal) in a private locked file")
	fs.StringVar(&o.oauthLogin, "oauth-login", "", "log the broker in to registry server `SERVER` (OAuth authorization code with PKCE in a browser), save its own grant, and exit")
	resultFormat := fs.String("result-format", string(server.FormatAuto), "how tool results are shaped: text (what the model reads, no structuredContent), structured (structuredContent and outputSchema), or auto: text for Claude Code and Codex, structured for other clients")
	fs.StringVar(&o.notebookDir, "notebook-dir", "", "write each session's notebook to `DIR`/<session name>-<short id>.ipynb, replaced atomically as its cells finish, for JupyterLab or VS Code to show live")
	fs.Func("yield-after", "`SECONDS` after which a cell still running becomes a background run and its call returns (status running; wait with python_run), for every client that passes no yield_after; 0 never yields. Default: 50 for Claude Code and Codex, 0 for other clients", func(v string) error {
		d, err := parseYieldAfter(v)
		o.yieldAfter = &d
		return err
	})
	fs.Func("task-after", fmt.Sprintf("`SECONDS` after which a cell whose call declared the MCP tasks extension (Claude Code's interactive CLI) is answered with a task, whose result the client fetches when it ends; 0 never answers with a task. Default: %g", server.DefaultTaskAfter.Seconds()), func(v string) error {
		d, err := parseYieldAfter(v)
		o.taskAfter = &d
		return err
	})
	fs.Func("task-poll-interval", fmt.Sprintf("`SECONDS` a task asks its client to wait between polls (pollIntervalMs), 0.01 to 60. Default: %g", server.DefaultTaskPoll.Seconds()), func(v string) error {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || !(secs >= 0.01 && secs <= 60) {
			return errors.New("must be seconds from 0.01 to 60")
		}
		o.taskPoll = time.Duration(secs * float64(time.Second))
		return nil
	})
	fs.BoolVar(&o.noSpare, "no-spare-worker", false, "keep no pre-started spare worker: by default, once a session has started Python, one more worker per interpreter and project waits (its memory shows in python_health) so that a reset, a crash recovery or a new session's first cell starts in milliseconds")
	fs.StringVar(&o.snapshotDir, "snapshot-dir", "", "the state directory that outlives the server (`DIR`: the record of restarts, generations and the sessions' snapshots); default $XDG_STATE_HOME/repl-mcp, else ~/.local/state/repl-mcp")
	fs.BoolVar(&o.noSnapshot, "no-snapshot", false, "take no snapshots of the sessions' variables between cells (python_session_restore still loads existing ones)")
	fs.IntVar(&o.snapshotMiB, "snapshot-max-mib", repl.DefaultSnapshotMaxMiB, "bound of one session's snapshot, and of a project's snapshots together (the oldest are evicted), in MiB")
	fs.Func("idle-release", "stop a session's worker idle for `MINUTES`, its variables saved; its next cell restores them first (default: never)", func(v string) error {
		minutes, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(minutes) || minutes <= 0 || minutes > 7*24*60 {
			return errors.New("must be minutes, more than 0 and at most a week")
		}
		o.idleRelease = time.Duration(minutes * float64(time.Minute))
		return nil
	})
	defineSandboxFlags(fs, &o.sandbox)
	fs.Bool("no-autoconnect", false, "accepted for older launchers and ignored: all connections are lazy")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&o.showVersion, "V", false, "print the version and exit")
	help := fs.Bool("help", false, "show this help")
	fs.BoolVar(help, "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err}
	}
	if *help {
		printHelp(helpOut, fs)
		return o, errHelp
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	switch o.transport {
	case "stdio":
		var httpOnly []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "listen" || f.Name == "http-token-file" || f.Name == "http-no-auth" {
				httpOnly = append(httpOnly, "--"+f.Name)
			}
		})
		if len(httpOnly) > 0 {
			return o, usageError{fmt.Errorf("%s requires --transport http", strings.Join(httpOnly, " and "))}
		}
	case "http":
		// Before the token is looked at: a typo in the address is the first thing to fix.
		if err := transport.CheckListenAddr(o.listen); err != nil {
			return o, usageError{fmt.Errorf("--listen: %w", err)}
		}
		if o.noAuth && o.tokenFile != "" {
			return o, usageError{errors.New("--http-no-auth and --http-token-file exclude each other: choose one")}
		}
	default:
		return o, usageError{fmt.Errorf("invalid value %q for --transport: stdio or http", o.transport)}
	}
	loginSet := false
	fs.Visit(func(f *flag.Flag) { loginSet = loginSet || f.Name == "oauth-login" })
	switch {
	case loginSet && o.oauthLogin == "":
		return o, usageError{errors.New("--oauth-login needs a server name")}
	case loginSet && o.doctor:
		return o, usageError{errors.New("doctor does not take --oauth-login")}
	}
	if err := o.sandbox.check(); err != nil {
		return o, usageError{err}
	}
	format, err := server.ParseResultFormat(*resultFormat)
	if err != nil {
		return o, usageError{err}
	}
	o.resultFormat = format
	if o.maxMemoryMiB < 0 {
		return o, usageError{fmt.Errorf("invalid value %d for --max-memory-mib: must be zero or more", o.maxMemoryMiB)}
	}
	if o.snapshotMiB < 1 {
		return o, usageError{fmt.Errorf("invalid value %d for --snapshot-max-mib: must be 1 or more", o.snapshotMiB)}
	}
	if o.snapshotDir != "" {
		if o.snapshotDir, err = filepath.Abs(o.snapshotDir); err != nil {
			return o, usageError{fmt.Errorf("--snapshot-dir: %w", err)}
		}
	}
	if o.notebookDir != "" {
		if o.notebookDir, err = filepath.Abs(o.notebookDir); err != nil {
			return o, usageError{fmt.Errorf("--notebook-dir: %w", err)}
		}
		if st, err := os.Stat(o.notebookDir); err != nil || !st.IsDir() {
			return o, usageError{fmt.Errorf("--notebook-dir %s: not an existing directory", o.notebookDir)}
		}
	}
	return o, nil
}

// parseYieldAfter reads --yield-after: seconds, as yield_after takes them.
func parseYieldAfter(v string) (time.Duration, error) {
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(secs) || secs < 0 || secs > repl.MaxTimeout.Seconds() {
		return 0, fmt.Errorf("must be seconds from 0 to %d", int(repl.MaxTimeout.Seconds()))
	}
	return time.Duration(secs * float64(time.Second)), nil
}

var errHelp = errors.New("help shown")

func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "repl-mcp: an MCP server that gives an AI agent a persistent CPython namespace.")
	fmt.Fprintln(w, "By default execution is trusted: cells have full access to this machine. --sandbox confines them (Linux).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, usageLine)
	fmt.Fprintln(w)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  doctor   run the real server in-process with a real cell and report its health")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "HTTP transport: one endpoint, /mcp, for MCP sessions (initialize, Mcp-Session-Id) and stateless")
	fmt.Fprintln(w, "2026-07-28 requests; every client sees the same Python sessions. It listens on loopback by default,")
	fmt.Fprintln(w, "refuses a non-loopback Host or Origin (403) and bodies over 1 MiB (413). Every request needs")
	fmt.Fprintln(w, "\"Authorization: Bearer TOKEN\" (401 otherwise): TOKEN from --http-token-file or "+tokenEnv+" (required")
	fmt.Fprintln(w, "for a non-loopback --listen), else generated at start into a new private file whose path is printed")
	fmt.Fprintln(w, "on stderr and which is removed at exit. --http-no-auth drops the token, on loopback only.")
}

// run is the whole command behind main, testable with any streams.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stdout)
	switch {
	case errors.Is(err, errHelp):
		return nil
	case err != nil:
		return err
	case o.showVersion:
		fmt.Fprintln(stdout, "repl-mcp", buildVersion())
		return nil
	}
	var httpCfg transport.HTTPConfig
	if o.transport == "http" {
		if httpCfg, err = httpConfig(o, stderr); err != nil {
			return err
		}
	}
	cfg, err := replConfig(o, stderr)
	if err != nil {
		return err
	}
	if o.oauthLogin == "" && !o.doctor {
		// doctor is a diagnostic: it records no server lifetime and keeps no snapshot.
		if cfg.State, err = stateDir(o, cfg.Logger); err != nil {
			return err
		}
	}
	brokers, closeBrokers, err := brokerSet(o, cfg)
	if err != nil {
		return err
	}
	defer closeBrokers()
	if o.oauthLogin != "" {
		return oauthLogin(ctx, brokers.Root(), o.oauthLogin, stderr)
	}
	stopProxy, err := startProxy(o.sandbox, &cfg.Sandbox, cfg.Logger)
	if err != nil {
		return err
	}
	defer stopProxy()
	// The sessions' manager is made below; saves on a session's behalf ask it
	// whether its sandbox allows them (repl.Manager.MayWrite).
	var manager *repl.Manager
	confine := func(session, dir string) error {
		if manager == nil {
			return nil
		}
		return manager.MayWrite(session, dir)
	}
	if !cfg.Sandbox.Sandboxed() {
		confine = nil
	}
	store := artifacts.New(artifacts.Config{Confine: confine, Logger: cfg.Logger})
	defer store.Close()
	notebooks, err := notebookKeeper(o, cfg, confine)
	if err != nil {
		return err
	}
	defer notebooks.Close()
	cfg.Recorder = notebooks
	ops := cellops.New(cellops.Config{Brokers: brokers, Store: store, Notebooks: notebooks})
	cfg.Services = ops
	lastClient := lastClientFile(cfg)
	if o.doctor {
		return doctor(ctx, cfg, brokers, store, lastClient, stdout)
	}
	// The sessions end by the server's Close, not by the signal's context: Close gives
	// each idle worker its last snapshot pass first (docs/contract.md §6.7), which a
	// cancelled lifetime would cut short, and cancels running cells after their grace.
	manager = repl.NewManager(context.WithoutCancel(ctx), cfg)
	srv := server.New(server.Config{Version: buildVersion(), Repl: manager, Brokers: brokers, Artifacts: store,
		Notebooks: notebooks, ResultFormat: o.resultFormat, YieldAfter: o.yieldAfter, Sandbox: cfg.Sandbox, CodexTempDir: os.TempDir(),
		TaskAfter: o.taskAfter, TaskPoll: o.taskPoll, LastClient: lastClient, Logger: cfg.Logger})
	// Building the server leaves about 2 MiB of garbage (go-sdk decodes each tool's
	// schemas with a fresh 32 KiB buffer) in heap pages the runtime would keep resident
	// while idle: return them once (docs/design.md, Performance targets). Over stdio,
	// once the first reply is written: the collection takes about 1.3 ms of CPU, which
	// on the path to the initialize reply delays every cold start.
	if o.transport == "http" {
		go debug.FreeOSMemory()
		err := srv.ServeStreamableHTTP(ctx, httpCfg)
		switch {
		case errors.Is(err, transport.ErrTokenRequired):
			return fmt.Errorf("%w: pass --http-token-file PATH or set %s", err, tokenEnv)
		case errors.Is(err, transport.ErrNoAuthLoopbackOnly):
			return fmt.Errorf("--http-no-auth: %w; pass --http-token-file PATH or set %s instead", err, tokenEnv)
		}
		return err
	}
	return srv.ServeStdio(ctx, stdin, &afterFirstWrite{Writer: stdout, then: debug.FreeOSMemory})
}

// afterFirstWrite runs then, once, in a goroutine of its own, when its first Write
// has returned.
type afterFirstWrite struct {
	io.Writer
	once sync.Once
	then func()
}

func (w *afterFirstWrite) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.once.Do(func() { go w.then() })
	return n, err
}

// notebookKeeper keeps the sessions' records in repl-mcp/notebooks in the user
// cache directory, or, where that cannot be made (a read-only home), in a directory
// of this user's under the temp directory; each server lifetime keeps its own
// directory there and removes it at exit.
func notebookKeeper(o options, cfg repl.Config, confine func(session, dir string) error) (*notebook.Keeper, error) {
	var roots []string
	if base, err := os.UserCacheDir(); err == nil {
		roots = append(roots, filepath.Join(base, "repl-mcp", "notebooks"))
	}
	roots = append(roots, filepath.Join(os.TempDir(), fmt.Sprintf("repl-mcp-notebooks-%d", os.Geteuid())))
	var errs []error
	for _, root := range roots {
		k, err := notebook.New(notebook.Config{Root: root, LiveDir: o.notebookDir, Confine: confine, Logger: cfg.Logger})
		if err == nil {
			return k, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no directory for the sessions' notebook records: %w", errors.Join(errs...))
}

// stateDir opens the state directory: --snapshot-dir, which must be usable, else the
// XDG state directory's repl-mcp, else (a read-only home) one of this user's under the
// temp directory, which survives restarts but not reboots; without any, the server
// keeps no state (restart answers, generations across lifetimes, snapshots) and says
// so in its log.
func stateDir(o options, log *slog.Logger) (*statedir.Dir, error) {
	if o.snapshotDir != "" {
		d, err := statedir.Open(o.snapshotDir, log)
		if err != nil {
			return nil, fmt.Errorf("--snapshot-dir %s: %w", o.snapshotDir, err)
		}
		return d, nil
	}
	var errs []error
	root, err := statedir.DefaultRoot(os.Getenv)
	if err == nil {
		var d *statedir.Dir
		if d, err = statedir.Open(root, log); err == nil {
			return d, nil
		}
	}
	errs = append(errs, err)
	d, err := statedir.Open(filepath.Join(os.TempDir(), fmt.Sprintf("repl-mcp-state-%d", os.Geteuid())), log)
	if err == nil {
		return d, nil
	}
	log.Warn("no state directory: no restart answers, snapshots or generations across restarts", "err", errors.Join(append(errs, err)...))
	return nil, nil
}

// oauthLogin runs --oauth-login SERVER against the root broker's registry, read
// at startup (docs/contract.md §1.6), and returns once the grant is saved or the login
// failed; the server does not start.
func oauthLogin(ctx context.Context, root *broker.Broker, server string, stderr io.Writer) error {
	entry, err := root.LoginEntry(server)
	if err != nil {
		return err
	}
	return oauth.Login(ctx, oauth.LoginConfig{Entry: entry, Stderr: stderr})
}

// tokenEnv names the environment variable that may hold the HTTP bearer token.
const tokenEnv = "REPL_MCP_HTTP_TOKEN"

// httpConfig turns options and the environment into the HTTP transport's config:
// the token from --http-token-file, else from the environment, else generated into
// a file under $XDG_RUNTIME_DIR or the user cache directory; the lines on stderr
// once listening: the generated token's file, what --http-no-auth exposes, and the
// URL last, so that a client reading up to the URL has all it needs.
func httpConfig(o options, stderr io.Writer) (transport.HTTPConfig, error) {
	cfg := transport.HTTPConfig{
		Addr:      o.listen,
		NoAuth:    o.noAuth,
		TokenDirs: tokenDirs(),
		Listening: func(url, tokenFile string) {
			if tokenFile != "" {
				fmt.Fprintln(stderr, `repl-mcp: bearer token file (send "Authorization: Bearer <its first line>"):`, tokenFile)
			}
			if o.noAuth {
				fmt.Fprintf(stderr, "repl-mcp: --http-no-auth: requests need no bearer token; every local user and process that can connect to %s can run code as uid %d\n", url, os.Geteuid())
			}
			fmt.Fprintln(stderr, "repl-mcp: listening on", url)
		},
	}
	envToken := strings.TrimSpace(os.Getenv(tokenEnv))
	switch {
	case o.tokenFile != "":
		token, err := transport.ReadTokenFile(o.tokenFile)
		if err != nil {
			return cfg, err
		}
		cfg.Token = token
	case envToken != "" && o.noAuth:
		return cfg, fmt.Errorf("--http-no-auth contradicts the token in %s; unset one of them", tokenEnv)
	case envToken != "":
		cfg.Token = envToken
		if err := transport.CheckToken(cfg.Token); err != nil {
			return cfg, fmt.Errorf("%s: %w", tokenEnv, err)
		}
	}
	return cfg, nil
}

// tokenDirs are where a generated token's file may go: $XDG_RUNTIME_DIR/repl-mcp
// (a per-user tmpfs where it exists), then repl-mcp-http in the user cache
// directory. The server takes the first it finds private.
func tokenDirs() []string {
	var dirs []string
	if runtime := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(runtime) {
		if info, err := os.Stat(runtime); err == nil && info.IsDir() {
			dirs = append(dirs, filepath.Join(runtime, "repl-mcp"))
		}
	}
	if cache, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(cache, "repl-mcp-http"))
	}
	return dirs
}

// brokerSet opens the journal and builds the project brokers. A defective registry
// is not fatal (the broker reports it and fails closed); an invalid --mcp-scope or
// a journal that cannot be owned is. The returned close runs after the sessions
// have closed: brokers first, then the journal they write to.
func brokerSet(o options, cfg repl.Config) (*broker.Set, func(), error) {
	scope, err := registry.ParseScope(o.scope)
	if err != nil {
		return nil, nil, err
	}
	effects, err := journal.Open(journal.Config{Path: o.journal, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	if o.config != "" && !filepath.IsAbs(o.config) {
		// Relative to the server's working directory, for every project's broker.
		o.config = filepath.Join(cfg.Project, o.config)
	}
	exe, _ := os.Executable()
	set := broker.NewSet(broker.Options{
		Registry: registry.Options{
			Project:         cfg.Project,
			ConfigPath:      o.config,
			Scope:           scope,
			Home:            os.Getenv("HOME"),
			LookupEnv:       lookupIn(cfg.Env),
			NoBridge:        os.Getenv("REPL_MCP_NO_BRIDGE") == "1",
			SelfExecutables: []string{exe},
		},
		Journal:    effects,
		Executable: exe,
		Version:    buildVersion(),
		Env:        cfg.Env,
		Logger:     cfg.Logger,
	})
	return set, func() {
		set.Close()
		effects.Close()
	}, nil
}

// serverSecrets are the environment variables that hold secrets of the server's
// own. They are read from the server's environment and never passed on.
func serverSecrets() []string { return []string{tokenEnv} }

// scrubEnv is env without the server's secrets: the environment every worker, its
// subprocesses and every downstream server start from (repl.Config.Env, which the
// broker inherits), so that code the server runs cannot read them.
func scrubEnv(env []string) []string {
	secrets := serverSecrets()
	kept := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secrets, name) {
			kept = append(kept, kv)
		}
	}
	return kept
}

// lookupIn looks a variable up in env, the scrubbed environment: a registry's
// ${VAR} (a project's .mcp.json may come with a repository someone else wrote)
// can name only what a worker or downstream server could read anyway, never the
// server's own secrets.
func lookupIn(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if value, ok := strings.CutPrefix(env[i], name+"="); ok {
				return value, true
			}
		}
		return "", false
	}
}

// replConfig turns options and the environment into the sessions' Config.
func replConfig(o options, stderr io.Writer) (repl.Config, error) {
	wd, err := os.Getwd()
	if err != nil {
		return repl.Config{}, fmt.Errorf("resolve the working directory: %w", err)
	}
	project, err := filepath.EvalSymlinks(wd)
	if err != nil {
		return repl.Config{}, fmt.Errorf("resolve the working directory: %w", err)
	}
	exe, _ := os.Executable()
	python, chosenBy := repl.DefaultInterpreter(o.python, os.Getenv("REPL_MCP_PYTHON"), exe, project)
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "repl-mcp")
	}
	sandboxed, err := sandboxSettings(o.sandbox, project, sandbox.HostKernel(), stderr)
	if err != nil {
		return repl.Config{}, err
	}
	return repl.Config{
		Sandbox:       sandboxed,
		Python:        python,
		PythonSource:  chosenBy,
		Project:       project,
		Env:           scrubEnv(os.Environ()),
		MaxMemoryMiB:  o.maxMemoryMiB,
		CodeCache:     cache,
		OpLimits:      cellops.Limits(),
		NoSpareWorker: o.noSpare,
		Snapshots: repl.SnapshotConfig{
			Off: o.noSnapshot, MaxBytes: int64(o.snapshotMiB) << 20, IdleRelease: o.idleRelease,
		},
		Version: buildVersion(),
		Logger:  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, nil
}

// lastClientFile is where each connection records its client for `repl-mcp doctor`
// (server.LastClient): last-client.json in the private cache directory the workers'
// compiled code lives in; "" (record nothing) without one.
func lastClientFile(cfg repl.Config) string {
	if cfg.CodeCache == "" {
		return ""
	}
	return filepath.Join(cfg.CodeCache, "last-client.json")
}

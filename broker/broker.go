package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/broker/argcheck"
	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
)

// Options configure a Broker. main builds them from flags and environment.
type Options struct {
	// Registry says where this broker's registry comes from.
	Registry registry.Options
	// Journal records every call; one journal is shared by all brokers of a server.
	Journal *journal.Journal
	// Validator checks arguments; shared by all brokers of a server. Nil makes one.
	Validator *argcheck.Validator
	// Executable is repl-mcp itself, re-run as the guardian of stdio peers.
	Executable string
	// Version is announced to downstream servers.
	Version string
	// Env is the environment stdio peers start from (the server's); each peer gets
	// its entry's env and REPL_MCP_NO_BRIDGE=1 on top.
	Env []string
	// Logger receives connection and reload reports; nil discards.
	Logger *slog.Logger
}

// Broker is one project's downstream MCP client: its registry, its connections
// and their catalogues. Sessions of one project share it (see Set). It is safe
// for concurrent use. Nothing connects until a call or listing names a server.
type Broker struct {
	opts Options
	log  *slog.Logger
	sem  chan struct{} // request slots

	mu         sync.Mutex
	reg        *registry.Registry
	configErr  error // the last load's defect; broker calls fail closed while set
	loadedAt   time.Time
	transports map[string]*transport // by fingerprint
	loadStart  time.Time             // when the registry load in progress began; zero between loads
	closed     bool
	wg         sync.WaitGroup // peer closes and catalogue listings in flight

	loads    singleflight.Group                                 // registry loads
	listings singleflight.Group                                 // catalogue listings, by transport and peer
	load     func(registry.Options) (*registry.Registry, error) // registry.Load; tests stall it
	now      func() time.Time                                   // the clock OAuth tokens expire by: time.Now; tests move it
}

// New makes a broker and loads its registry. A defective registry is not an error
// here: it is kept as the configuration error that health and explain report, and
// broker calls fail closed until a refresh succeeds.
func New(opts Options) *Broker {
	if opts.Validator == nil {
		opts.Validator = argcheck.New(argcheck.Config{})
	}
	b := &Broker{
		opts:       opts,
		log:        opts.Logger,
		sem:        make(chan struct{}, MaxConcurrentRequests),
		transports: map[string]*transport{},
		load:       registry.Load,
		now:        time.Now,
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.reload()
	return b
}

// Refresh reloads the registry now, clears failure cooldowns and cached
// catalogues, and returns the broker's health. When the registry does not load
// the error is the configuration error, as every other method reports it; the
// health, which carries it too, is returned all the same. A closed broker loads
// nothing: it says it is shut down.
func (b *Broker) Refresh() (Health, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return b.Health(), errors.New(msgBrokerClosed)
	}
	err := b.reload()
	b.mu.Lock()
	for _, t := range b.transports {
		t.failedAt, t.failure, t.cat = time.Time{}, "", nil
	}
	b.mu.Unlock()
	if err != nil {
		return b.Health(), fmt.Errorf(msgConfigError, err)
	}
	return b.Health(), nil
}

// Close shuts every connection down. Calls in flight end with a transport error.
func (b *Broker) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	peers := b.dropTransportsLocked(func(*transport) bool { return true })
	b.mu.Unlock()
	var g errgroup.Group
	for _, p := range peers {
		g.Go(func() error { p.close(); return nil })
	}
	g.Wait()
	b.wg.Wait() // closes begun earlier (reloads, failed transports) and listings
}

// Servers returns the configured server names, sorted.
func (b *Broker) Servers() ([]string, error) {
	reg, err := b.ready(true)
	if err != nil {
		return nil, err
	}
	return reg.Names(), nil
}

// Journal returns the journal's records, oldest first: those of every session
// and project, since one journal serves them all. It works while the registry
// is defective, so that the outcome of earlier calls stays readable.
func (b *Broker) Journal() ([]journal.Record, error) {
	if _, err := b.ready(false); err != nil {
		return nil, err
	}
	recs := b.opts.Journal.Records()
	if recs == nil {
		recs = []journal.Record{}
	}
	return recs, nil
}

// CheckServerName returns nil for a valid server name (1..200 bytes without
// control characters) and the cell's error for any other; every method taking
// a server name applies it first.
func CheckServerName(name string) error {
	if !registry.ValidName(name, registry.MaxServerNameBytes) {
		return errors.New(msgBadServerName)
	}
	return nil
}

func checkToolName(name string) error {
	if !registry.ValidName(name, registry.MaxToolNameBytes) {
		return errors.New(msgBadToolName)
	}
	return nil
}

// checkTimeout refuses a timeout outside MinTimeout..MaxTimeout; zero too, since
// a Go caller that means the default says DefaultCallTimeout or DefaultListTimeout.
func checkTimeout(d time.Duration) error {
	if d < MinTimeout || d > MaxTimeout {
		return errors.New(msgBadTimeout)
	}
	return nil
}

// ready reloads the registry when 30 s have passed since the last load and returns
// it. strict ops (servers, tools, call) also fail while a configuration error is
// stored; every op fails when the reload it just ran failed.
func (b *Broker) ready(strict bool) (*registry.Registry, error) {
	b.mu.Lock()
	closed, due := b.closed, time.Since(b.loadedAt) >= registryTTL
	b.mu.Unlock()
	if closed {
		return nil, errors.New(msgBrokerClosed)
	}
	if due {
		if err := b.reload(); err != nil {
			return nil, fmt.Errorf(msgConfigError, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if strict && b.configErr != nil {
		return nil, fmt.Errorf(msgConfigError, b.configErr)
	}
	return b.reg, nil
}

// reload reads the registry as a bounded job and applies it: connections whose
// transport identity is still configured stay, the others close. On error the
// registry is emptied, every connection closes and the error is stored.
func (b *Broker) reload() error {
	reg, err := b.loadRegistry()
	b.mu.Lock()
	b.loadedAt = time.Now()
	if err != nil {
		reg = &registry.Registry{Servers: map[string]registry.Entry{}, Excluded: map[string]registry.Exclusion{}, Provenance: b.opts.Registry.Provenance()}
	}
	b.reg, b.configErr = reg, err
	keep := map[string]bool{}
	for _, e := range reg.Servers {
		keep[e.Fingerprint] = true
	}
	peers := b.dropTransportsLocked(func(t *transport) bool { return !keep[t.fp] })
	b.mu.Unlock()
	b.closePeersAsync(peers)
	if err != nil {
		b.log.Warn("broker registry rejected", "project", b.opts.Registry.Project, "err", err)
	}
	return err
}

// loadRegistry runs registry.Load as one bounded job: callers that arrive while a
// load runs share it, and each waits at most 5 s from the job's start. A load
// stalled on a slow file system keeps its job, and later reloads fail at once
// instead of piling up goroutines behind it. That job cannot be interrupted (a
// read on a dead mount ignores everything), so nothing waits for it: it ends when
// the file system answers, and Close must not hang on it.
func (b *Broker) loadRegistry() (*registry.Registry, error) {
	ch := b.loads.DoChan("registry", func() (any, error) {
		b.mu.Lock()
		b.loadStart = time.Now()
		b.mu.Unlock()
		reg, err := b.load(b.opts.Registry)
		b.mu.Lock()
		b.loadStart = time.Time{}
		b.mu.Unlock()
		return reg, err
	})
	b.mu.Lock()
	started := b.loadStart
	b.mu.Unlock()
	if started.IsZero() {
		// The job has not reached its first line yet, or has just passed its last:
		// either way its start is no earlier than now.
		started = time.Now()
	}
	timer := time.NewTimer(registryJobBudget - time.Since(started))
	defer timer.Stop()
	select {
	case r := <-ch:
		reg, _ := r.Val.(*registry.Registry)
		return reg, r.Err
	case <-timer.C:
		return nil, &registry.ConfigError{Msg: msgRegistryStalled}
	}
}

// acquire takes a request slot, waiting at most until ctx ends.
func (b *Broker) acquire(ctx context.Context) (release func(), err error) {
	select {
	case b.sem <- struct{}{}:
		return func() { <-b.sem }, nil
	default:
	}
	select {
	case b.sem <- struct{}{}:
		return func() { <-b.sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf(msgQueued, MaxConcurrentRequests)
	}
}

// entry finds a configured server; its name was checked when the params were read.
// A name the registry names but excludes is refused with the reason and the registry
// to change, since "unknown" would send the user looking for a typo.
func (b *Broker) entry(reg *registry.Registry, server string) (registry.Entry, error) {
	if reg.Disabled {
		return registry.Entry{}, fmt.Errorf(msgDisabled, reg.DisabledBy)
	}
	e, ok := reg.Lookup(server)
	if !ok {
		if x, excluded := reg.Excluded[server]; excluded {
			return registry.Entry{}, excludedError(server, x)
		}
		return registry.Entry{}, errors.New(msgUnknownServer)
	}
	return e, nil
}

// excludedError is the refusal of a call to a server the registry excludes.
func excludedError(server string, x registry.Exclusion) error {
	if x.Reason == registry.ExcludedDisabled {
		return fmt.Errorf(msgServerDisabled, server, x.Where())
	}
	return fmt.Errorf(msgServerNotGranted, server, x.Where())
}

// Health is the broker section of python_health (docs/contract.md §3.3).
type Health struct {
	ConfiguredServers     int                 `json:"configured_servers"`
	ConnectedTransports   int                 `json:"connected_transports"`
	ConfigurationError    *string             `json:"configuration_error"`
	MaxConcurrentRequests int                 `json:"max_concurrent_requests"`
	Authentication        string              `json:"authentication"`
	Journal               int                 `json:"journal"`
	JournalDurable        bool                `json:"journal_durable"`
	Disabled              bool                `json:"disabled"`
	Provenance            registry.Provenance `json:"provenance"`
	// ClientVisible are the entries of .mcp.json that narrow their tools with
	// allowedTools (registry.Registry.ClientVisible), for doctor's warning.
	ClientVisible []string `json:"-"`
}

// Health reports the broker's state without connecting anything.
func (b *Broker) Health() Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := Health{
		ConfiguredServers:     len(b.reg.Servers),
		MaxConcurrentRequests: MaxConcurrentRequests,
		Authentication:        msgAuthentication,
		Disabled:              b.reg.Disabled,
		Provenance:            b.opts.Registry.Provenance(),
		ClientVisible:         b.reg.ClientVisible,
	}
	for _, t := range b.transports {
		if t.peer != nil && t.peer.alive() {
			h.ConnectedTransports++
		}
	}
	if b.configErr != nil {
		msg := b.configErr.Error()
		h.ConfigurationError = &msg
	}
	stats := b.opts.Journal.Stats()
	h.Journal, h.JournalDurable = stats.Records, stats.Durable
	return h
}

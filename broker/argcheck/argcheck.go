// This file owns the Validator and the course of one check: the contract's
// budgets and errors, the validation slots, and the steps from raw arguments to
// a verdict (budgets, the subschema budget, jsonschema-go, then
// the diagnostics and formats).

package argcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
)

// Budgets for argument validation (docs/contract.md §8.6 and §13.1). They are fixed by the
// contract, not configurable: a hostile or huge schema must never stall the server.
const (
	MaxArgumentBytes = 262144 // serialized arguments
	MaxArgumentDepth = 64     // nested objects/arrays; the top-level object is depth 1
	MaxArgumentNodes = 16384  // JSON values (objects, arrays and scalars; keys not counted)

	MaxSchemaBytes        = 65536
	MaxSchemaDepth        = 32
	MaxSchemaNodes        = 2048
	MaxCompositionBranch  = 16  // entries of one allOf, anyOf or oneOf
	MaxPatternChars       = 256 // characters of one pattern or patternProperties key
	DefaultValidatorSlots = 4
	DefaultValidatorCache = 1024

	// MaxValidationSteps bounds the subschema applications one validation may
	// make, counted on the actual arguments before jsonschema-go runs. Shared
	// and recursive $refs can make a small schema cost exponential time, and a
	// $ref cycle that consumes no input would recurse until the stack blows.
	MaxValidationSteps = 200000
	maxRecursion       = 1024

	// locateSteps bounds the diagnostic walk that finds where a failed
	// validation went wrong; past it the error names the arguments root.
	locateSteps = 20000
)

// Errors a caller can branch on with errors.Is. Budget and schema errors wrap
// these with the budget and its limit; messages never contain argument values.
var (
	ErrByteBudget         = errors.New("MCP schema or arguments exceed byte budget")
	ErrDepthNodeBudget    = errors.New("MCP schema or arguments exceed depth/node budget")
	ErrCompositionBudget  = errors.New("MCP schema exceeds composition budget")
	ErrPatternBudget      = errors.New("MCP schema exceeds pattern budget")
	ErrExternalRef        = errors.New("MCP inputSchema has external references; inline the schema before broker execution")
	ErrSchemaRejected     = errors.New("tool inputSchema rejected")
	ErrArgumentsNotObject = errors.New("arguments must be a JSON object")
)

// ArgumentsError reports arguments that violate the tool's inputSchema. It names
// where (a JSON pointer into the arguments) and which rule, never the value.
type ArgumentsError struct {
	Pointer string // RFC 6901 pointer into the arguments; "" is the arguments object
	Rule    string // the schema keyword broken, with schema-side detail only
}

func (e *ArgumentsError) Error() string {
	where := "the arguments object"
	if e.Pointer != "" {
		where = shortPointer(e.Pointer)
	}
	rule := e.Rule
	if len(rule) > 300 {
		rule = strings.ToValidUTF8(rule[:300], "") + "…"
	}
	return fmt.Sprintf("MCP arguments violate inputSchema at %s (%s); inspect mcp.help(server, tool). Values are omitted from diagnostics", where, rule)
}

// Config configures a Validator. Zero values take the contract defaults.
type Config struct {
	Slots     int // concurrent validations; default 4
	CacheSize int // resolved schemas kept; default 1024, oldest evicted first
	Logger    *slog.Logger
}

// Validator checks tool-call arguments against a tool's inputSchema within the
// contract's budgets. It is safe for concurrent use.
type Validator struct {
	slots  chan struct{}
	logger *slog.Logger

	mu        sync.Mutex
	cache     map[[32]byte]*compiled
	order     [][32]byte // insertion order, oldest first
	cacheSize int

	resolves  atomic.Int64 // schemas compiled (cache misses)
	evictions atomic.Int64

	onSlot func() // test hook, run while holding a slot
}

// New returns a Validator with defaults filled in from the contract.
func New(cfg Config) *Validator {
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultValidatorSlots
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultValidatorCache
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Validator{
		slots:     make(chan struct{}, cfg.Slots),
		logger:    cfg.Logger,
		cache:     make(map[[32]byte]*compiled),
		cacheSize: cfg.CacheSize,
	}
}

// Check validates arguments (a serialized JSON object; empty means {}) against
// schema (a tool's inputSchema; empty or {} accepts any object). It waits for
// one of the validation slots, honouring ctx while it waits; once it holds a
// slot it keeps it until the work is done, which the budgets keep short.
//
// Errors: *ArgumentsError for a violation; ErrArgumentsNotObject; ErrByteBudget
// or ErrDepthNodeBudget for arguments over budget; anything wrapping
// ErrSchemaRejected when the schema itself is invalid or over budget.
func (v *Validator) Check(ctx context.Context, schema json.RawMessage, arguments json.RawMessage) error {
	return v.CheckSchema(ctx, NewSchema(schema), arguments)
}

// CheckSchema is Check against a prepared schema.
func (v *Validator) CheckSchema(ctx context.Context, schema *Schema, arguments json.RawMessage) error {
	// Byte budgets first: they cost nothing and bound everything after.
	if n := len(arguments); n > MaxArgumentBytes {
		return fmt.Errorf("%w: arguments are %d bytes, limit %d", ErrByteBudget, n, MaxArgumentBytes)
	}
	if n := len(schema.raw); n > MaxSchemaBytes {
		return fmt.Errorf("%w: %w: schema is %d bytes, limit %d", ErrSchemaRejected, ErrByteBudget, n, MaxSchemaBytes)
	}

	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("MCP argument validation cancelled while waiting for a slot: %w", ctx.Err())
	}
	defer func() { <-v.slots }()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("MCP argument validation cancelled: %w", err)
	}
	if v.onSlot != nil {
		v.onSlot()
	}
	return v.check(schema, arguments)
}

func (v *Validator) check(schema *Schema, arguments json.RawMessage) error {
	arguments = bytes.TrimSpace(arguments)
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	if arguments[0] != '{' {
		return fmt.Errorf("%w: got %s", ErrArgumentsNotObject, jsonKind(arguments[0]))
	}
	if err := scanBudget(arguments, "arguments", MaxArgumentDepth, MaxArgumentNodes); err != nil {
		if errors.Is(err, errSyntax) {
			return fmt.Errorf("%w: %w", ErrArgumentsNotObject, err)
		}
		return err
	}

	trimmed, key := schema.prepared()
	if len(trimmed) == 0 || isEmptyObject(trimmed) {
		return nil // no constraints beyond being an object, checked above
	}
	c := v.compile(key, trimmed)
	if c.err != nil {
		return c.err
	}

	var instance any
	if err := json.Unmarshal(arguments, &instance); err != nil {
		return fmt.Errorf("%w: %w", ErrArgumentsNotObject, errSyntax)
	}
	steps := &cost{c: c, left: MaxValidationSteps}
	if !steps.apply(c.tree, instance, 0) {
		if steps.left < 0 {
			return fmt.Errorf("%w: validating these arguments would apply more than %d subschemas, limit %d", ErrDepthNodeBudget, MaxValidationSteps, MaxValidationSteps)
		}
		return fmt.Errorf("%w: schema references nest deeper than %d levels (a $ref cycle?), limit %d", ErrDepthNodeBudget, maxRecursion, maxRecursion)
	}
	if err := safeValidate(c.resolved, instance); err != nil {
		if errors.Is(err, ErrSchemaRejected) {
			return err
		}
		loc := &locator{root: c.tree, followRefs: c.followRefs, steps: locateSteps}
		if ae := loc.find(c.tree, instance, "", false); ae != nil {
			return ae
		}
		if loc.ambiguous != nil {
			return loc.ambiguous
		}
		return &ArgumentsError{Rule: failedKeyword(err)}
	}
	// jsonschema-go treats "format" as an annotation; the broker checks the
	// formats it knows on the paths every valid instance must satisfy.
	if !c.formats {
		return nil
	}
	loc := &locator{root: c.tree, followRefs: c.followRefs, steps: locateSteps}
	if ae := loc.find(c.tree, instance, "", true); ae != nil {
		return ae
	}
	return nil
}

// safeValidate runs jsonschema-go, turning an internal panic into a schema
// rejection rather than a crash of the broker.
func safeValidate(rs *jsonschema.Resolved, instance any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: validator failed on this schema", ErrSchemaRejected)
		}
	}()
	return rs.Validate(instance)
}

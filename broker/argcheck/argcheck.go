package argcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/mail"
	"net/netip"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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

// compiled is a checked and resolved schema, or the reason it was rejected.
type compiled struct {
	resolved   *jsonschema.Resolved
	tree       any  // the schema as generic JSON, for diagnostics and formats
	followRefs bool // local refs resolve against the root (no nested $id)
	anchors    map[string][]any
	// formats: some object in the schema has a "format" member, so valid arguments
	// get the broker's format checks; without one there is nothing they could find.
	formats bool
	fast    *fastSchema // the schema's own check, when it uses only fastSchema's keywords
	err     error
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

// Schema is a tool's inputSchema as CheckSchema takes it: the key its compiled
// form is cached under is computed on its first check and kept, so a caller that
// checks many calls against one schema (the broker, for each tool of a
// catalogue) hashes up to 64 KiB once rather than on every call. It is safe for
// concurrent use.
type Schema struct {
	raw json.RawMessage

	once    sync.Once
	trimmed []byte
	key     [32]byte
}

// NewSchema wraps a tool's inputSchema (empty or {} accepts any object); nothing
// is hashed or compiled yet.
func NewSchema(raw json.RawMessage) *Schema { return &Schema{raw: raw} }

// prepared is the schema without surrounding space and its cache key.
func (s *Schema) prepared() ([]byte, [32]byte) {
	s.once.Do(func() {
		s.trimmed = bytes.TrimSpace(s.raw)
		s.key = sha256.Sum256(s.trimmed)
	})
	return s.trimmed, s.key
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
	if c.fast != nil && c.fast.accepts(instance) {
		return nil // valid; a schema of fastSchema's keywords has no formats to check
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

// compile returns the cached compiled schema for these bytes (key is their
// SHA-256), compiling and caching it (rejections included) on a miss.
func (v *Validator) compile(key [32]byte, schema []byte) *compiled {
	v.mu.Lock()
	c, ok := v.cache[key]
	v.mu.Unlock()
	if ok {
		return c
	}
	v.resolves.Add(1)
	c = compileSchema(schema)

	v.mu.Lock()
	defer v.mu.Unlock()
	if prev, ok := v.cache[key]; ok {
		return prev // a concurrent miss won
	}
	if len(v.order) >= v.cacheSize {
		oldest := v.order[0]
		v.order = v.order[1:]
		delete(v.cache, oldest)
		n := v.evictions.Add(1)
		v.logger.Debug("validator cache evicted oldest schema", "limit", v.cacheSize, "evictions", n)
	}
	v.cache[key] = c
	v.order = append(v.order, key)
	return c
}

func compileSchema(data []byte) *compiled {
	reject := func(err error) *compiled {
		return &compiled{err: fmt.Errorf("%w: %w", ErrSchemaRejected, err)}
	}
	if data[0] != '{' {
		return reject(fmt.Errorf("inputSchema must be a JSON object, got %s", jsonKind(data[0])))
	}
	if err := scanBudget(data, "schema", MaxSchemaDepth, MaxSchemaNodes); err != nil {
		return reject(err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return reject(errSyntax)
	}
	sc := &schemaChecker{root: tree, seen: map[string]bool{}, anchors: map[string][]any{}}
	if err := sc.walk(tree, ""); err != nil {
		return reject(err)
	}
	if sc.nestedID && sc.hasRef {
		return reject(errors.New("$ref inside a schema with a nested $id is not supported; inline the schema"))
	}
	if s, ok := tree.(map[string]any)["$schema"]; ok {
		switch s {
		case "https://json-schema.org/draft/2020-12/schema",
			"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		default:
			return reject(errors.New("$schema must be draft 2020-12 or draft-07"))
		}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return reject(err)
	}
	rs, err := s.Resolve(nil) // no loader: remote references cannot be fetched
	if err != nil {
		return reject(err)
	}
	c := &compiled{resolved: rs, tree: tree, followRefs: !sc.nestedID, anchors: sc.anchors, formats: treeHasKey(tree, "format")}
	if fast, ok := compileFast(tree, true); ok && !c.formats {
		c.fast = fast
	}
	return c
}

var errSyntax = errors.New("not valid JSON")

// treeHasKey reports whether any object in the generic JSON tree has a member
// named key, at any depth (in data positions too: it may say yes for nothing).
func treeHasKey(tree any, key string) bool {
	switch t := tree.(type) {
	case map[string]any:
		if _, ok := t[key]; ok {
			return true
		}
		for _, v := range t {
			if treeHasKey(v, key) {
				return true
			}
		}
	case []any:
		for _, v := range t {
			if treeHasKey(v, key) {
				return true
			}
		}
	}
	return false
}

// scanBudget checks data against the depth and node budgets without building
// a tree, and rejects duplicate object keys, which would let the validator and
// the downstream server see different values. Valid JSON, which every call
// sends, is walked byte by byte (scanValid); anything else is streamed token
// by token (scanStream), which reports the first problem in document order,
// syntax errors included. Both report the same problem for the same input: the
// walk meets the budgets and keys in the order the stream does.
func scanBudget(data []byte, what string, maxDepth, maxNodes int) error {
	if json.Valid(data) {
		return scanValid(data, what, maxDepth, maxNodes)
	}
	return scanStream(data, what, maxDepth, maxNodes)
}

// scanStream streams data token by token, stopping at the first syntax error,
// duplicate key or exceeded budget.
func scanStream(data []byte, what string, maxDepth, maxNodes int) error {
	type frame struct {
		obj       bool
		expectKey bool
		keys      map[string]struct{}
		seg       string // pointer segment of this container in its parent
		key       string // escaped key of the member being read (objects)
		next      int    // next array index
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	pointer := func(last string) string {
		var b strings.Builder
		for _, f := range stack[1:] {
			b.WriteString("/" + f.seg)
		}
		b.WriteString("/" + last)
		return b.String()
	}
	nodes := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 || nodes == 0 {
				return errSyntax
			}
			return nil
		}
		if err != nil {
			return errSyntax
		}
		if nodes > 0 && len(stack) == 0 {
			return errSyntax // trailing data after the top-level value
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			continue
		}
		if top != nil && top.obj && top.expectKey {
			key := tok.(string)
			if _, dup := top.keys[key]; dup {
				return duplicateKey(what, pointer(escapePointer(key)))
			}
			top.keys[key] = struct{}{}
			top.key = escapePointer(key)
			top.expectKey = false
			continue
		}
		nodes++
		if nodes > maxNodes {
			return tooManyNodes(what, maxNodes)
		}
		seg := ""
		if top != nil && !top.obj {
			seg = strconv.Itoa(top.next)
			top.next++
		} else if top != nil {
			seg = top.key
		}
		if d, ok := tok.(json.Delim); ok {
			if len(stack)+1 > maxDepth {
				return tooDeep(what, maxDepth)
			}
			f := &frame{obj: d == '{', seg: seg}
			if f.obj {
				f.expectKey = true
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
			continue
		}
		if top != nil && top.obj {
			top.expectKey = true
		}
	}
}

// scanValid is scanStream for data that json.Valid accepts: the same
// checks in the same order, on the bytes, with no token values made but the keys.
func scanValid(data []byte, what string, maxDepth, maxNodes int) error {
	var stack []scanFrame
	pointer := func(last string) string {
		var b strings.Builder
		for _, f := range stack[1:] {
			b.WriteString("/" + f.seg)
		}
		b.WriteString("/" + last)
		return b.String()
	}
	nodes := 0
	for i := 0; i < len(data); {
		c := data[i]
		switch c {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			i++
			continue
		}
		var top *scanFrame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expectKey {
			end := stringEnd(data, i)
			key := decodeKey(data[i:end])
			if top.hasKey(key) {
				return duplicateKey(what, pointer(escapePointer(key)))
			}
			top.addKey(key)
			top.key = key
			top.expectKey = false
			i = end
			continue
		}
		nodes++
		if nodes > maxNodes {
			return tooManyNodes(what, maxNodes)
		}
		seg := ""
		if top != nil && !top.obj {
			seg = strconv.Itoa(top.next)
			top.next++
		} else if top != nil {
			seg = escapePointer(top.key)
		}
		if c == '{' || c == '[' {
			if len(stack)+1 > maxDepth {
				return tooDeep(what, maxDepth)
			}
			stack = append(stack, scanFrame{obj: c == '{', expectKey: c == '{', seg: seg})
			i++
			continue
		}
		if c == '"' {
			i = stringEnd(data, i)
		} else {
			i = scalarEnd(data, i)
		}
		if top != nil && top.obj {
			top.expectKey = true
		}
	}
	return nil
}

// scanFrame is one open container of scanValid.
type scanFrame struct {
	obj       bool
	expectKey bool
	keys      []string            // the object's keys so far, while few
	keySet    map[string]struct{} // then all of them
	seg       string              // pointer segment of this container in its parent
	key       string              // key of the member being read (objects), unescaped
	next      int                 // next array index
}

// fewKeys is how many keys an object's frame compares one by one before it
// keeps them in a map.
const fewKeys = 16

func (f *scanFrame) hasKey(key string) bool {
	if f.keySet != nil {
		_, ok := f.keySet[key]
		return ok
	}
	return slices.Contains(f.keys, key)
}

func (f *scanFrame) addKey(key string) {
	if f.keySet == nil && len(f.keys) < fewKeys {
		f.keys = append(f.keys, key)
		return
	}
	if f.keySet == nil {
		f.keySet = make(map[string]struct{}, 2*fewKeys)
		for _, k := range f.keys {
			f.keySet[k] = struct{}{}
		}
		f.keys = nil
	}
	f.keySet[key] = struct{}{}
}

// stringEnd is the index just past the string that opens at data[i], in
// valid JSON.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// scalarEnd is the index just past the number, true, false or null that
// starts at data[i], in valid JSON.
func scalarEnd(data []byte, i int) int {
	for j := i; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(data)
}

// decodeKey is the string a quoted key of valid JSON decodes to, as
// encoding/json decodes it (escapes resolved, invalid UTF-8 replaced).
func decodeKey(quoted []byte) string {
	plain := true
	for _, b := range quoted[1 : len(quoted)-1] {
		if b == '\\' || b >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(quoted[1 : len(quoted)-1])
	}
	var key string
	json.Unmarshal(quoted, &key) // cannot fail: the document is valid
	return key
}

func duplicateKey(what, pointer string) error {
	if what == "arguments" {
		return &ArgumentsError{Pointer: pointer, Rule: "duplicate object key"}
	}
	return fmt.Errorf("duplicate object key at %s", shortPointer(pointer))
}

func tooManyNodes(what string, maxNodes int) error {
	return fmt.Errorf("%w: %s have more than %d nodes, limit %d", ErrDepthNodeBudget, what, maxNodes, maxNodes)
}

func tooDeep(what string, maxDepth int) error {
	return fmt.Errorf("%w: %s nest deeper than %d levels, limit %d", ErrDepthNodeBudget, what, maxDepth, maxDepth)
}

// schemaChecker enforces the schema-content budgets on the generic tree, walking
// only keyword positions that hold subschemas (so data in enum, const, default
// or property names is never mistaken for a keyword).
type schemaChecker struct {
	root     any
	seen     map[string]bool // ref targets already walked
	nestedID bool
	hasRef   bool
	anchors  map[string][]any // $anchor and $dynamicAnchor names to their schemas
}

var (
	singleSchemaKeys = []string{"additionalProperties", "propertyNames", "unevaluatedProperties",
		"additionalItems", "contains", "unevaluatedItems", "not", "if", "then", "else", "contentSchema"}
	arraySchemaKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchemaKeys   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

func (sc *schemaChecker) walk(node any, ptr string) error {
	obj, ok := node.(map[string]any)
	if !ok {
		return nil // boolean schemas, or data jsonschema-go will judge
	}
	if ptr != "" {
		if _, ok := obj["$id"]; ok {
			sc.nestedID = true
		}
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if name, ok := obj[k].(string); ok {
			sc.anchors[name] = append(sc.anchors[name], obj)
		}
	}
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		sc.hasRef = true
		ref, ok := raw.(string)
		if !ok {
			return fmt.Errorf("%s at %s must be a string", k, shortPointer(ptr))
		}
		if !strings.HasPrefix(ref, "#") {
			return fmt.Errorf("%w (%s at %s)", ErrExternalRef, k, shortPointer(ptr+"/"+k))
		}
		if strings.HasPrefix(ref, "#/") && !sc.seen[ref] {
			sc.seen[ref] = true
			if target, ok := resolvePointer(sc.root, ref[1:]); ok {
				if err := sc.walk(target, ref[1:]); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if arr, ok := obj[k].([]any); ok && len(arr) > MaxCompositionBranch {
			return fmt.Errorf("%w: %s at %s has %d branches, limit %d", ErrCompositionBudget, k, shortPointer(ptr), len(arr), MaxCompositionBranch)
		}
	}
	if p, ok := obj["pattern"]; ok {
		s, ok := p.(string)
		if !ok {
			return fmt.Errorf("pattern at %s must be a string", shortPointer(ptr))
		}
		if err := checkPattern(s, ptr+"/pattern"); err != nil {
			return err
		}
	}
	if pp, ok := obj["patternProperties"].(map[string]any); ok {
		for re := range pp {
			if err := checkPattern(re, ptr+"/patternProperties/"+escapePointer(re)); err != nil {
				return err
			}
		}
	}
	for _, k := range singleSchemaKeys {
		if sub, ok := obj[k]; ok {
			if err := sc.walk(sub, ptr+"/"+k); err != nil {
				return err
			}
		}
	}
	if items, ok := obj["items"]; ok {
		if arr, ok := items.([]any); ok {
			for i, sub := range arr {
				if err := sc.walk(sub, ptr+"/items/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		} else if err := sc.walk(items, ptr+"/items"); err != nil {
			return err
		}
	}
	for _, k := range arraySchemaKeys {
		arr, _ := obj[k].([]any)
		for i, sub := range arr {
			if err := sc.walk(sub, ptr+"/"+k+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	for _, k := range mapSchemaKeys {
		m, _ := obj[k].(map[string]any)
		for _, name := range sortedKeys(m) {
			if err := sc.walk(m[name], ptr+"/"+k+"/"+escapePointer(name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// cost counts, without evaluating any keyword, how many subschema
// applications validating instance can make: an upper bound of
// jsonschema-go's work. It stops at its budget or recursion limit.
type cost struct {
	c    *compiled
	left int
}

func (vc *cost) apply(schema, inst any, depth int) bool {
	vc.left--
	if vc.left < 0 || depth > maxRecursion {
		return false
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return true
	}
	in := func(sub any) bool { return vc.apply(sub, inst, depth+1) }
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		ref, ok := s[k].(string)
		if !ok {
			continue
		}
		var targets []any
		if ref == "#" || strings.HasPrefix(ref, "#/") {
			if t, ok := resolvePointer(vc.c.tree, ref[1:]); ok {
				targets = append(targets, t)
			}
		} else {
			targets = vc.c.anchors[strings.TrimPrefix(ref, "#")]
		}
		for _, t := range targets {
			if !in(t) {
				return false
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		arr, _ := s[k].([]any)
		for _, sub := range arr {
			if !in(sub) {
				return false
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if sub, ok := s[k]; ok && !in(sub) {
			return false
		}
	}
	switch x := inst.(type) {
	case []any:
		var each []any
		for _, k := range []string{"additionalItems", "contains", "unevaluatedItems"} {
			if sub, ok := s[k]; ok {
				each = append(each, sub)
			}
		}
		prefix, _ := s["prefixItems"].([]any)
		if tuple, ok := s["items"].([]any); ok {
			prefix = tuple
		} else if sub, ok := s["items"]; ok {
			each = append(each, sub)
		}
		for i, elem := range x {
			if i < len(prefix) && !vc.apply(prefix[i], elem, depth+1) {
				return false
			}
			for _, sub := range each {
				if !vc.apply(sub, elem, depth+1) {
					return false
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		patterns, _ := s["patternProperties"].(map[string]any)
		if ds, ok := s["dependentSchemas"].(map[string]any); ok {
			for _, sub := range ds {
				if !in(sub) {
					return false
				}
			}
		}
		var each []any
		for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
			if sub, ok := s[k]; ok {
				each = append(each, sub)
			}
		}
		for _, sub := range patterns {
			each = append(each, sub)
		}
		pn, hasPN := s["propertyNames"]
		for k, val := range x {
			if sub, ok := props[k]; ok && !vc.apply(sub, val, depth+1) {
				return false
			}
			for _, sub := range each {
				if !vc.apply(sub, val, depth+1) {
					return false
				}
			}
			if hasPN && !vc.apply(pn, k, depth+1) {
				return false
			}
		}
	}
	return true
}

// checkPattern enforces the pattern budget. The contract's backtrack limit
// (10,000) guards a backtracking regex engine; jsonschema-go compiles patterns
// with Go's regexp, which is RE2 and matches in time linear in the input, so
// catastrophic backtracking cannot happen and there is nothing to count. A
// pattern RE2 cannot compile (lookaround, backreferences) rejects the schema.
func checkPattern(p, ptr string) error {
	ptr = shortPointer(ptr)
	if n := utf8.RuneCountInString(p); n > MaxPatternChars {
		return fmt.Errorf("%w: pattern at %s has %d characters, limit %d", ErrPatternBudget, ptr, n, MaxPatternChars)
	}
	if _, err := regexp.Compile(p); err != nil {
		return fmt.Errorf("pattern at %s is not a valid RE2 regular expression", ptr)
	}
	return nil
}

// locator walks schema and instance together to find where a failed
// validation went wrong, or (formatsOnly) to check the formats the broker
// supports. It follows only keywords every valid instance must satisfy
// (properties, items, allOf, $ref, ...); a failed anyOf, oneOf, not, if or
// contains is remembered as the fallback answer because deciding it would
// mean validating branches again. Its work is bounded by steps.
type locator struct {
	root       any
	followRefs bool
	steps      int
	ambiguous  *ArgumentsError
}

func (l *locator) maybe(ptr, rule string) {
	if l.ambiguous == nil {
		l.ambiguous = &ArgumentsError{Pointer: ptr, Rule: rule}
	}
}

func (l *locator) find(schema, inst any, ptr string, formatsOnly bool) *ArgumentsError {
	l.steps--
	if l.steps < 0 {
		return nil
	}
	if b, ok := schema.(bool); ok {
		if !b && !formatsOnly {
			return &ArgumentsError{Pointer: ptr, Rule: "false schema: no value allowed here"}
		}
		return nil
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	fail := func(rule string) *ArgumentsError { return &ArgumentsError{Pointer: ptr, Rule: rule} }

	if ref, ok := s["$ref"].(string); ok {
		if l.followRefs && (ref == "#" || strings.HasPrefix(ref, "#/")) {
			if target, ok := resolvePointer(l.root, ref[1:]); ok {
				if ae := l.find(target, inst, ptr, formatsOnly); ae != nil {
					return ae
				}
			}
		}
		if sv, _ := asMap(l.root)["$schema"].(string); strings.Contains(sv, "draft-07") {
			return nil // draft-07 ignores keywords beside $ref
		}
	}

	if !formatsOnly {
		if ae := l.scalarRules(s, inst, fail); ae != nil {
			return ae
		}
	}
	if f, ok := s["format"].(string); ok {
		if str, ok := inst.(string); ok && !formatOK(f, str) {
			return fail("format: not a valid " + f)
		}
	}

	allOf, _ := s["allOf"].([]any)
	for _, sub := range allOf {
		if ae := l.find(sub, inst, ptr, formatsOnly); ae != nil {
			return ae
		}
	}
	if !formatsOnly {
		if arr, ok := s["anyOf"].([]any); ok {
			l.maybe(ptr, fmt.Sprintf("anyOf: matches none of the %d alternatives", len(arr)))
		}
		if arr, ok := s["oneOf"].([]any); ok {
			l.maybe(ptr, fmt.Sprintf("oneOf: must match exactly one of the %d alternatives", len(arr)))
		}
		if _, ok := s["not"]; ok {
			l.maybe(ptr, "not: matches a disallowed schema")
		}
		if _, ok := s["if"]; ok {
			l.maybe(ptr, "if/then/else: fails the conditional branch")
		}
	}

	switch x := inst.(type) {
	case []any:
		return l.arrayRules(s, x, ptr, formatsOnly, fail)
	case map[string]any:
		return l.objectRules(s, x, ptr, formatsOnly, fail)
	}
	return nil
}

func (l *locator) scalarRules(s map[string]any, inst any, fail func(string) *ArgumentsError) *ArgumentsError {
	got := typeOf(inst)
	switch t := s["type"].(type) {
	case string:
		if !typeMatches(got, t) {
			return fail(fmt.Sprintf("type: want %s, got %s", t, got))
		}
	case []any:
		okType := false
		var names []string
		for _, e := range t {
			if n, ok := e.(string); ok {
				names = append(names, n)
				okType = okType || typeMatches(got, n)
			}
		}
		if !okType {
			return fail(fmt.Sprintf("type: want one of %s, got %s", strings.Join(names, ", "), got))
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, inst) }) {
			return fail(fmt.Sprintf("enum: not one of the %d allowed values", len(enum)))
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, inst) {
		return fail("const: not the required constant")
	}
	if n, ok := inst.(float64); ok {
		if m, ok := s["multipleOf"].(float64); ok && m > 0 {
			if q := n / m; math.Abs(q-math.Round(q)) > 1e-9 {
				return fail("multipleOf: not a multiple of " + fmtNum(m))
			}
		}
		if m, ok := s["minimum"].(float64); ok && n < m {
			return fail("minimum: less than " + fmtNum(m))
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			return fail("maximum: greater than " + fmtNum(m))
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && n <= m {
			return fail("exclusiveMinimum: not greater than " + fmtNum(m))
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && n >= m {
			return fail("exclusiveMaximum: not less than " + fmtNum(m))
		}
	}
	if str, ok := inst.(string); ok {
		n := float64(utf8.RuneCountInString(str))
		if m, ok := s["minLength"].(float64); ok && n < m {
			return fail("minLength: shorter than " + fmtNum(m) + " characters")
		}
		if m, ok := s["maxLength"].(float64); ok && n > m {
			return fail("maxLength: longer than " + fmtNum(m) + " characters")
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(str) {
				return fail("pattern: does not match " + strconv.Quote(p))
			}
		}
	}
	return nil
}

func (l *locator) arrayRules(s map[string]any, arr []any, ptr string, formatsOnly bool, fail func(string) *ArgumentsError) *ArgumentsError {
	at := func(i int) string { return ptr + "/" + strconv.Itoa(i) }
	prefix, _ := s["prefixItems"].([]any)
	rest := s["items"]
	if tuple, ok := rest.([]any); ok { // draft-07 tuple form
		prefix, rest = tuple, s["additionalItems"]
	}
	for i, sub := range prefix {
		if i >= len(arr) {
			break
		}
		if ae := l.find(sub, arr[i], at(i), formatsOnly); ae != nil {
			return ae
		}
	}
	if rest != nil {
		for i := len(prefix); i < len(arr); i++ {
			if ae := l.find(rest, arr[i], at(i), formatsOnly); ae != nil {
				return ae
			}
		}
	}
	if formatsOnly {
		return nil
	}
	n := float64(len(arr))
	if m, ok := s["minItems"].(float64); ok && n < m {
		return fail("minItems: fewer than " + fmtNum(m) + " items")
	}
	if m, ok := s["maxItems"].(float64); ok && n > m {
		return fail("maxItems: more than " + fmtNum(m) + " items")
	}
	if u, _ := s["uniqueItems"].(bool); u {
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if jsonEqual(arr[i], arr[j]) {
					return fail(fmt.Sprintf("uniqueItems: items %d and %d are equal", i, j))
				}
			}
		}
	}
	if _, ok := s["contains"]; ok {
		l.maybe(ptr, "contains: no item matches the required schema")
	}
	return nil
}

func (l *locator) objectRules(s map[string]any, obj map[string]any, ptr string, formatsOnly bool, fail func(string) *ArgumentsError) *ArgumentsError {
	at := func(k string) string { return ptr + "/" + escapePointer(k) }
	if !formatsOnly {
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, present := obj[name]; !present {
						return fail("required: missing property " + strconv.Quote(name))
					}
				}
			}
		}
		if dr, ok := s["dependentRequired"].(map[string]any); ok {
			for _, k := range sortedKeys(dr) {
				if _, present := obj[k]; !present {
					continue
				}
				deps, _ := dr[k].([]any)
				for _, d := range deps {
					if name, ok := d.(string); ok {
						if _, present := obj[name]; !present {
							return fail(fmt.Sprintf("dependentRequired: property %q requires %q", k, name))
						}
					}
				}
			}
		}
		n := float64(len(obj))
		if m, ok := s["minProperties"].(float64); ok && n < m {
			return fail("minProperties: fewer than " + fmtNum(m) + " properties")
		}
		if m, ok := s["maxProperties"].(float64); ok && n > m {
			return fail("maxProperties: more than " + fmtNum(m) + " properties")
		}
	}
	props, _ := s["properties"].(map[string]any)
	patterns, _ := s["patternProperties"].(map[string]any)
	var res []*regexp.Regexp
	var resSchemas []any
	for _, p := range sortedKeys(patterns) {
		if re, err := regexp.Compile(p); err == nil {
			res = append(res, re)
			resSchemas = append(resSchemas, patterns[p])
		}
	}
	additional, hasAdditional := s["additionalProperties"]
	for _, k := range sortedKeys(obj) {
		evaluated := false
		if sub, ok := props[k]; ok {
			evaluated = true
			if ae := l.find(sub, obj[k], at(k), formatsOnly); ae != nil {
				return ae
			}
		}
		for i, re := range res {
			if re.MatchString(k) {
				evaluated = true
				if ae := l.find(resSchemas[i], obj[k], at(k), formatsOnly); ae != nil {
					return ae
				}
			}
		}
		if evaluated || !hasAdditional {
			continue
		}
		if b, ok := additional.(bool); ok && !b {
			if !formatsOnly {
				return &ArgumentsError{Pointer: at(k), Rule: "additionalProperties: property not allowed"}
			}
			continue
		}
		if ae := l.find(additional, obj[k], at(k), formatsOnly); ae != nil {
			return ae
		}
	}
	if pn, ok := s["propertyNames"]; ok && !formatsOnly {
		for _, k := range sortedKeys(obj) {
			if ae := l.find(pn, k, at(k), false); ae != nil {
				ae.Rule = "propertyNames: " + ae.Rule
				return ae
			}
		}
	}
	if ds, ok := s["dependentSchemas"].(map[string]any); ok {
		for _, k := range sortedKeys(ds) {
			if _, present := obj[k]; present {
				if ae := l.find(ds[k], obj, ptr, formatsOnly); ae != nil {
					return ae
				}
			}
		}
	}
	return nil
}

// formatOK checks the formats the broker supports; unknown formats pass.
func formatOK(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	case "uuid":
		return uuidRE.MatchString(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	}
	return true
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// failedKeyword names the keyword jsonschema-go reported, without any of the
// values its message carries: only the word before the first colon of the
// innermost "validating <schema>: " segment, and only if it is a keyword.
func failedKeyword(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	word, _, _ := strings.Cut(msg, ":")
	if strings.HasPrefix(msg, "unexpected additional properties") {
		word = "additionalProperties"
	}
	if word != "" && !strings.ContainsAny(word, " \"'\n") && len(word) < 40 {
		return word + ": violated"
	}
	return "schema: violated"
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeMatches(got, want string) bool {
	return got == want || got == "integer" && want == "number"
}

func jsonEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func isEmptyObject(data []byte) bool {
	if data[0] != '{' {
		return false
	}
	return len(bytes.TrimSpace(data[1:len(data)-1])) == 0 && data[len(data)-1] == '}'
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if first == '-' || first >= '0' && first <= '9' {
		return "a number"
	}
	return "invalid JSON"
}

// shortPointer bounds a pointer for an error message; keys can be long.
func shortPointer(p string) string {
	if len(p) <= 128 {
		return p
	}
	return strings.ToValidUTF8(p[:128], "") + "…"
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolvePointer follows an RFC 6901 pointer (already without its leading
// "#") through a generic JSON tree.
func resolvePointer(root any, ptr string) (any, bool) {
	if ptr == "" {
		return root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	if u, err := url.PathUnescape(ptr); err == nil {
		ptr = u
	}
	cur := root
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// This file owns the cache of compiled schemas: the key a Schema computes once
// and keeps, and the bounded, oldest-first cache a Validator holds.

package argcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"sync"
)

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

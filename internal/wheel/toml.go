package wheel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a small TOML reader, enough for pyproject.toml: tables, arrays of
// tables, dotted and quoted keys, the four string forms, arrays and inline tables.
// Numbers, booleans and dates are kept as their source text (scalar), which is all
// wheel metadata needs; a date with a space in it is a syntax error here, never a
// silent misreading. The module keeps no TOML dependency for one file.

// tomlTable is a TOML table that remembers the order of its keys.
type tomlTable struct {
	keys   []string
	vals   map[string]any // string, scalar, []any, *tomlTable, or tomlArrayOfTables
	header bool           // defined by a [header] (a second one is an error)
	inline bool           // an inline table: closed to later additions
}

// scalar is a TOML number, boolean or date, as written.
type scalar string

// tomlArrayOfTables is the value of a key defined by [[headers]].
type tomlArrayOfTables struct{ tables []*tomlTable }

func newTable() *tomlTable { return &tomlTable{vals: map[string]any{}} }

func (t *tomlTable) set(key string, v any) error {
	if _, dup := t.vals[key]; dup {
		return fmt.Errorf("key %q defined twice", key)
	}
	t.keys = append(t.keys, key)
	t.vals[key] = v
	return nil
}

// sub returns the table at key, creating it if absent.
func (t *tomlTable) sub(key string) (*tomlTable, error) {
	switch v := t.vals[key].(type) {
	case nil:
		s := newTable()
		_ = t.set(key, s)
		return s, nil
	case *tomlTable:
		if v.inline {
			return nil, fmt.Errorf("inline table %q cannot be extended", key)
		}
		return v, nil
	case *tomlArrayOfTables:
		return v.tables[len(v.tables)-1], nil
	default:
		return nil, fmt.Errorf("key %q is not a table", key)
	}
}

type tomlParser struct {
	src  string
	pos  int
	line int
}

// parseTOML reads a TOML document.
func parseTOML(src string) (*tomlTable, error) {
	if !utf8.ValidString(src) {
		return nil, errors.New("not UTF-8")
	}
	p := &tomlParser{src: strings.ReplaceAll(src, "\r\n", "\n"), line: 1}
	root := newTable()
	cur := root
	for {
		p.skipBlank(true)
		if p.eof() {
			return root, nil
		}
		var err error
		if p.peek() == '[' {
			cur, err = p.header(root)
		} else {
			err = p.keyValue(cur)
		}
		if err == nil {
			err = p.endOfLine()
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", p.line, err)
		}
	}
}

func (p *tomlParser) eof() bool  { return p.pos >= len(p.src) }
func (p *tomlParser) peek() byte { return p.src[p.pos] }

func (p *tomlParser) next() byte {
	c := p.src[p.pos]
	p.pos++
	if c == '\n' {
		p.line++
	}
	return c
}

// skipBlank skips spaces, tabs and comments, and newlines too if newlines is set.
func (p *tomlParser) skipBlank(newlines bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || (newlines && c == '\n'):
			p.next()
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *tomlParser) endOfLine() error {
	p.skipBlank(false)
	if p.eof() {
		return nil
	}
	if c := p.next(); c != '\n' {
		return fmt.Errorf("unexpected %q after a value", c)
	}
	return nil
}

func (p *tomlParser) expect(c byte) error {
	if p.eof() {
		return fmt.Errorf("expected %q, found the end of the file", c)
	}
	if got := p.next(); got != c {
		return fmt.Errorf("expected %q, found %q", c, got)
	}
	return nil
}

// header reads [a.b] or [[a.b]] and returns the table that later keys go into.
func (p *tomlParser) header(root *tomlTable) (*tomlTable, error) {
	p.next()
	array := !p.eof() && p.peek() == '['
	if array {
		p.next()
	}
	keys, err := p.key()
	if err != nil {
		return nil, err
	}
	if err := p.expect(']'); err != nil {
		return nil, err
	}
	if array {
		if err := p.expect(']'); err != nil {
			return nil, err
		}
	}
	t := root
	for _, k := range keys[:len(keys)-1] {
		if t, err = t.sub(k); err != nil {
			return nil, err
		}
	}
	last := keys[len(keys)-1]
	if array {
		aot, ok := t.vals[last].(*tomlArrayOfTables)
		if !ok {
			aot = &tomlArrayOfTables{}
			if err := t.set(last, aot); err != nil {
				return nil, err
			}
		}
		nt := newTable()
		aot.tables = append(aot.tables, nt)
		return nt, nil
	}
	nt, err := t.sub(last)
	if err != nil {
		return nil, err
	}
	if nt.header {
		return nil, fmt.Errorf("table [%s] defined twice", strings.Join(keys, "."))
	}
	nt.header = true
	return nt, nil
}

// keyValue reads key = value into t.
func (p *tomlParser) keyValue(t *tomlTable) error {
	keys, err := p.key()
	if err != nil {
		return err
	}
	if err := p.expect('='); err != nil {
		return err
	}
	p.skipBlank(false)
	v, err := p.value()
	if err != nil {
		return err
	}
	for _, k := range keys[:len(keys)-1] {
		if t, err = t.sub(k); err != nil {
			return err
		}
	}
	return t.set(keys[len(keys)-1], v)
}

// key reads a dotted key and the blanks around it.
func (p *tomlParser) key() ([]string, error) {
	var keys []string
	for {
		p.skipBlank(false)
		if p.eof() {
			return nil, errors.New("expected a key, found the end of the file")
		}
		var k string
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			k = s
		case isBare(c):
			start := p.pos
			for !p.eof() && isBare(p.peek()) {
				p.pos++
			}
			k = p.src[start:p.pos]
		default:
			return nil, fmt.Errorf("expected a key, found %q", c)
		}
		keys = append(keys, k)
		p.skipBlank(false)
		if p.eof() || p.peek() != '.' {
			return keys, nil
		}
		p.next()
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, errors.New("expected a value, found the end of the file")
	}
	switch c := p.peek(); c {
	case '"', '\'':
		return p.str()
	case '[':
		return p.array()
	case '{':
		return p.inlineTable()
	default:
		start := p.pos
		for !p.eof() && strings.IndexByte(" \t\n#,]}", p.peek()) < 0 {
			p.pos++
		}
		s := p.src[start:p.pos]
		if s == "" {
			return nil, fmt.Errorf("expected a value, found %q", c)
		}
		for i := 0; i < len(s); i++ {
			if !isBare(s[i]) && strings.IndexByte(".:+", s[i]) < 0 {
				return nil, fmt.Errorf("unsupported value %q", s)
			}
		}
		return scalar(s), nil
	}
}

func (p *tomlParser) array() ([]any, error) {
	p.next()
	out := []any{}
	for {
		p.skipBlank(true)
		if p.eof() {
			return nil, errors.New("unterminated array")
		}
		if p.peek() == ']' {
			p.next()
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipBlank(true)
		if p.eof() {
			return nil, errors.New("unterminated array")
		}
		switch c := p.next(); c {
		case ',':
		case ']':
			return out, nil
		default:
			return nil, fmt.Errorf("expected ',' or ']' in an array, found %q", c)
		}
	}
}

func (p *tomlParser) inlineTable() (*tomlTable, error) {
	p.next()
	t := newTable()
	t.inline = true
	p.skipBlank(false)
	if !p.eof() && p.peek() == '}' {
		p.next()
		return t, nil
	}
	for {
		if err := p.keyValue(t); err != nil {
			return nil, err
		}
		p.skipBlank(false)
		if p.eof() {
			return nil, errors.New("unterminated inline table")
		}
		switch c := p.next(); c {
		case ',':
		case '}':
			return t, nil
		default:
			return nil, fmt.Errorf("expected ',' or '}' in an inline table, found %q", c)
		}
	}
}

// str reads any of the four string forms.
func (p *tomlParser) str() (string, error) {
	q := p.next()
	multi := strings.HasPrefix(p.src[p.pos:], string([]byte{q, q}))
	if multi {
		p.pos += 2
		if !p.eof() && p.peek() == '\n' { // a newline right after the opening quotes is trimmed
			p.next()
		}
	}
	var b strings.Builder
	for {
		if p.eof() {
			return "", errors.New("unterminated string")
		}
		c := p.next()
		switch {
		case c == q && !multi:
			return b.String(), nil
		case c == q && strings.HasPrefix(p.src[p.pos:], string([]byte{q, q})):
			p.pos += 2
			// Up to two more quotes right before the closing three belong to the string.
			for i := 0; i < 2 && !p.eof() && p.peek() == q; i++ {
				b.WriteByte(q)
				p.pos++
			}
			return b.String(), nil
		case c == '\n' && !multi:
			return "", errors.New("newline in a single-line string")
		case c == '\\' && q == '"':
			if err := p.escape(&b, multi); err != nil {
				return "", err
			}
		case c < 0x20 && c != '\t' && c != '\n' || c == 0x7f:
			return "", fmt.Errorf("control character %#x in a string", c)
		default:
			b.WriteByte(c)
		}
	}
}

func (p *tomlParser) escape(b *strings.Builder, multi bool) error {
	if p.eof() {
		return errors.New("unterminated string")
	}
	c := p.next()
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case '"', '\\':
		b.WriteByte(c)
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if p.pos+n > len(p.src) {
			return errors.New("short unicode escape")
		}
		r, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(r)) {
			return fmt.Errorf("bad unicode escape \\%c%s", c, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		b.WriteRune(rune(r))
	case ' ', '\t', '\n':
		// A line-ending backslash in a multi-line string eats the following blanks.
		if !multi {
			return fmt.Errorf("bad escape \\%q", c)
		}
		rest := p.pos
		for rest < len(p.src) && (p.src[rest] == ' ' || p.src[rest] == '\t') {
			rest++
		}
		if c != '\n' && (rest >= len(p.src) || p.src[rest] != '\n') {
			return errors.New("a backslash in a multi-line string must end its line")
		}
		for !p.eof() && strings.IndexByte(" \t\n", p.peek()) >= 0 {
			p.next()
		}
	default:
		return fmt.Errorf("bad escape \\%c", c)
	}
	return nil
}

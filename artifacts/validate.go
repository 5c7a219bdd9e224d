package artifacts

import "unicode/utf8"

// checker validates an artifact's bytes for its format as they stream past, in
// chunks cut anywhere, in constant memory.
type checker struct {
	utf8 *utf8Stream // nil for binary
	json *jsonStream // nil unless json
}

func newChecker(f Format) checker {
	var c checker
	if f == FormatText || f == FormatJSON {
		c.utf8 = &utf8Stream{}
	}
	if f == FormatJSON {
		c.json = &jsonStream{}
	}
	return c
}

// write feeds p and reports the first failure seen so far.
func (c checker) write(p []byte) error {
	if c.utf8 != nil && !c.utf8.write(p) {
		return ErrNotUTF8
	}
	if c.json != nil && !c.json.write(p) {
		return ErrInvalidJSON
	}
	return nil
}

// finish reports whether the whole input was valid.
func (c checker) finish() error {
	if c.utf8 != nil && !c.utf8.finish() {
		return ErrNotUTF8
	}
	if c.json != nil && !c.json.finish() {
		return ErrInvalidJSON
	}
	return nil
}

// utf8Stream validates UTF-8 fed in arbitrary chunks: a rune cut by a chunk boundary
// is carried to the next chunk.
type utf8Stream struct {
	pend [utf8.UTFMax]byte
	n    int
	bad  bool
}

func (u *utf8Stream) write(p []byte) bool {
	if u.bad {
		return false
	}
	if u.n > 0 {
		for len(p) > 0 && !utf8.FullRune(u.pend[:u.n]) {
			u.pend[u.n] = p[0]
			u.n++
			p = p[1:]
		}
		if !utf8.FullRune(u.pend[:u.n]) {
			return true // p ran out; still incomplete
		}
		r, size := utf8.DecodeRune(u.pend[:u.n])
		if (r == utf8.RuneError && size <= 1) || size != u.n {
			u.bad = true
			return false
		}
		u.n = 0
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		u.bad = true
		return false
	}
	u.n = copy(u.pend[:], p[cut:])
	return true
}

func (u *utf8Stream) finish() bool { return !u.bad && u.n == 0 }

// jsonStream checks RFC 8259 syntax (one value, optional surrounding whitespace) fed
// in arbitrary chunks, with nesting bounded by MaxJSONDepth. It does not check UTF-8:
// bytes from 0x80 up are accepted inside strings, and utf8Stream checks the rest.
type jsonStream struct {
	state  jState
	stack  []bool // open containers; true is an object
	isKey  bool   // the string being read is an object key
	lit    string // the literal being matched
	litPos int
	hexes  int // hex digits still due in a \u escape
	bad    bool
}

type jState uint8

const (
	jValue    jState = iota // a value is due
	jArrFirst               // after '[': a value or ']'
	jObjFirst               // after '{': a key or '}'
	jObjKey                 // after ',' in an object: a key
	jColon                  // after a key
	jAfter                  // after a value inside a container
	jEnd                    // after the top-level value
	jStr
	jStrEsc
	jStrHex
	jLit
	jNumMinus
	jNumZero
	jNumInt
	jNumDot
	jNumFrac
	jNumE
	jNumESign
	jNumExp
)

func (j *jsonStream) write(p []byte) bool {
	if j.bad {
		return false
	}
	for i := 0; i < len(p); i++ {
		if j.state == jStr {
			for i < len(p) && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20 {
				i++
			}
			if i == len(p) {
				break
			}
		}
		if !j.step(p[i]) {
			j.bad = true
			return false
		}
	}
	return true
}

func (j *jsonStream) finish() bool {
	if j.bad {
		return false
	}
	switch j.state {
	case jEnd:
		return true
	case jNumZero, jNumInt, jNumFrac, jNumExp:
		return len(j.stack) == 0
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (j *jsonStream) step(c byte) bool {
	switch j.state {
	case jValue:
		if isSpace(c) {
			return true
		}
		return j.begin(c)
	case jArrFirst:
		if isSpace(c) {
			return true
		}
		if c == ']' {
			j.pop()
			return true
		}
		return j.begin(c)
	case jObjFirst, jObjKey:
		if isSpace(c) {
			return true
		}
		if c == '}' && j.state == jObjFirst {
			j.pop()
			return true
		}
		if c == '"' {
			j.isKey = true
			j.state = jStr
			return true
		}
		return false
	case jColon:
		if isSpace(c) {
			return true
		}
		if c == ':' {
			j.state = jValue
			return true
		}
		return false
	case jAfter:
		if isSpace(c) {
			return true
		}
		obj := j.stack[len(j.stack)-1]
		switch {
		case c == ',' && obj:
			j.state = jObjKey
		case c == ',':
			j.state = jValue
		case c == '}' && obj, c == ']' && !obj:
			j.pop()
		default:
			return false
		}
		return true
	case jEnd:
		return isSpace(c)
	case jStr:
		switch {
		case c == '"':
			if j.isKey {
				j.isKey = false
				j.state = jColon
			} else {
				j.endValue()
			}
		case c == '\\':
			j.state = jStrEsc
		case c < 0x20:
			return false
		}
		return true
	case jStrEsc:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j.state = jStr
		case 'u':
			j.hexes = 4
			j.state = jStrHex
		default:
			return false
		}
		return true
	case jStrHex:
		if !isHex(c) {
			return false
		}
		if j.hexes--; j.hexes == 0 {
			j.state = jStr
		}
		return true
	case jLit:
		if c != j.lit[j.litPos] {
			return false
		}
		if j.litPos++; j.litPos == len(j.lit) {
			j.endValue()
		}
		return true
	case jNumMinus:
		switch {
		case c == '0':
			j.state = jNumZero
		case isDigit(c):
			j.state = jNumInt
		default:
			return false
		}
		return true
	case jNumZero, jNumInt:
		switch {
		case isDigit(c) && j.state == jNumInt:
		case c == '.':
			j.state = jNumDot
		case c == 'e' || c == 'E':
			j.state = jNumE
		default:
			j.endValue()
			return j.step(c)
		}
		return true
	case jNumDot:
		if !isDigit(c) {
			return false
		}
		j.state = jNumFrac
		return true
	case jNumFrac:
		switch {
		case isDigit(c):
		case c == 'e' || c == 'E':
			j.state = jNumE
		default:
			j.endValue()
			return j.step(c)
		}
		return true
	case jNumE:
		switch {
		case c == '+' || c == '-':
			j.state = jNumESign
		case isDigit(c):
			j.state = jNumExp
		default:
			return false
		}
		return true
	case jNumESign:
		if !isDigit(c) {
			return false
		}
		j.state = jNumExp
		return true
	case jNumExp:
		if isDigit(c) {
			return true
		}
		j.endValue()
		return j.step(c)
	}
	return false
}

// begin starts the value whose first byte is c.
func (j *jsonStream) begin(c byte) bool {
	switch {
	case c == '{' || c == '[':
		if len(j.stack) >= MaxJSONDepth {
			return false
		}
		j.stack = append(j.stack, c == '{')
		if c == '{' {
			j.state = jObjFirst
		} else {
			j.state = jArrFirst
		}
	case c == '"':
		j.isKey = false
		j.state = jStr
	case c == '-':
		j.state = jNumMinus
	case c == '0':
		j.state = jNumZero
	case isDigit(c):
		j.state = jNumInt
	case c == 't':
		j.lit, j.litPos, j.state = "true", 1, jLit
	case c == 'f':
		j.lit, j.litPos, j.state = "false", 1, jLit
	case c == 'n':
		j.lit, j.litPos, j.state = "null", 1, jLit
	default:
		return false
	}
	return true
}

func (j *jsonStream) pop() {
	j.stack = j.stack[:len(j.stack)-1]
	j.endValue()
}

func (j *jsonStream) endValue() {
	if len(j.stack) == 0 {
		j.state = jEnd
	} else {
		j.state = jAfter
	}
}

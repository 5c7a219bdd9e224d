// The mcpc client's assertions: paths into a reply, comparisons, and the stable form
// golden replies are compared in.

package mcpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// resolved is one value a path reached.
type resolved struct {
	v     any
	ok    bool
	where string
}

func pathSegments(path string) []string {
	var segs []string
	if strings.HasPrefix(path, "/") {
		for _, s := range strings.Split(path[1:], "/") {
			s = strings.ReplaceAll(s, "~1", "/")
			segs = append(segs, strings.ReplaceAll(s, "~0", "~"))
		}
		return segs
	}
	segs = strings.Split(path, ".")
	switch segs[0] {
	case "sc":
		segs = append([]string{"result", "structuredContent"}, segs[1:]...)
	case "text":
		segs = append([]string{"result", "content", "0", "text"}, segs[1:]...)
	}
	return segs
}

func resolvePath(root any, path string) ([]resolved, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	segs := pathSegments(path)
	if segs[0] == "footer" {
		segs = append([]string{"result", "content", lastTextBlock(root), "text"}, segs[1:]...)
	}
	return walkPath(root, segs, ""), nil
}

// lastTextBlock is the index of the last text block of a reply's result, "-" when it
// has none (which resolves to nothing).
func lastTextBlock(root any) string {
	reply, _ := root.(map[string]any)
	result, _ := reply["result"].(map[string]any)
	content, _ := result["content"].([]any)
	for i := len(content) - 1; i >= 0; i-- {
		if block, _ := content[i].(map[string]any); block["type"] == "text" {
			return strconv.Itoa(i)
		}
	}
	return "-"
}

func walkPath(cur any, segs []string, where string) []resolved {
	if len(segs) == 0 {
		return []resolved{{cur, true, where}}
	}
	s, rest := segs[0], segs[1:]
	here := where + "." + s
	switch s {
	case "#":
		var n int
		switch x := cur.(type) {
		case string:
			n = len(x)
		case []any:
			n = len(x)
		case map[string]any:
			n = len(x)
		default:
			return []resolved{{nil, false, here}}
		}
		return walkPath(float64(n), rest, here)
	case "*":
		var out []resolved
		switch x := cur.(type) {
		case []any:
			for i, e := range x {
				out = append(out, walkPath(e, rest, fmt.Sprintf("%s.%d", where, i))...)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, walkPath(x[k], rest, where+"."+k)...)
			}
		}
		if len(out) == 0 {
			return []resolved{{nil, false, here + " (no elements)"}}
		}
		return out
	}
	switch x := cur.(type) {
	case map[string]any:
		if v, ok := x[s]; ok {
			return walkPath(v, rest, here)
		}
	case []any:
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(x) {
			return walkPath(x[i], rest, here)
		}
	}
	return []resolved{{nil, false, here}}
}

// checkAssertion checks "PATH OP [VALUE]" against msg.
func checkAssertion(msg map[string]any, assertion string) error {
	w, arg := splitWords(assertion, 2)
	if len(w) != 2 {
		return fmt.Errorf("assertion %q: want PATH OP [VALUE]", assertion)
	}
	path, op := w[0], w[1]
	rs, err := resolvePath(msg, path)
	if err != nil {
		return err
	}
	var check func(r resolved) error
	switch op {
	case "exists", "absent":
		check = func(r resolved) error {
			if r.ok != (op == "exists") {
				if r.ok {
					return fmt.Errorf("%s is present (%s), want absent", path, describe(r.v))
				}
				return fmt.Errorf("%s is absent", path)
			}
			return nil
		}
	case "==", "!=":
		var want any
		if err := json.Unmarshal([]byte(arg), &want); err != nil {
			return fmt.Errorf("expect %s: value %q is not JSON: %v", op, arg, err)
		}
		check = func(r resolved) error {
			if !r.ok {
				if op == "!=" {
					return nil
				}
				return fmt.Errorf("%s is absent, want %s %s", path, op, arg)
			}
			if reflect.DeepEqual(r.v, want) != (op == "==") {
				return fmt.Errorf("%s is %s, want %s %s", r.where[1:], describe(r.v), op, arg)
			}
			return nil
		}
	case "~", "!~":
		re, err := regexp.Compile(arg)
		if err != nil {
			return err
		}
		check = func(r resolved) error {
			if !r.ok {
				return fmt.Errorf("%s is absent, want %s %s", path, op, arg)
			}
			s, isString := r.v.(string)
			if !isString {
				s = compactJSON(r.v)
			}
			if re.MatchString(s) != (op == "~") {
				return fmt.Errorf("%s is %s, want %s /%s/", r.where[1:], describe(r.v), op, arg)
			}
			return nil
		}
	case "contains":
		var want string
		if err := json.Unmarshal([]byte(arg), &want); err != nil {
			return fmt.Errorf("expect contains: value must be a JSON string: %v", err)
		}
		check = func(r resolved) error {
			s, isString := r.v.(string)
			if !r.ok || !isString {
				return fmt.Errorf("%s is %s, want a string containing %s", path, describeResolved(r), arg)
			}
			if !strings.Contains(s, want) {
				return fmt.Errorf("%s is %s, want it to contain %s", r.where[1:], describe(r.v), arg)
			}
			return nil
		}
	case "<", "<=", ">", ">=":
		want, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return fmt.Errorf("expect %s: %q is not a number", op, arg)
		}
		check = func(r resolved) error {
			got, isNum := r.v.(float64)
			if !r.ok || !isNum {
				return fmt.Errorf("%s is %s, want a number %s %s", path, describeResolved(r), op, arg)
			}
			if !compareNumbers(got, op, want) {
				return fmt.Errorf("%s is %v, want %s %s", r.where[1:], got, op, arg)
			}
			return nil
		}
	default:
		return fmt.Errorf("unknown operator %q", op)
	}
	for _, r := range rs {
		if err := check(r); err != nil {
			return err
		}
	}
	return nil
}

func compareNumbers(got float64, op string, want float64) bool {
	switch op {
	case "<":
		return got < want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case ">=":
		return got >= want
	case "==":
		return got == want
	case "!=":
		return got != want
	}
	return false
}

func describeResolved(r resolved) string {
	if !r.ok {
		return "absent"
	}
	return describe(r.v)
}

func describe(v any) string {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return abbrev(compactJSON(v), 400)
}

func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}

// volatileKeys are the keys whose values change from run to run or from one
// interpreter to another; save-reply replaces their values by "<key>".
var volatileKeys = map[string]bool{"pid": true, "elapsed_ms": true, "version": true, "python_version": true, "major": true, "minor": true, "path_head": true, "landlock_abi": true}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

const structuredText = "<structuredContent as JSON>"

// goldenPath is a path that stands for itself in a golden reply.
type goldenPath struct{ path, placeholder string }

// goldenPaths are $PYTHON and $WORK and their real paths, longest first, so that a
// path inside another is replaced after it.
func goldenPaths() []goldenPath {
	var paths []goldenPath
	for _, name := range []string{"PYTHON", "WORK"} {
		p := os.Getenv(name)
		if p == "" {
			continue
		}
		paths = append(paths, goldenPath{p, "$" + name})
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			paths = append(paths, goldenPath{real, "$" + name})
		}
	}
	sort.SliceStable(paths, func(i, j int) bool { return len(paths[i].path) > len(paths[j].path) })
	return paths
}

// stableReply is raw in the stable form save-reply writes (see the header).
func stableReply(raw []byte, paths []goldenPath) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the reply is not JSON: %v", err)
	}
	if result, ok := v.(map[string]any)["result"].(map[string]any); ok {
		if content, ok := result["content"].([]any); ok && len(content) > 0 {
			if block, ok := content[0].(map[string]any); ok {
				if text, ok := block["text"].(string); ok && jsonEqual(text, result["structuredContent"]) {
					block["text"] = structuredText
				}
			}
		}
	}
	n := &normalizer{paths: paths, uuids: map[string]string{}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(n.value(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// jsonEqual reports whether text is JSON for the value v (decoded with UseNumber).
func jsonEqual(text string, v any) bool {
	if v == nil {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var t any
	return dec.Decode(&t) == nil && !dec.More() && reflect.DeepEqual(t, v)
}

type normalizer struct {
	paths []goldenPath
	uuids map[string]string
}

func (n *normalizer) value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			if volatileKeys[k] && x[k] != nil {
				out[k] = "<" + k + ">"
				continue
			}
			out[k] = n.value(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value(e)
		}
		return out
	case string:
		for _, p := range n.paths {
			x = strings.ReplaceAll(x, p.path, p.placeholder)
		}
		return uuidRE.ReplaceAllStringFunc(x, func(id string) string {
			if _, ok := n.uuids[id]; !ok {
				n.uuids[id] = fmt.Sprintf("<uuid-%d>", len(n.uuids)+1)
			}
			return n.uuids[id]
		})
	}
	return v
}

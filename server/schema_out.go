package server

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

// A tool's output schema: the schema of the one Go type its value has, or a oneOf
// of the shapes it takes (schema_types.go says how each is made).

// variant is one shape of a tool's value: the Go type its JSON is written from.
type variant struct {
	t reflect.Type
	// excludes are properties the shape never has, which tell it from another shape
	// that could otherwise match the same value (a failed result has an error too).
	excludes []string
}

// shape is the variant of Go type T.
func shape[T any](excludes ...string) variant {
	return variant{t: reflect.TypeFor[T](), excludes: excludes}
}

// outputSchema is the schema of a value of the shapes vs.
func outputSchema(vs []variant) (*jsonschema.Schema, error) {
	branches := make([]*jsonschema.Schema, len(vs))
	for i, v := range vs {
		s, err := schemaOf(v.t, true)
		if err != nil {
			return nil, err
		}
		if len(v.excludes) > 0 {
			s = s.CloneSchemas()
			s.Not = &jsonschema.Schema{Required: v.excludes}
		}
		branches[i] = s
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	return &jsonschema.Schema{Type: "object", OneOf: branches}, nil
}

// refinements say what the tags of types in other packages would: the enums and
// descriptions of their fields, and the artifact references a result holds as JSON.
// (Set by init: a refinement builds schemas too.)
var refinements map[reflect.Type]func(*jsonschema.Schema)

func init() { refinements = typeRefinements() }

func typeRefinements() map[reflect.Type]func(*jsonschema.Schema) {
	return map[reflect.Type]func(*jsonschema.Schema){
		reflect.TypeFor[repl.Result](): func(s *jsonschema.Schema) {
			property(s, "value").Description = "the trailing value as JSON, when it is exact JSON"
			reason := property(s, "state_reset_reason")
			reason.Enum = []any{repl.ResetReset, repl.ResetLost, repl.ResetRestart, repl.ResetReleased}
			reason.Description = "why the run's worker is new, when it replaced one: a reset, lost variables " +
				"(a crash, a kill, the RSS budget), an earlier server lifetime's session, an idle release"
			property(s, "server_started").Description = "when this server started, with state_reset_reason restart"
			property(s, "execution_mode").Enum = []any{"persistent", "fresh"}
			// Added by the presentation to a structured result whose text it cut (§3.4).
			s.Properties["text_truncated"] = &jsonschema.Schema{Type: "boolean"}
		},
		reflect.TypeFor[repl.State]():     enum(repl.StatePreserved, repl.StateCleared),
		reflect.TypeFor[repl.RunStatus](): enum(repl.RunStarting, repl.RunRunning),
		reflect.TypeFor[repl.StartInfo](): func(s *jsonschema.Schema) {
			property(s, "status").Enum = []any{repl.RunStarting}
		},
		reflect.TypeFor[repl.Ready](): func(s *jsonschema.Schema) {
			property(s, "path_head").Description = "the directory first on the worker's PATH: the interpreter's bin directory"
			property(s, "virtual_env").Description = "VIRTUAL_ENV in the worker's environment, when its interpreter is a venv's"
		},
		reflect.TypeFor[repl.SpareState](): described("the pre-started worker waiting for this session's interpreter and project (off with --no-spare-worker)"),
		reflect.TypeFor[repl.SnapshotState](): func(s *jsonschema.Schema) {
			s.Description = "the session's snapshot of its variables (off with --no-snapshot), and the one python_session_restore would load"
			property(s, "status").Enum = []any{"off", "none", "saving", "saved", "released", "failed"}
		},
		reflect.TypeFor[repl.Restorable](): described("a snapshot python_session_restore can load"),
		reflect.TypeFor[repl.SandboxHealth](): func(s *jsonschema.Schema) {
			s.Description = "the OS sandbox cells run in (--sandbox)"
			setNullable(property(s, "writable_roots"), true) // null under full access
		},
		reflect.TypeFor[repl.SandboxNote](): described("what the run's sandbox has to say: a new policy, what is not enforced, a refusal"),
		reflect.TypeFor[artifacts.Format](): enum(artifacts.FormatJSON, artifacts.FormatText, artifacts.FormatBinary),
	}
}

// property is s's property name. A refinement of a field its type no longer has is a
// programming error, reported when the server is built.
func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p := s.Properties[name]
	if p == nil {
		panic(fmt.Sprintf("server: a schema refinement names %q, which is no property of its type", name))
	}
	return p
}

func enum[T ~string](values ...T) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, v := range values {
			s.Enum = append(s.Enum, string(v))
		}
	}
}

func described(desc string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Description = desc }
}

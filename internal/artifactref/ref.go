package artifactref

// Ref is the reference object handed to clients (docs/contract.md §3.9). A result
// holds the worker's references decoded into it once, where the worker's frame
// enters the server; encoded again, one is the same JSON, member for member.
type Ref struct {
	ID       string `json:"id"`
	Size     int64  `json:"size"`
	Format   Format `json:"format"`
	SHA256   string `json:"sha256"`
	Lifetime string `json:"lifetime"`
	Eviction string `json:"eviction"`
}

// Format says what an artifact's bytes are: JSON and text must be UTF-8, JSON must
// also parse.
type Format string

const (
	FormatJSON   Format = "json"
	FormatText   Format = "text"
	FormatBinary Format = "binary"
)

// Valid reports whether f is one of the formats.
func (f Format) Valid() bool {
	return f == FormatJSON || f == FormatText || f == FormatBinary
}

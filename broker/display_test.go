package broker

import "testing"

// TestWrittenCommand: a stdio command shows in messages as the registry wrote it,
// ${VAR} by name, quoted only where a space, a quote or a control character would
// blur where it ends.
func TestWrittenCommand(t *testing.T) {
	for written, want := range map[string]string{
		"${TOOLS}/srv":      "${TOOLS}/srv",
		"npx":               "npx",
		"/opt/my tools/srv": `"/opt/my tools/srv"`,
		`it's`:              `"it's"`,
		"a\x1b[31mred":      `"a\x1b[31mred"`,
		"${HOME}/a\"b":      `"${HOME}/a\"b"`,
		"":                  `""`,
	} {
		if got := writtenCommand(written); got != want {
			t.Errorf("writtenCommand(%q) = %s, want %s", written, got, want)
		}
	}
}

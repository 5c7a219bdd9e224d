package server

import (
	"strings"
	"testing"
)

// TestInstructionsFitCodeMode: Codex's code mode shows its model only the first line
// of the instructions, cut at 250 characters, before the model searches the tools,
// and repeats the whole text in every tool's entry: the first line is complete and at
// most 245 characters, the whole at most 600, and no tool's description repeats a
// sentence of it.
func TestInstructionsFitCodeMode(t *testing.T) {
	first, _, _ := strings.Cut(instructions, "\n")
	if len(first) > 245 || !strings.HasSuffix(first, ".") || !strings.Contains(first, "execute_python") {
		t.Errorf("first line (%d characters), complete and naming execute_python: %q", len(first), first)
	}
	if len(instructions) > 600 {
		t.Errorf("the instructions are %d characters, over 600", len(instructions))
	}
	for _, tl := range (&Server{}).tools() {
		for _, sentence := range strings.SplitAfter(strings.ReplaceAll(instructions, "\n", " "), ". ") {
			if sentence = strings.TrimSpace(sentence); len(sentence) > 40 && strings.Contains(tl.description, strings.TrimSuffix(sentence, ".")) {
				t.Errorf("%s's description repeats the instructions: %q", tl.name, sentence)
			}
		}
	}
}

// TestExecuteDescriptionForDataWork: execute_python's description names what data
// work needs (display() and figures, !cmd, %pip and sh(), python_start for long
// cells) and gives the broker one sentence.
func TestExecuteDescriptionForDataWork(t *testing.T) {
	desc := (&Server{}).executePythonTool().description
	for _, want := range []string{"display(", "plt.show()", "!cmd", "%pip", "sh(", "python_start", "artifact_read"} {
		if !strings.Contains(desc, want) {
			t.Errorf("execute_python's description does not name %s", want)
		}
	}
	broker := 0
	for _, sentence := range strings.SplitAfter(desc, ". ") {
		if strings.Contains(sentence, "mcp.") || strings.Contains(sentence, "broker") {
			broker++
		}
	}
	if broker != 1 {
		t.Errorf("the broker takes %d sentences of execute_python's description, want 1:\n%s", broker, desc)
	}
}

// TestDescriptionsPromiseOnlyWhatBothFormsShow: the descriptions of the tools and of
// their arguments name no field that only structuredContent carries, since the text
// form's model never sees one by that name.
func TestDescriptionsPromiseOnlyWhatBothFormsShow(t *testing.T) {
	for _, tl := range (&Server{}).tools() {
		texts := []string{tl.description}
		_, in, err := inputOf(tl.handler.paramsType())
		if err != nil {
			t.Fatalf("%s: %v", tl.name, err)
		}
		for _, p := range in.Properties {
			texts = append(texts, p.Description)
		}
		for _, text := range texts {
			for _, field := range []string{"server.session_id", "artifact.id", "has_more", "success appears", "return_value", "structuredContent"} {
				if strings.Contains(text, field) {
					t.Errorf("%s: a description names %s, which the text form does not show: %q", tl.name, field, text)
				}
			}
		}
	}
}

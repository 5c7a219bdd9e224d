package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateArguments(t *testing.T) {
	in := executionInput()
	cases := []struct {
		args    string
		pointer string // empty: valid
	}{
		{`{"code":"x"}`, ""},
		{`{"code":"x","timeout":0.01,"reset":true,"expected_generation":3,"session_id":"s"}`, ""},
		{``, "/code"},
		{`null`, "/code"},
		{`[]`, "/"},
		{`{"code":5}`, "/code"},
		{`{"code":"x","timeout":0}`, "/timeout"},
		{`{"code":"x","timeout":4000}`, "/timeout"},
		{`{"code":"x","timeout":"5"}`, "/timeout"},
		{`{"code":"x","reset":"yes"}`, "/reset"},
		{`{"code":"x","extra":1}`, "/extra"},
		{`{"code":"x","a/b":1}`, "/a~1b"},
		{`{"code":"x","expected_generation":-1}`, "/expected_generation"},
		{`{"code":"x","expected_generation":1.5}`, "/expected_generation"},
		{`{"code":"x","expected_generation":18446744073709551616}`, "/expected_generation"},
		{`{"code":"x","expected_generation":18446744073709551615}`, ""},
		{`{"code":"` + strings.Repeat("é", 262144) + `"}`, ""},
		{`{"code":"` + strings.Repeat("é", 262145) + `"}`, "/code"},
	}
	for _, c := range cases {
		_, err := in.validate(json.RawMessage(c.args))
		if c.pointer == "" {
			if err != nil {
				t.Errorf("%.60s: unexpected error %v", c.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%.60s: accepted, want error at %s", c.args, c.pointer)
			continue
		}
		want := "Invalid arguments at " + c.pointer + ":"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.60s: error %q, want prefix %q", c.args, err, want)
		}
		if len(err.Error()) > 300 {
			t.Errorf("%.60s: error echoes too much (%d bytes)", c.args, len(err.Error()))
		}
	}
}

func TestExpectedGenerationMessage(t *testing.T) {
	_, err := executionInput().validate(json.RawMessage(`{"code":"x","expected_generation":-2}`))
	if err == nil || !strings.Contains(err.Error(), "expected_generation must be a nonnegative integral u64") {
		t.Fatalf("got %v", err)
	}
}

func TestSchemaIsClosedObject(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(executionInput().jsonSchema(), &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Fatalf("schema not a closed object: %v", s)
	}
	code := s["properties"].(map[string]any)["code"].(map[string]any)
	if code["maxLength"] != float64(262144) {
		t.Fatalf("code maxLength = %v", code["maxLength"])
	}
	if req := s["required"].([]any); len(req) != 1 || req[0] != "code" {
		t.Fatalf("required = %v", req)
	}
}

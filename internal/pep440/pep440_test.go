package pep440

import (
	"strings"
	"testing"
)

func TestPEP440(t *testing.T) {
	for in, want := range map[string]string{
		"3.2.0":                   "3.2.0",
		"v3.2.0":                  "3.2.0",
		"3.2.0-rc.1":              "3.2.0rc1",
		"v3.2.0-rc.1":             "3.2.0rc1",
		"3.2.0-RC1":               "3.2.0rc1",
		"3.2.0rc1":                "3.2.0rc1",
		"3.2.0-beta.2":            "3.2.0b2",
		"3.2.0-alpha.3":           "3.2.0a3",
		"3.2.0.alpha":             "3.2.0a0",
		"3.2.0-pre.4":             "3.2.0rc4",
		"3.2.0-c5":                "3.2.0rc5",
		"0.1.0-dev":               "0.1.0.dev0",
		"0.1.0-dev.3":             "0.1.0.dev3",
		"0.1.1.dev0":              "0.1.1.dev0",
		"0.1.0-SNAPSHOT-0a1b2c3":  "0.1.0.dev0",
		"0.1.0-SNAPSHOT":          "0.1.0.dev0",
		"3.2.0-rc.1-SNAPSHOT-abc": "3.2.0rc1.dev0",
		"1.0-1":                   "1.0.post1",
		"1.0.post":                "1.0.post0",
		"1.0-rev.2":               "1.0.post2",
		"1.0rc1.post2.dev3":       "1.0rc1.post2.dev3",
		"01.002.0003":             "1.2.3",
		"0!1.0":                   "1.0",
		"2!1.0":                   "2!1.0",
		" 1.0\n":                  "1.0",
		"1.0+local":               "1.0+local",
		"0.1.0.dev20261201135254+gE0C66B0D7AAF.dirty": "0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty",
		"1.0+ubuntu-1_2": "1.0+ubuntu.1.2",
	} {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
		if again, err := Normalize(got); err != nil || again != got {
			t.Errorf("Normalize(%q) = %q, %v: not idempotent", got, again, err)
		}
	}
}

func TestPEP440Rejects(t *testing.T) {
	for _, in := range []string{"", "dev", "latest", "1.0+", "1.0+a..b", "1.0+a+b", "0.1.0-3-gabcdef0", "0.1.0-3-gabcdef0-dirty", "1..0", "1.0-", "1.0 rc1"} {
		if got, err := Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", in, got)
		} else if !strings.Contains(err.Error(), "PEP 440") {
			t.Errorf("Normalize(%q): error %q does not say what is wrong", in, err)
		}
	}
}

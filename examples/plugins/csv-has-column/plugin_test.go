package main

import (
	"os"
	"path/filepath"
	"testing"

	"lockd/sdk/sdktest"
)

// Every fixture gives the answer of its directory, under lockd's sandbox.
func TestFixtures(t *testing.T) {
	sdktest.Fixtures(t, ".")
}

// The detail names the column, for the human; the answer is still only the bit.
func TestDetail(t *testing.T) {
	r := sdktest.Run(t, ".", filepath.Join("fixtures", "one", "people.csv"),
		map[string]string{"column": "email"})
	if r.Outcome != "1" || r.Detail != "column 2 of 3" {
		t.Errorf("got %s, detail %q; want 1, \"column 2 of 3\"", r.Outcome, r.Detail)
	}
}

// A value that does not fit the input (text of at most 256 bytes) never reaches the plugin.
func TestValueTooLong(t *testing.T) {
	long := make([]byte, 257)
	for i := range long {
		long[i] = 'a'
	}
	r := sdktest.Run(t, ".", filepath.Join("fixtures", "one", "people.csv"),
		map[string]string{"column": string(long)})
	if r.Outcome != "input_invalid" {
		t.Errorf("got %s, want input_invalid", r.Outcome)
	}
}

// A file without a header row has no answer: plugin_error, never a 0.
func TestNoHeader(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.csv")
	if err := writeFile(empty, ""); err != nil {
		t.Fatal(err)
	}
	r := sdktest.Run(t, ".", empty, map[string]string{"column": "email"})
	if r.Outcome != "plugin_error" {
		t.Errorf("got %s, want plugin_error", r.Outcome)
	}
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o600)
}

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
	r := sdktest.RunResult(t, ".", filepath.Join("fixtures", "one", "people.csv"),
		map[string]string{"column": "email"})
	if r.Outcome != sdktest.One || r.Detail != "column 2 of 3" {
		t.Errorf("got %s, detail %q; want 1, \"column 2 of 3\"", r.Outcome, r.Detail)
	}
}

// A value that does not fit the input (text of at most 256 bytes) never reaches the plugin.
func TestValueTooLong(t *testing.T) {
	long := make([]byte, 257)
	for i := range long {
		long[i] = 'a'
	}
	got := sdktest.Run(t, ".", filepath.Join("fixtures", "one", "people.csv"),
		map[string]string{"column": string(long)})
	if got != sdktest.InputInvalid {
		t.Errorf("got %s, want input_invalid", got)
	}
}

// A file without a header row has no answer: plugin_error, never a 0.
func TestNoHeader(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.csv")
	if err := writeFile(empty, ""); err != nil {
		t.Fatal(err)
	}
	if got := sdktest.Run(t, ".", empty, map[string]string{"column": "email"}); got != "plugin_error" {
		t.Errorf("got %s, want plugin_error", got)
	}
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o600)
}

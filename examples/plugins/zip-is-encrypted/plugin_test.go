package main

import (
	"path/filepath"
	"testing"

	"lockd/sdk/sdktest"
)

// Every fixture gives the answer of its directory, under lockd's sandbox.
func TestFixtures(t *testing.T) {
	sdktest.Fixtures(t, ".")
}

// A file that is not a ZIP archive has no answer: plugin_error, never a 0.
func TestNotAnArchive(t *testing.T) {
	r := sdktest.RunResult(t, ".", filepath.Join("..", "json-is-valid", "plugin.toml"), nil)
	if r.Outcome != "plugin_error" || r.Cause != "exit:1" {
		t.Errorf("got %s (%s), want plugin_error (exit:1)", r.Outcome, r.Cause)
	}
}

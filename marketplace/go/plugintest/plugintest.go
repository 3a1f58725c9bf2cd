// Package plugintest is what the official Go plugins' tests share: their fixtures found, checked
// against the plugin's check called directly, and read as a fuzz target's seeds. It is imported
// from _test.go files only, never into a plugin's binary.
package plugintest

import (
	"os"
	"path/filepath"
	"testing"
)

// Fixtures returns the paths of the files in fixtures/<dir> (of the plugin's directory, the
// test's working directory), failing the test when there are none.
func Fixtures(t testing.TB, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("fixtures", dir, "[^.]*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in fixtures/%s (%v)", dir, err)
	}
	return paths
}

// CheckFixtures checks that every fixture of one/ and zero/ gives its answer, and every one of
// error/ an error, when answer (the plugin's check on a file's bytes) is called directly.
func CheckFixtures(t *testing.T, answer func(b []byte) (bool, error)) {
	t.Helper()
	for dir, want := range map[string]bool{"one": true, "zero": false} {
		for _, p := range Fixtures(t, dir) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := answer(b); err != nil || got != want {
				t.Errorf("%s: got %v, %v; want %v", p, got, err, want)
			}
		}
	}
	for _, p := range Fixtures(t, "error") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := answer(b)
		if err == nil {
			t.Errorf("%s: got %v, want an error", p, got)
		}
		t.Logf("%s: %v", p, err)
	}
}

// Seeds returns the contents of every fixture of one/, zero/ and error/, in that order, that is
// shorter than max bytes (any length when max is 0): a fuzz target's seeds.
func Seeds(t testing.TB, max int) [][]byte {
	t.Helper()
	var seeds [][]byte
	for _, dir := range []string{"one", "zero", "error"} {
		for _, p := range Fixtures(t, dir) {
			if b, err := os.ReadFile(p); err == nil && (max == 0 || len(b) < max) {
				seeds = append(seeds, b)
			}
		}
	}
	return seeds
}

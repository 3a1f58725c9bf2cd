// Tests of image.has-gps' check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target runs the check on any bytes.
package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fixtures returns the paths of the files in fixtures/<dir>, failing the test when there are
// none.
func fixtures(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("fixtures", dir, "[^.]*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in fixtures/%s (%v)", dir, err)
	}
	return paths
}

// check runs the plugin's check on the file at p.
func check(t *testing.T, p string) (bool, error) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return gps(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	for dir, want := range map[string]bool{"one": true, "zero": false} {
		for _, p := range fixtures(t, dir) {
			if got, err := check(t, p); err != nil || got != want {
				t.Errorf("%s: got %v, %v; want %v", p, got, err, want)
			}
		}
	}
	for _, p := range fixtures(t, "error") {
		got, err := check(t, p)
		if err == nil {
			t.Errorf("%s: got %v, want an error", p, got)
		}
		t.Logf("%s: %v", p, err)
	}
}

// FuzzGPS runs the check on any bytes: it must end without a panic, and a file it answers
// about starts as one of the four formats does.
func FuzzGPS(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := gps(bytes.NewReader(b), int64(len(b)))
		if err == nil && !bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}) && !bytes.HasPrefix(b, pngSignature) &&
			!bytes.HasPrefix(b, []byte("II*\x00")) && !bytes.HasPrefix(b, []byte("MM\x00*")) &&
			!(bytes.HasPrefix(b, []byte("RIFF")) && len(b) >= 12 && string(b[8:12]) == "WEBP") {
			t.Fatalf("answered about a file of no accepted format")
		}
	})
}

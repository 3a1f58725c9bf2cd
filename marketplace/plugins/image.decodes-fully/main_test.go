// Tests of image.decodes-fully' check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target runs the check on any bytes.
package main

import (
	"bytes"
	"image/png"
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
	return decodes(bytes.NewReader(b), int64(len(b)))
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

// FuzzDecodes runs the check on any bytes: it must end without a panic, within the caps, and
// what it answers for a PNG small enough must agree with Go's image/png, which decodes the same
// format by other means (a palette image is left out: Go accepts PLTE for grey images).
func FuzzDecodes(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, err := decodes(bytes.NewReader(b), int64(len(b)))
		if err != nil || !bytes.HasPrefix(b, pngSignature) {
			return
		}
		cfg, cerr := png.DecodeConfig(bytes.NewReader(b))
		if cerr != nil || cfg.Width*cfg.Height > 1<<16 {
			return
		}
		_, perr := png.Decode(bytes.NewReader(b))
		if ok && perr != nil {
			t.Fatalf("answered 1 where image/png fails: %v", perr)
		}
	})
}

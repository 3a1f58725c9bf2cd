// Tests of file.has-trailing-data's check: every fixture gives its directory's answer when the
// check is called directly, the fixtures give the same answers under lockd's sandbox, and a fuzz
// target holds the check to what the definition implies.
package main

import (
	"bytes"
	"os"
	"testing"

	"lockd/marketplace/plugintest"
	"lockd/sdk/sdktest"
)

// answer runs the check on b.
func answer(b []byte) (bool, error) {
	return trailing(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
}

// The fixtures answer the same under lockd's sandbox (lockctl plugin test), when lockctl is
// there ($LOCKCTL or on PATH).
func TestSandboxFixtures(t *testing.T) {
	sdktest.Fixtures(t, ".")
}

// A file with any byte appended has trailing data, and one cut anywhere before its logical end
// never does (it is truncated): checked on every fixture of zero/, at every cut but for PDF, where
// a file cut inside an incremental update is a whole file with bytes after its %%EOF.
func TestCutAndAppend(t *testing.T) {
	for _, p := range plugintest.Fixtures(t, "zero") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := answer(append(b[:len(b):len(b)], 'x')); err != nil || !got {
			t.Errorf("%s + one byte: got %v, %v; want 1", p, got, err)
		}
		if bytes.HasPrefix(b, []byte("%PDF-")) {
			continue
		}
		for cut := 1; cut < len(b); cut++ {
			if got, err := answer(b[:cut]); err == nil && got {
				t.Errorf("%s cut at %d: got 1 (a prefix of the file has trailing data)", p, cut)
			}
		}
	}
}

// FuzzTrailing checks, on any input, what the definition implies without restating the check:
// the check ends without a panic; a file that ends at its logical end (answer 0) has trailing
// data once any byte that is not PDF white-space is appended.
func FuzzTrailing(f *testing.F) {
	for _, b := range plugintest.Seeds(f, 0) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := answer(b)
		if err != nil || got {
			return
		}
		longer := append(b[:len(b):len(b)], 'x')
		if got, err := answer(longer); err != nil || !got {
			t.Fatalf("%q answered 0, but with a byte appended: %v, %v", b, got, err)
		}
	})
}

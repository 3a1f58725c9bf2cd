// Tests of archive.has-encrypted-entry's check: every fixture gives its directory's answer when
// the check is called directly, the fixtures give the same answers under lockd's sandbox, and a
// fuzz target holds the check to what the definition implies.
package main

import (
	"archive/zip"
	"bytes"
	"os"
	"strings"
	"testing"

	"lockd/marketplace/plugintest"
	"lockd/sdk/sdktest"
)

// answer runs the check on b.
func answer(b []byte) (bool, error) {
	return encrypted(bytes.NewReader(b), int64(len(b)))
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

// A 7z archive cut anywhere has no answer: the start header names a next header past the end.
func TestSevenCut(t *testing.T) {
	for _, dir := range []string{"one", "zero"} {
		for _, p := range plugintest.Fixtures(t, dir) {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.HasPrefix(b, sevenMagic) {
				continue
			}
			for cut := 0; cut < len(b); cut++ {
				if got, err := answer(b[:cut]); err == nil {
					t.Errorf("%s cut at %d: got %v, want an error", p, cut, got)
				}
			}
		}
	}
}

// zipOf returns a ZIP archive of one entry named name holding data (none for a directory, whose
// name ends in /), made by Go's own writer, with the given extra flags on its headers.
func zipOf(t *testing.T, name string, data []byte, flags uint16) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Flags: flags})
	if err != nil {
		t.Skip(err)
	}
	if !strings.HasSuffix(name, "/") { // a directory entry takes no data
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Skip(err)
	}
	return buf.Bytes()
}

// FuzzEncrypted checks, on any input, what the definition implies without restating the check:
// the check ends without a panic; a ZIP archive made of the input (as an entry's name and data)
// by Go's writer answers 0, and 1 once its entry carries the encrypted flag.
func FuzzEncrypted(f *testing.F) {
	for _, b := range plugintest.Seeds(f, 0) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = answer(b)
		if len(b) > 0xFFFF {
			return
		}
		if got, err := answer(zipOf(t, string(b), b, 0)); err != nil || got {
			t.Fatalf("a plain archive of %q: got %v, %v; want 0", b, got, err)
		}
		if got, err := answer(zipOf(t, string(b), b, flagEncrypted)); err != nil || !got {
			t.Fatalf("an archive of %q with the encrypted flag: got %v, %v; want 1", b, got, err)
		}
	})
}

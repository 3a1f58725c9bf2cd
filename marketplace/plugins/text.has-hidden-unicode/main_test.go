// Tests of text.has-hidden-unicode's check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target holds the check to what the definition implies.
package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	for dir, want := range map[string]bool{"one": true, "zero": false} {
		for _, p := range fixtures(t, dir) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := hidden(bytes.NewReader(b))
			if err != nil || got != want {
				t.Errorf("%s: got %v, %v; want %v", p, got, err, want)
			}
		}
	}
	for _, p := range fixtures(t, "error") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := hidden(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: got %v, want an error", p, got)
		}
	}
}

// FuzzHidden checks, on any input, what the definition implies without restating the check:
// input that is not UTF-8 text is an error and text never is; a bidi control, U+200B, U+2060 or
// U+180E always answers 1; text without any of the characters the check looks at answers 0.
func FuzzHidden(f *testing.F) {
	f.Add([]byte("plain text\n"))
	f.Add([]byte("\U0001F468\u200d\U0001F469"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := hidden(bytes.NewReader(b))
		text := utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
		if (err == nil) != text {
			t.Fatalf("%q: error %v, but UTF-8 text: %v", b, err, text)
		}
		if err != nil {
			return
		}
		s := string(b)
		if strings.ContainsAny(s, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u2060\u180e") && !got {
			t.Fatalf("%q: a control the definition names answered 0", b)
		}
		looked := strings.ContainsAny(strings.TrimPrefix(s, "\ufeff"), "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u2060\u180e\u200c\u200d\ufeff")
		for _, c := range s {
			if c >= tagFirst && c <= tagLast {
				looked = true
			}
		}
		if !looked && got {
			t.Fatalf("%q: answered 1 with none of the characters the check looks at", b)
		}
	})
}

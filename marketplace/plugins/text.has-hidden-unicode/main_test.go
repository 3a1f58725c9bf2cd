// Tests of text.has-hidden-unicode's check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target holds the check to what the definition implies.
package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"lockd/marketplace/plugintest"
)

// answer runs the plugin's check on b.
func answer(b []byte) (bool, error) {
	return hidden(bytes.NewReader(b))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
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

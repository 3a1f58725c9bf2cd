package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"lockd/sdk/sdktest"
)

// Every fixture gives the answer of its directory, under lockd's sandbox.
func TestFixtures(t *testing.T) {
	sdktest.Fixtures(t, ".")
}

func valid(s string) bool {
	v := validator{r: bufio.NewReader(strings.NewReader(s))}
	ok, err := v.valid()
	if err != nil {
		panic(err)
	}
	return ok
}

func TestValidator(t *testing.T) {
	good := []string{
		`0`, `-0`, `-1.5e+10`, `1E-2`, `0.0`, `true`, `false`, `null`, `""`, `"\u00e9\ud800"`,
		`"\"\\\/\b\f\n\r\t"`, `[]`, `{}`, ` [ 1 , [ ] , { } ] `, `{"a":1,"a":2}`,
		"{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\"}\n", `[[[[[[[[[[]]]]]]]]]]`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	}
	bad := []string{
		``, ` `, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `tru`, `nul`, `True`, `"abc`, `"\x"`,
		`"\u12"`, "\"\x01\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", `[1,]`,
		`{"a":1,}`, `{"a"}`, `{a:1}`, `[1 2]`, `{} {}`, `1 x`, `[`, `]`, `{"a":1]`,
		"\xef\xbb\xbf{}", `[1]]`, strings.Repeat("[", 20000),
	}
	for _, s := range good {
		if !valid(s) {
			t.Errorf("%.40q: invalid, want valid", s)
		}
	}
	for _, s := range bad {
		if valid(s) {
			t.Errorf("%.40q: valid, want invalid", s)
		}
	}
}

// FuzzValidator checks the validator against encoding/json where both apply: valid UTF-8 (which
// encoding/json does not check) and nesting under its limit of 10 000.
func FuzzValidator(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `[1e5,-0.5,"x\n"]`, `01`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > 9000 {
			t.Skip()
		}
		if got, want := valid(string(b)), json.Valid(b); got != want {
			t.Errorf("%q: %v, encoding/json says %v", b, got, want)
		}
	})
}

// Tests of archive.has-unsafe-path's check: every fixture gives its directory's answer when the
// check is called directly, the fixtures give the same answers under lockd's sandbox, and a fuzz
// target holds the check to what the definition implies.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"strings"
	"testing"

	"lockd/marketplace/plugintest"
	"lockd/sdk/sdktest"
)

// answer runs the check on b.
func answer(b []byte) (bool, error) {
	return escapes(bytes.NewReader(b), int64(len(b)))
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

// A chain of links that doubles the path at each step ends as an error within the bounds, never
// as a run that does not end.
func TestLinkBlowUp(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	prev := "."
	for i := 0; i < 30; i++ {
		name := "l" + strings.Repeat("x", i)
		link := prev + "/" + prev
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: link})
		prev = name
	}
	_ = tw.WriteHeader(&tar.Header{Name: prev + "/f", Typeflag: tar.TypeReg})
	_ = tw.Close()
	if got, err := answer(buf.Bytes()); err == nil && got {
		t.Errorf("got 1, want 0 or an error")
	}
}

// tarOf returns a tar archive of one regular file named name, or nil when Go's writer refuses
// the name.
func tarOf(name string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Format: tar.FormatPAX}) != nil ||
		tw.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

// zipOf returns a ZIP archive of one entry named name, or nil when Go's writer refuses it.
func zipOf(name string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if _, err := zw.Create(name); err != nil || zw.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

// FuzzUnsafe checks, on any input, what the definition implies without restating the check:
// the check ends without a panic; an archive (tar or ZIP, made by Go's writers) of one file
// named by the input answers 1 exactly when the name, split at / and \, starts with a separator
// or a drive letter or has a ".." component, when it holds no NUL.
func FuzzUnsafe(f *testing.F) {
	for _, b := range plugintest.Seeds(f, 64<<10) {
		f.Add(b)
	}
	f.Add([]byte("a/../b"))
	f.Add([]byte("C:x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = answer(b)
		name := string(b)
		if strings.IndexByte(name, 0) >= 0 || name == "" {
			return
		}
		want := strings.HasPrefix(name, "/") || strings.HasPrefix(name, "\\") ||
			len(name) >= 2 && name[1] == ':' && (name[0]|0x20 >= 'a' && name[0]|0x20 <= 'z')
		for _, c := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
			want = want || c == ".."
		}
		for _, a := range [][]byte{tarOf(name), zipOf(name)} {
			if a == nil {
				continue
			}
			if got, err := answer(a); err != nil || got != want {
				t.Fatalf("an archive of %q: got %v, %v; want %v", name, got, err, want)
			}
		}
	})
}

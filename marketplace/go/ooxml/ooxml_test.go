// Tests of the ooxml package: a package's entries are counted up to the cap, the capped reader
// stops where its cap does, part names compare as OPC's do, and a fuzz target holds Open to ending
// without a panic on any bytes.
package ooxml

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// zipOf writes an archive of n empty entries.
func zipOf(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < n; i++ {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: strings.Repeat("a", i%7+1),
			Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An archive of PartsMax entries opens; one more is refused before archive/zip reads it.
func TestCountParts(t *testing.T) {
	for n, want := range map[int]error{3: nil, PartsMax: nil, PartsMax + 1: ErrTooManyParts} {
		b := zipOf(t, n)
		_, err := Open(bytes.NewReader(b), int64(len(b)))
		if err != want {
			t.Errorf("%d entries: %v, want %v", n, err, want)
		}
	}
}

// The capped reader gives the bytes within its cap, then its error.
func TestCappedReader(t *testing.T) {
	errCap := errors.New("cap")
	left := int64(5)
	got, err := io.ReadAll(CappedReader{R: strings.NewReader("0123456789"), Left: &left, Err: errCap})
	if string(got) != "01234" || err != errCap || left != 0 {
		t.Fatalf("%q, %v, %d left", got, err, left)
	}
}

// Part names compare without case or a leading slash; relationship parts are .rels in _rels.
func TestPartNames(t *testing.T) {
	if PartName("/Word/_RELS/Document.xml.RELS") != "word/_rels/document.xml.rels" {
		t.Error("PartName")
	}
	for n, want := range map[string]bool{"_rels/.rels": true, "word/_rels/document.xml.rels": true,
		"word/rels/document.xml.rels": false, "_rels/a.xml": false} {
		if RelationshipPart(n) != want {
			t.Errorf("RelationshipPart(%q) != %v", n, want)
		}
	}
}

// FuzzOpen opens any bytes as a package: it ends without a panic.
func FuzzOpen(f *testing.F) {
	f.Add(zipOf(f, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Open(bytes.NewReader(b), int64(len(b)))
	})
}

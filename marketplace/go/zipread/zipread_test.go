// Tests of the zipread package: archives written by Go's archive/zip read back entry by entry,
// and a fuzz target holds the reader to ending without a panic on any bytes.
package zipread

import (
	"archive/zip"
	"bytes"
	"errors"
	"testing"
)

// zipOf writes an archive of the named entries, each holding its own name, with comment as the
// archive's comment.
func zipOf(t testing.TB, comment string, names ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(n))
	}
	if err := zw.SetComment(comment); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// walk reads every entry's name and local header of the archive b.
func walk(b []byte) ([]string, error) {
	w := NewWindow(bytes.NewReader(b), int64(len(b)))
	d, err := FindDirectory(w)
	if err != nil {
		return nil, err
	}
	lw := NewLocalWindow(w)
	var names []string
	err = EachEntry(w, d, func(e *Entry) error {
		l, err := LocalHeader(lw, e.Offset)
		if err != nil {
			return err
		}
		if !bytes.Equal(l.Name, e.Name) || l.Method != e.Method {
			return errors.New("the local header differs from the central one")
		}
		names = append(names, string(e.Name))
		return nil
	})
	return names, err
}

// Every entry is read in order, with a comment that holds an end record's signature too.
func TestEntries(t *testing.T) {
	names := []string{"a", "dir/b", "c.txt"}
	for _, comment := range []string{"", "PK\x05\x06 in a comment"} {
		b := zipOf(t, comment, names...)
		if !IsZip(b) {
			t.Fatalf("IsZip: false for an archive")
		}
		got, err := walk(b)
		if err != nil || len(got) != len(names) {
			t.Fatalf("comment %q: %v, %v", comment, got, err)
		}
		for i := range names {
			if got[i] != names[i] {
				t.Errorf("entry %d: %q, want %q", i, got[i], names[i])
			}
		}
	}
}

// A truncated archive has no central directory to find.
func TestTruncated(t *testing.T) {
	b := zipOf(t, "", "a")
	if _, err := walk(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated archive was read")
	}
}

// FuzzZip reads any bytes as an archive: the reader ends without a panic.
func FuzzZip(f *testing.F) {
	f.Add(zipOf(f, "", "a", "b/c"))
	f.Add(zipOf(f, "comment", "x"))
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = walk(b)
	})
}

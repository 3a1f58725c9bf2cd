// Tests of the decompress package: streams of each format are told by their first bytes and read
// back, a tar header is told, and a fuzz target holds the readers to ending without a panic.
package decompress

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// gzipOf compresses data as two gzip members, as a concatenation of two files would be.
func gzipOf(data []byte) []byte {
	var buf bytes.Buffer
	half := len(data) / 2
	for _, part := range [][]byte{data[:half], data[half:]} {
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(part)
		_ = zw.Close()
	}
	return buf.Bytes()
}

// A gzip file of two members reads as both, and a zero-padded tail ends it.
func TestGzipMembers(t *testing.T) {
	data := bytes.Repeat([]byte("member "), 1000)
	b := append(gzipOf(data), make([]byte, 512)...)
	if c := Of(b); c != Gzip {
		t.Fatalf("Of: %q, want gzip", c)
	}
	r, err := NewReader(Gzip, b, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%d bytes, %v; want %d", len(got), err, len(data))
	}
}

// Each format's magic is told, and other bytes are none.
func TestOf(t *testing.T) {
	for head, want := range map[string]Compression{
		"\xFD7zXZ\x00":     Xz,
		"\x28\xB5\x2F\xFD": Zstd,
		"BZh9":             Bzip2,
		"BZh0":             None,
		"PK\x03\x04":       None,
	} {
		if got := Of([]byte(head)); got != want {
			t.Errorf("Of(%q) = %q, want %q", head, got, want)
		}
	}
}

// A header Go's archive/tar writes is a tar header, and so is a zero block; a block changed by
// one byte is not.
func TestIsTarHeader(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Typeflag: tar.TypeReg})
	_ = tw.Close()
	block := buf.Bytes()[:512]
	if !IsTarHeader(block) || !IsTarHeader(make([]byte, 512)) {
		t.Fatal("a tar header was not told")
	}
	block[0] ^= 1
	if IsTarHeader(block) {
		t.Fatal("a corrupt header was told a tar header")
	}
}

// FuzzDecompress reads any bytes as the stream their magic tells: the readers end without a
// panic.
func FuzzDecompress(f *testing.F) {
	f.Add(gzipOf([]byte("gzip data")))
	f.Add([]byte("\xFD7zXZ\x00\x00\x04\xE6\xD6\xB4\x46"))
	f.Add([]byte("BZh91AY&SY"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Of(b)
		if c == None {
			return
		}
		head := b
		if len(head) > HeadSize {
			head = head[:HeadSize]
		}
		r, err := NewReader(c, head, bytes.NewReader(b))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<20))
	})
}

// Tests of the zstd package: test vectors made by Debian's zstd (testdata/zstd/make.sh)
// decompress to what was compressed, and a fuzz target holds the decoder to ending without a
// panic, within its block and window bounds.
package zstd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The vectors: NAME.LEVEL.zst decompresses to the input whose SHA-256 is in NAME.sha256.
func TestZstdVectors(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "zstd", "*.zst"))
	if len(paths) == 0 {
		t.Fatal("no vectors in testdata/zstd")
	}
	for _, p := range paths {
		name := strings.SplitN(filepath.Base(p), ".", 2)[0]
		want, err := os.ReadFile(filepath.Join("testdata", "zstd", name+".sha256"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, NewReader(f, 64<<20))
		f.Close()
		if got := hex.EncodeToString(h.Sum(nil)); err != nil || got != strings.TrimSpace(string(want)) {
			t.Errorf("%s: %v, SHA-256 %s, want %s", p, err, got, want)
		}
	}
}

// FuzzZstd decodes any input: the decoder ends without a panic, and never produces a block over
// 128 KiB between two reads of the buffer.
func FuzzZstd(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "zstd", "*.zst"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		z := NewReader(bytes.NewReader(b), 1<<20)
		buf := make([]byte, 1<<20)
		total := 0
		for total < 64<<20 {
			n, err := z.Read(buf)
			total += n
			if n > BlockMax {
				t.Fatalf("a read of %d bytes: more than a block", n)
			}
			if err != nil {
				return
			}
		}
	})
}

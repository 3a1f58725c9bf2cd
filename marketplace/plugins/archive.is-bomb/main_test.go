// Tests of archive.is-bomb's check: every fixture gives its directory's answer when the check is
// called directly, the fixtures give the same answers under lockd's sandbox, and a fuzz target
// holds the check to the definition's arithmetic.
package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"testing"

	"lockd/marketplace/plugintest"
	"lockd/sdk/sdktest"
)

// answer runs the check on b.
func answer(b []byte) (bool, error) {
	return bomb(bytes.NewReader(b), int64(len(b)))
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

// The threshold is the definition's: more than 1 GiB, or more than 100 x the size once over
// 1 MiB.
func TestThreshold(t *testing.T) {
	for _, c := range []struct{ size, want int64 }{
		{0, 1 << 20}, {1, 1 << 20}, {10 << 10, 1 << 20}, {(1 << 20) / 100, 1 << 20},
		{20 << 10, 2048000}, {10 << 20, 1048576000}, {11 << 20, 1 << 30}, {1 << 40, 1 << 30},
	} {
		if got := threshold(c.size); got != c.want {
			t.Errorf("threshold(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// isBomb is the definition applied to an expansion of n bytes from a file of size bytes.
func isBomb(n, size int64) bool {
	return n > 1<<30 || n > 1<<20 && n > 100*size
}

// gzipOf and zipOf compress data with Go's own writers.
func gzipOf(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

func zipOf(data []byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("data")
	_, _ = w.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

// FuzzBomb checks, on any input, what the definition implies: the check ends without a panic;
// the input repeated reps times, compressed by gzip or ZIP, answers by the definition's
// arithmetic on its true expansion.
func FuzzBomb(f *testing.F) {
	for _, b := range plugintest.Seeds(f, 64<<10) {
		f.Add(b, uint16(1))
	}
	f.Add([]byte{0}, uint16(65535))
	f.Add([]byte("abc"), uint16(40000))
	f.Fuzz(func(t *testing.T, b []byte, reps uint16) {
		_, _ = answer(b)
		if len(b) == 0 || len(b)*int(reps) > 5<<18 {
			return
		}
		data := bytes.Repeat(b, int(reps))
		for _, c := range [][]byte{gzipOf(data), zipOf(data)} {
			want := isBomb(int64(len(data)), int64(len(c)))
			if got, err := answer(c); err != nil || got != want {
				t.Fatalf("%d bytes compressed to %d: got %v, %v; want %v", len(data), len(c), got, err, want)
			}
		}
	})
}

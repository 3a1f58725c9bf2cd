// Tests of image.decodes-fully' check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target runs the check on any bytes.
package main

import (
	"bytes"
	"image/png"
	"testing"

	"lockd/marketplace/plugintest"
)

// answer runs the plugin's check on b.
func answer(b []byte) (bool, error) {
	return decodes(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
}

// FuzzDecodes runs the check on any bytes: it must end without a panic, within the caps, and
// what it answers for a PNG small enough must agree with Go's image/png, which decodes the same
// format by other means (a palette image is left out: Go accepts PLTE for grey images).
func FuzzDecodes(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, err := decodes(bytes.NewReader(b), int64(len(b)))
		if err != nil || !bytes.HasPrefix(b, pngSignature) {
			return
		}
		cfg, cerr := png.DecodeConfig(bytes.NewReader(b))
		if cerr != nil || cfg.Width*cfg.Height > 1<<16 {
			return
		}
		_, perr := png.Decode(bytes.NewReader(b))
		if ok && perr != nil {
			t.Fatalf("answered 1 where image/png fails: %v", perr)
		}
	})
}

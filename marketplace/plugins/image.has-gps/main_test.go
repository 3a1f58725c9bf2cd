// Tests of image.has-gps' check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target runs the check on any bytes.
package main

import (
	"bytes"
	"testing"

	"lockd/marketplace/plugintest"
)

// answer runs the plugin's check on b.
func answer(b []byte) (bool, error) {
	return gps(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
}

// FuzzGPS runs the check on any bytes: it must end without a panic, and a file it answers
// about starts as one of the four formats does.
func FuzzGPS(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := gps(bytes.NewReader(b), int64(len(b)))
		if err == nil && !bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}) && !bytes.HasPrefix(b, pngSignature) &&
			!bytes.HasPrefix(b, []byte("II*\x00")) && !bytes.HasPrefix(b, []byte("MM\x00*")) &&
			!(bytes.HasPrefix(b, []byte("RIFF")) && len(b) >= 12 && string(b[8:12]) == "WEBP") {
			t.Fatalf("answered about a file of no accepted format")
		}
	})
}

// Tests of office.has-external-refs' check: every fixture gives its directory's answer when the
// check is called directly, and a fuzz target runs the check on any bytes.
package main

import (
	"archive/zip"
	"bytes"
	"testing"

	"lockd/marketplace/plugintest"
)

// answer runs the plugin's check on b.
func answer(b []byte) (bool, error) {
	return externalRefs(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
}

// FuzzExternalRefs runs the check on any bytes: it must end without a panic, and a file the
// check accepts is a ZIP archive.
func FuzzExternalRefs(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := externalRefs(bytes.NewReader(b), int64(len(b)))
		if err == nil {
			if _, zerr := zip.NewReader(bytes.NewReader(b), int64(len(b))); zerr != nil {
				t.Fatalf("accepted a file that is not a ZIP archive: %v", zerr)
			}
		}
	})
}

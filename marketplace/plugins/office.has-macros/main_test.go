// Tests of office.has-macros' check: every fixture gives its directory's answer when the
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
	return macros(bytes.NewReader(b), int64(len(b)))
}

// Every fixture of one/ and zero/ gives its answer, and every one of error/ an error.
func TestFixtures(t *testing.T) {
	plugintest.CheckFixtures(t, answer)
}

// FuzzMacros runs the check on any bytes: it must end without a panic, and a file the check
// answers about is an OLE2 compound file or a ZIP archive.
func FuzzMacros(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := macros(bytes.NewReader(b), int64(len(b)))
		if err == nil && !bytes.HasPrefix(b, cfbMagic) {
			if _, zerr := zip.NewReader(bytes.NewReader(b), int64(len(b))); zerr != nil {
				t.Fatalf("answered about a file that is neither OLE2 nor ZIP: %v", zerr)
			}
		}
	})
}

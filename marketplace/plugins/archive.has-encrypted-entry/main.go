// Official plugin archive.has-encrypted-entry (protocol 1): does the ZIP or 7z archive hold an
// encrypted entry?
//
// ZIP: every header of the central directory, and the local header each one points to, is read
// for the marks of encryption (APPNOTE.TXT): the encrypted flag (bit 0), strong encryption (bit
// 6), the masked local header of an encrypted central directory (bit 13), WinZip AES's method 99
// or its extra field 0x9901, and the strong encryption header 0x0017. A directory that lies
// (a central header that says plain over a local one that says encrypted) still answers 1. An
// encrypted central directory answers 1. No entry's data is read.
//
// 7z: the header's folders are read for the 7zAES coder (06F10701); an encrypted header (7z
// -mhe) answers 1 without being read further, a header packed with LZMA or LZMA2 is unpacked as
// far as its folders (sevenzip.go).
//
// A file that is neither, or whose structure breaks, fails the run: it has no answer.
package main

import (
	"errors"
	"io"
	"os"

	"lockd/marketplace/zipread"
	"lockd/sdk"
)

var errUnknown = errors.New("not a ZIP or 7z archive")

// The marks of encryption in a ZIP header (APPNOTE.TXT, 4.4.4, 4.4.5, 4.5.12, 7.2; WinZip's
// AE-x specification for method 99 and field 0x9901).
const (
	flagEncrypted      = 1 << 0
	flagStrong         = 1 << 6
	flagMaskedLocal    = 1 << 13
	methodAES          = 99
	extraAES           = 0x9901
	extraStrongEncrypt = 0x0017
)

// zipHeaderEncrypted tells whether a header's flags, method or extra block mark encryption.
func zipHeaderEncrypted(flags, method uint16, extra []byte) bool {
	return flags&(flagEncrypted|flagStrong|flagMaskedLocal) != 0 || method == methodAES ||
		zipread.ExtraField(extra, extraAES) != nil ||
		zipread.ExtraField(extra, extraStrongEncrypt) != nil
}

// zipEncrypted answers for a ZIP archive: whether a central header, or the local header it points
// to, marks its entry encrypted.
func zipEncrypted(w *zipread.Window) (bool, error) {
	d, err := zipread.FindDirectory(w)
	if err != nil {
		return false, err
	}
	found := errors.New("found")
	lw := zipread.NewLocalWindow(w)
	err = zipread.EachEntry(w, d, func(e *zipread.Entry) error {
		if zipHeaderEncrypted(e.Flags, e.Method, e.Extra) {
			return found
		}
		l, err := zipread.LocalHeader(lw, e.Offset)
		if err != nil {
			return err
		}
		if zipHeaderEncrypted(l.Flags, l.Method, l.Extra) {
			return found
		}
		return nil
	})
	switch err {
	case nil:
		return false, nil
	case found, zipread.ErrEncryptedDirectory:
		return true, nil
	}
	return false, err
}

// encrypted answers the question for the file r of length size.
func encrypted(r io.ReaderAt, size int64) (bool, error) {
	w := zipread.NewWindow(r, size)
	n := 32
	if size < int64(n) {
		n = int(size)
	}
	head, err := w.At(0, n)
	if err != nil {
		return false, err
	}
	switch {
	case len(head) >= 6 && string(head[:6]) == string(sevenMagic):
		return sevenEncrypted(r, size)
	case zipread.IsZip(head):
		return zipEncrypted(w)
	}
	return false, errUnknown
}

// check answers for the input file.
func check(in *os.File) (bool, error) {
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	return encrypted(in, st.Size())
}

func main() {
	sdk.Run(check)
}

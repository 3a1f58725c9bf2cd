// Example plugin in Go (protocol 1): does any entry of the ZIP archive use encryption?
//
// It reads the archive's central directory only (archive/zip), never an entry's data: whether an
// entry is encrypted is in its header. A file that is not a ZIP archive fails the run
// (plugin_error): it has no answer.
package main

import (
	"archive/zip"
	"os"

	"lockd/sdk"
)

const (
	// flagEncrypted is bit 0 of an entry's general purpose flags (PKWARE's APPNOTE.TXT,
	// 4.4.4): the entry is encrypted, by traditional PKWARE encryption or WinZip AES.
	flagEncrypted = 0x1
	// methodAES is WinZip AES's compression method (APPNOTE.TXT, 4.4.5), which sets the flag
	// too; checked on its own so that an archive that forgot the flag still counts.
	methodAES = 99
)

func encrypted(in *os.File) (bool, error) {
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	r, err := zip.NewReader(in, st.Size())
	if err != nil {
		return false, err
	}
	for _, f := range r.File {
		if f.Flags&flagEncrypted != 0 || f.Method == methodAES {
			return true, nil
		}
	}
	return false, nil
}

func main() {
	sdk.Run(encrypted)
}

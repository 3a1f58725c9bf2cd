// Official plugin office.has-macros (protocol 1): does the Office document carry macros, a VBA
// project or Excel 4.0 macro sheets?
//
// Office Open XML packages (docx/docm, xlsx/xlsm/xlsb, pptx/pptm and their templates) are judged
// by their parts, never by the file's name: a part whose content type is a VBA project or an
// Excel 4.0 macro sheet, or a relationship of one of those types to a part that is there
// (ooxml.go). OLE2 compound files (doc, xls) are judged by their directory and, for Excel, by
// the workbook's sheet list: a storage named VBA, or a sheet of the macro sheet type (cfb.go).
// A file that is neither, or that cannot be read (truncated, a damaged part or sector chain, an
// encrypted workbook whose sheet types cannot be read), fails the run: it has no answer.
package main

import (
	"bytes"
	"io"
	"os"

	"lockd/sdk"
)

// cfbMagic starts every OLE2 compound file ([MS-CFB] 2.2).
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// macros reads the document of size bytes at r and says whether it carries macros: an OLE2
// compound file when it starts with the OLE2 signature, an OOXML package otherwise. It returns
// an error for a file that is neither, or that cannot be read whole where the answer depends
// on it.
func macros(r io.ReaderAt, size int64) (bool, error) {
	head := make([]byte, len(cfbMagic))
	if n, _ := r.ReadAt(head, 0); n == len(head) && bytes.Equal(head, cfbMagic) {
		return cfbMacros(r, size)
	}
	return ooxmlMacros(r, size)
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		st, err := in.Stat()
		if err != nil {
			return false, err
		}
		return macros(in, st.Size())
	})
}

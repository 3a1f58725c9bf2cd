// Official plugin archive.has-unsafe-path (protocol 1): would unpacking the ZIP or tar archive
// write outside its directory?
//
// An entry is unsafe when its path is absolute (a leading / or \, or a drive letter) or has a
// ".." component, with either separator; a symbolic link is unsafe when its target is absolute or
// leads above the archive's root from where the link stands; and an entry is unsafe when its path
// leads above the root through a link made before it (paths.go). Entries are judged in the
// archive's order, as an extractor writes them.
//
// ZIP: every central directory header's name, the name in the local header it points to, and an
// Info-ZIP Unicode path field (0x7075) in either; an entry whose Unix mode says symbolic link has
// its target read from its data (stored or deflated). tar (plain, gzip, xz, zstd or bzip2): every
// header as Go's archive/tar reads it (PAX and GNU long names and link names applied); a hard
// link's target is an archive path, judged from the root.
//
// A file that is neither, a 7z archive, a compressed stream that is not a tar archive, or one
// whose structure breaks before an unsafe entry is found fails the run: it has no answer.
package main

import (
	"archive/tar"
	"bufio"
	"compress/flate"
	"errors"
	"io"
	"os"

	"lockd/marketplace/decompress"
	"lockd/marketplace/zipread"
	"lockd/sdk"
)

var errUnknown = errors.New("not a ZIP or tar archive")

// maxLinkTarget is how much of a ZIP symbolic link's data is read as its target: far past any
// system's PATH_MAX.
const maxLinkTarget = 64 << 10

// maxExpanded bounds how much of a compressed stream is decompressed to reach every tar header:
// past it the archive has no answer. 2 GiB take about 80 s of CPU with the slowest decoders (xz
// and bzip2, about 27 MB/s on binaries here).
const maxExpanded = 2 << 30

var errTooLarge = errors.New("the compressed tar archive expands past what this plugin reads")

// capped reads r and fails with errTooLarge once more than left bytes came from it.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// escapes answers the question for the file r of length size.
func escapes(r io.ReaderAt, size int64) (bool, error) {
	w := zipread.NewWindow(r, size)
	n := int64(decompress.HeadSize)
	if size < n {
		n = size
	}
	h, err := w.At(0, int(n))
	if err != nil {
		return false, err
	}
	head := append([]byte(nil), h...)
	// A tar header first: its name field comes first and may start with another format's magic.
	if len(head) >= 512 && decompress.IsTarHeader(head[:512]) {
		// A plain tar: archive/tar seeks over the entries' data.
		return tarUnsafe(io.NewSectionReader(r, 0, size))
	}
	if zipread.IsZip(head) {
		return zipUnsafe(w)
	}
	if c := decompress.Of(head); c != decompress.None {
		in := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10)
		d, err := decompress.NewReader(c, head, in)
		if err != nil {
			return false, err
		}
		br := bufio.NewReaderSize(&capped{r: d, left: maxExpanded}, 64<<10)
		block, err := br.Peek(512)
		if err != nil || !decompress.IsTarHeader(block) {
			return false, errors.New("the compressed stream is not a tar archive")
		}
		return tarUnsafe(br)
	}
	return false, errUnknown
}

// tarUnsafe answers for a tar archive read from r.
func tarUnsafe(r io.Reader) (bool, error) {
	tr := tar.NewReader(r)
	x := newExtraction()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		bad, err := x.entry(h.Name, h.Linkname, h.Typeflag == tar.TypeSymlink, h.Typeflag == tar.TypeLink)
		if err != nil || bad {
			return bad, err
		}
	}
}

// unixMode returns a ZIP entry's Unix mode, when it was made on a Unix-like system (APPNOTE.TXT,
// 4.4.2: 3 Unix, 19 OS X), or 0.
func unixMode(e *zipread.Entry) uint32 {
	if host := e.MadeBy >> 8; host == 3 || host == 19 {
		return e.ExtAttr >> 16
	}
	return 0
}

// unicodePath returns the name in an Info-ZIP Unicode path extra field (0x7075: a version, the
// CRC of the header's name, the UTF-8 name), or "".
func unicodePath(extra []byte) string {
	f := zipread.ExtraField(extra, 0x7075)
	if len(f) < 5 || f[0] != 1 {
		return ""
	}
	return string(f[5:])
}

// zipUnsafe answers for a ZIP archive: each central header's names and its local header's, then
// the link target of a symbolic link entry.
func zipUnsafe(w *zipread.Window) (bool, error) {
	d, err := zipread.FindDirectory(w)
	if err != nil {
		return false, err
	}
	x := newExtraction()
	found := errors.New("found")
	lw := zipread.NewLocalWindow(w)
	err = zipread.EachEntry(w, d, func(e *zipread.Entry) error {
		l, err := zipread.LocalHeader(lw, e.Offset)
		if err != nil {
			return err
		}
		for _, name := range []string{unicodePath(e.Extra), string(l.Name), unicodePath(l.Extra)} {
			if name != "" && unsafeName(name) {
				return found
			}
		}
		symlink := unixMode(e)&0xF000 == 0xA000
		var target string
		if symlink {
			if target, err = linkTarget(w, e, l); err != nil {
				return err
			}
		}
		bad, err := x.entry(string(e.Name), target, symlink, false)
		if err != nil {
			return err
		}
		if bad {
			return found
		}
		return nil
	})
	switch err {
	case nil:
		return false, nil
	case found:
		return true, nil
	}
	return false, err
}

// linkTarget reads a symbolic link entry's data, its target: at most maxLinkTarget bytes,
// stored or deflated. An encrypted link or another method fails: its target cannot be read.
func linkTarget(w *zipread.Window, e *zipread.Entry, l *zipread.Local) (string, error) {
	if e.Flags&1 != 0 || l.Flags&1 != 0 {
		return "", errors.New("zip: an encrypted symbolic link")
	}
	if l.DataOff > w.Size {
		return "", zipread.ErrTruncated
	}
	data := io.NewSectionReader(w.R, l.DataOff, w.Size-l.DataOff)
	var src io.Reader
	switch e.Method {
	case 0:
		if e.CSize > uint64(w.Size-l.DataOff) {
			return "", zipread.ErrTruncated
		}
		src = io.LimitReader(data, int64(e.CSize))
	case 8:
		fr := flate.NewReader(data)
		defer fr.Close()
		src = fr
	default:
		return "", errors.New("zip: a symbolic link compressed by a method this plugin does not read")
	}
	b, err := io.ReadAll(io.LimitReader(src, maxLinkTarget))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// check answers for the input file.
func check(in *os.File) (bool, error) {
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	return escapes(in, st.Size())
}

func main() {
	sdk.Run(check)
}

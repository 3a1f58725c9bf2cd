// Official plugin archive.is-bomb (protocol 1): would expanding the archive or compressed file
// write more than 1 GiB, or more than 100 times its own size once that is over 1 MiB?
//
// It is judged by expanding, never by the sizes the file declares: the bytes every decoder
// produces are counted as they come, and the expansion stops as soon as they pass the threshold
// T = min(1 GiB, max(1 MiB, 100 x the file's size)); the answer is 1 when they do.
//
//   - A compressed stream (gzip, every member as gunzip writes them; xz; zstd; bzip2): its
//     decompressed bytes; when they are a tar archive, its entries' contents too (a sparse entry
//     at its full size), whichever is more.
//   - A plain tar archive: its entries' contents (sparse entries at their full size).
//   - A ZIP archive: every central directory entry's data expanded from where its local header
//     says, whatever sizes either header declares (a deflate stream is read to its own end, not
//     to the declared compressed size), entries that share their data counted once each.
//
// Archives inside the archive are not expanded. A file in none of these formats fails the run;
// so does one whose expansion breaks (truncated, corrupt), or that holds an entry that cannot be
// expanded (encrypted, or a method this plugin does not decode), before the threshold is passed:
// it has no answer.
package main

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/flate"
	"errors"
	"io"
	"os"

	"lockd/marketplace/decompress"
	"lockd/marketplace/zipread"
	"lockd/marketplace/zstd"
	"lockd/sdk"
)

// The thresholds of the definition.
const (
	absoluteLimit = 1 << 30 // 1 GiB
	ratio         = 100
	ratioFloor    = 1 << 20 // the ratio counts once the expansion passes 1 MiB
)

// maxInput bounds the compressed bytes the ZIP entries may make the plugin read in all (entries
// sharing data read it again): past it the archive has no answer.
const maxInput = 4 << 30

// maxSetup bounds the memory the ZIP entries' bzip2 and xz decoders may set up in all, each
// entry its own (one deflate and one zstd decoder serve every entry): many entries of a costly
// method would otherwise cost time without producing a byte. Each one's cost is what its decoder
// allocates; 16 GiB is about 3 s of CPU.
const (
	maxSetup   = 16 << 30
	bzip2Setup = 3600000 // a 900k block's table of uint32
)

var (
	errUnknown = errors.New("not a ZIP or tar archive or a gzip, xz, zstd or bzip2 file")
	// errBomb is how an expansion stops once it passed the threshold.
	errBomb        = errors.New("the expansion passed the threshold")
	errTooMuchRead = errors.New("the ZIP entries make this plugin read or set up more than it may")
)

// threshold returns T for a file of size bytes: an expansion larger than T makes it a bomb.
func threshold(size int64) int64 {
	t := int64(absoluteLimit)
	if size <= absoluteLimit/ratio {
		t = ratio * size
	}
	if t < ratioFloor {
		t = ratioFloor
	}
	return t
}

// counter counts the bytes read from r and fails with errBomb once they pass limit.
type counter struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, errBomb
	}
	return n, err
}

// drain reads r to its end, adding what it produced to *total: errBomb once *total passes limit
// (reading no more than one byte past it), r's error otherwise.
func drain(r io.Reader, total *int64, limit int64) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, limit-*total+1))
	*total += n
	if *total > limit {
		return errBomb
	}
	return err
}

// bomb answers the question for the file r of length size.
func bomb(r io.ReaderAt, size int64) (bool, error) {
	limit := threshold(size)
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
	switch {
	case len(head) >= 512 && decompress.IsTarHeader(head[:512]):
		// A tar header first: its name field comes first and may start with another magic.
		var content int64
		err = tarContent(io.NewSectionReader(r, 0, size), &content, limit)
	case zipread.IsZip(head):
		err = zipExpansion(w, limit)
	case decompress.Of(head) != decompress.None:
		err = streamExpansion(decompress.Of(head), head, io.NewSectionReader(r, 0, size), limit)
	default:
		return false, errUnknown
	}
	if errors.Is(err, errBomb) {
		return true, nil
	}
	return false, err
}

// streamExpansion expands a compressed stream: errBomb when its decompressed bytes, or the
// contents of the tar archive they hold, pass limit.
func streamExpansion(c decompress.Compression, head []byte, r io.Reader, limit int64) error {
	d, err := decompress.NewReader(c, head, bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return err
	}
	stream := &counter{r: d, limit: limit}
	br := bufio.NewReaderSize(stream, 64<<10)
	if block, err := br.Peek(512); err == nil && decompress.IsTarHeader(block) {
		var content int64
		err := tarContent(br, &content, limit)
		if errors.Is(err, errBomb) {
			return err
		}
		// A broken tar archive is only bytes: the stream's own count goes on below.
	} else if errors.Is(err, errBomb) {
		return err
	}
	_, err = io.Copy(io.Discard, br)
	return err
}

// tarContent reads a tar archive's entries, adding their contents to *content: errBomb once it
// passes limit, the archive's error when it breaks, nil at its end.
func tarContent(r io.Reader, content *int64, limit int64) error {
	tr := tar.NewReader(r)
	for {
		_, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := drain(tr, content, limit); err != nil {
			return err
		}
	}
}

// ZIP compression methods this plugin expands (APPNOTE.TXT, 4.4.5).
const (
	methodStore   = 0
	methodDeflate = 8
	methodBzip2   = 12
	methodZstd    = 93
	methodXz      = 95
)

// inputCounter counts the compressed bytes the ZIP entries read, against maxInput.
type inputCounter struct {
	r    io.Reader
	used *int64
}

func (c *inputCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.used += int64(n)
	if *c.used > maxInput {
		return n, errTooMuchRead
	}
	return n, err
}

// zipExpansion expands every entry of a ZIP archive: errBomb when their data pass limit in all.
// An entry that cannot be expanded, or whose data break, leaves the archive without an answer,
// unless the others pass the limit.
func zipExpansion(w *zipread.Window, limit int64) error {
	d, err := zipread.FindDirectory(w)
	if err != nil {
		return err
	}
	lw := zipread.NewLocalWindow(w)
	var total, used int64
	var unexpanded error
	var setup int64
	var zr *zstd.Reader
	var fr io.ReadCloser
	err = zipread.EachEntry(w, d, func(e *zipread.Entry) error {
		l, err := zipread.LocalHeader(lw, e.Offset)
		if err != nil {
			return err
		}
		if e.Flags&1 != 0 || l.Flags&1 != 0 || e.Method == 99 {
			unexpanded = errors.New("zip: an encrypted entry cannot be expanded")
			return nil
		}
		rest := io.NewSectionReader(w.R, l.DataOff, w.Size-l.DataOff)
		in := &inputCounter{r: rest, used: &used}
		declared := &inputCounter{r: io.LimitReader(rest, int64(e.CSize)), used: &used}
		var data io.Reader
		switch e.Method {
		case methodStore:
			if e.CSize > uint64(w.Size-l.DataOff) {
				unexpanded = zipread.ErrTruncated
				return nil
			}
			data = declared
		case methodDeflate:
			// Deflate ends by itself: read to its end, not to the declared size. One decoder
			// serves every entry.
			src := bufio.NewReaderSize(in, 32<<10)
			if fr == nil {
				fr = flate.NewReader(src)
			} else if err := fr.(flate.Resetter).Reset(src, nil); err != nil {
				return err
			}
			data = fr
		case methodBzip2:
			// The decoder's table is 4 bytes per byte of the stream's block size, 100k to 900k.
			cost := int64(bzip2Setup)
			var h [4]byte
			if _, err := w.R.ReadAt(h[:], l.DataOff); err == nil && h[3] >= '1' && h[3] <= '9' {
				cost = int64(h[3]-'0') * 400000
			}
			if setup += cost; setup > maxSetup {
				return errTooMuchRead
			}
			data = bzip2.NewReader(bufio.NewReader(declared))
		case methodZstd:
			if zr == nil {
				zr = zstd.NewReader(declared, decompress.MaxWindow)
			} else {
				zr.Reset(declared)
			}
			data = zr
		case methodXz:
			head := make([]byte, decompress.HeadSize)
			k, _ := io.ReadFull(io.NewSectionReader(w.R, l.DataOff, w.Size-l.DataOff), head)
			dict, err := decompress.XzFirstDict(head[:k])
			if err != nil {
				unexpanded = err
				return nil
			}
			if setup += int64(dict) + decompress.XzMinDict; setup > maxSetup {
				return errTooMuchRead
			}
			xr, err := decompress.NewXzReader(declared)
			if err != nil {
				unexpanded = err
				return nil
			}
			data = xr
		default:
			unexpanded = errors.New("zip: an entry compressed by a method this plugin does not expand")
			return nil
		}
		err = drain(data, &total, limit)
		if errors.Is(err, errBomb) || errors.Is(err, errTooMuchRead) {
			return err
		}
		if err != nil {
			unexpanded = err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return unexpanded
}

// check answers for the input file.
func check(in *os.File) (bool, error) {
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	return bomb(in, st.Size())
}

func main() {
	sdk.Run(check)
}

// Official plugin office.has-external-refs (protocol 1): does the Office Open XML document have
// a relationship to an external target other than a plain hyperlink?
//
// An OOXML document is an OPC package: a ZIP archive with a [Content_Types].xml part, whose
// relationship parts (_rels/*.rels) say how parts refer to each other and to the outside. A
// relationship with TargetMode="External" is fetched or opened from outside the file: a remote
// template (attachedTemplate), a linked OLE object or picture, an external workbook link, a
// frame, a subdocument. Plain hyperlinks are external too, but are followed only when a reader
// clicks one, and do not count. The plugin reads the ZIP's central directory and then only the
// relationship parts, each through a cap on the bytes it may expand to. A file that is not an
// OPC package, or whose relationship parts cannot be read whole, fails the run.
package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"lockd/marketplace/ooxml"
	"lockd/sdk"
)

// The caps that bound the work on a hostile package: what one relationship part, and all of
// them together, may expand to. Office's own relationship parts are a few KiB.
const (
	partMax  = 4 << 20
	totalMax = 32 << 20
)

// hyperlinkTypes are the relationship types of a plain hyperlink, transitional and strict
// (ECMA-376 Part 1, 15.3).
var hyperlinkTypes = map[string]bool{
	"http://schemas.openxmlformats.org/officedocument/2006/relationships/hyperlink": true,
	"http://purl.oclc.org/ooxml/officedocument/relationships/hyperlink":             true,
}

var (
	errTooBig  = errors.New("a relationship part expands past the plugin's cap")
	errBadRels = errors.New("a relationship part is not well-formed XML")
)

// externalRelationship reads one relationship part from rc, through cap bytes at most (cap is
// decreased by what was read), and says whether it holds a relationship whose TargetMode is
// External and whose Type is not a hyperlink. It returns an error for a part that is not
// well-formed XML, that expands past the cap, or whose data does not match its checksum.
func externalRelationship(rc io.Reader, left *int64) (bool, error) {
	budget := int64(partMax)
	if budget > *left {
		budget = *left
	}
	used := budget
	dec := xml.NewDecoder(ooxml.CappedReader{R: rc, Left: &budget, Err: errTooBig})
	found := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			*left -= used - budget
			if errors.Is(err, errTooBig) {
				return false, errTooBig
			}
			return false, fmt.Errorf("%w: %v", errBadRels, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "Relationship" {
			continue
		}
		var mode, typ string
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "TargetMode":
				mode = strings.TrimSpace(a.Value)
			case "Type":
				typ = strings.ToLower(strings.TrimSpace(a.Value))
			}
		}
		if strings.EqualFold(mode, "External") && !hyperlinkTypes[typ] {
			found = true
		}
	}
	*left -= used - budget
	return found, nil
}

// externalRefs reads the OPC package of size bytes at r and says whether any of its
// relationship parts holds an external relationship that is not a hyperlink. Every
// relationship part is read whole, so that a damaged one is an error rather than a guess. It
// returns an error for a file that is not a ZIP archive with a [Content_Types].xml part, and for
// a relationship part that cannot be read whole (a compression method other than store and
// deflate, a bad checksum, a lying size, more than the caps, XML that is not well-formed).
func externalRefs(r io.ReaderAt, size int64) (bool, error) {
	z, err := ooxml.Open(r, size)
	if err != nil {
		return false, err
	}
	opc := false
	for _, f := range z.File {
		if strings.EqualFold(f.Name, "[Content_Types].xml") {
			opc = true
		}
	}
	if !opc {
		return false, ooxml.ErrNotOPC
	}
	left := int64(totalMax)
	found := false
	for _, f := range z.File {
		if !ooxml.RelationshipPart(strings.ToLower(f.Name)) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return false, fmt.Errorf("%s: %w", f.Name, err)
		}
		ext, err := externalRelationship(rc, &left)
		if err == nil {
			// Read to the end, so that archive/zip checks the part's size and CRC-32.
			_, err = io.Copy(io.Discard, ooxml.CappedReader{R: rc, Left: &left, Err: errTooBig})
		}
		rc.Close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", f.Name, err)
		}
		found = found || ext
	}
	return found, nil
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		st, err := in.Stat()
		if err != nil {
			return false, err
		}
		return externalRefs(in, st.Size())
	})
}

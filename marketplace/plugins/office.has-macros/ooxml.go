// office.has-macros on Office Open XML packages: VBA projects and Excel 4.0 macro sheets found by
// content type or by relationship, whatever the file or the parts are named.

package main

import (
	"archive/zip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"lockd/marketplace/ooxml"
)

// The caps that bound the work on a hostile package: what one XML part, and all the parts read
// together, may expand to. Office's [Content_Types].xml and relationship parts are a few KiB.
const (
	partMax  = 4 << 20
	totalMax = 32 << 20
)

// macroContentTypes are the content types of the parts that are macros (lowercase): the VBA
// project (vbaProject.bin in every application), and Excel 4.0 macro sheets, XML and binary
// (xlsb), ordinary and international ([MS-OFFMACRO2], [MS-XLSX], [MS-XLSB]).
var macroContentTypes = map[string]bool{
	"application/vnd.ms-office.vbaproject":        true,
	"application/vnd.ms-excel.macrosheet+xml":     true,
	"application/vnd.ms-excel.intlmacrosheet+xml": true,
	"application/vnd.ms-excel.macrosheet":         true,
	"application/vnd.ms-excel.intlmacrosheet":     true,
}

// macroRelationshipTypes are the relationship types that point to a VBA project or an Excel 4.0
// macro sheet (lowercase).
var macroRelationshipTypes = map[string]bool{
	"http://schemas.microsoft.com/office/2006/relationships/vbaproject":                true,
	"http://schemas.microsoft.com/office/2006/relationships/xlmacrosheet":              true,
	"http://schemas.microsoft.com/office/2006/relationships/xlintlmacrosheet":          true,
	"http://schemas.openxmlformats.org/officedocument/2006/relationships/xlmacrosheet": true,
}

var (
	errTooBig  = errors.New("an XML part expands past the plugin's cap")
	errBadPart = errors.New("an XML part is not well-formed")
)

// mediaType is a content type's type/subtype, lowercase, without parameters.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// elements reads the XML part f whole, through the per-part cap and *left, and calls each with
// every start element. It returns an error for a part that cannot be opened, is not well-formed
// XML, expands past a cap, or does not match its size or CRC-32.
func elements(f *zip.File, left *int64, each func(xml.StartElement)) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	defer rc.Close()
	budget := int64(partMax)
	if budget > *left {
		budget = *left
	}
	start := budget
	defer func() { *left -= start - budget }()
	in := ooxml.CappedReader{R: rc, Left: &budget, Err: errTooBig}
	dec := xml.NewDecoder(in)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTooBig) {
			return fmt.Errorf("%s: %w", f.Name, errTooBig)
		}
		if err != nil {
			return fmt.Errorf("%s: %w: %v", f.Name, errBadPart, err)
		}
		if el, ok := tok.(xml.StartElement); ok {
			each(el)
		}
	}
	// Read to the end, so that archive/zip checks the part's size and CRC-32.
	if _, err := io.Copy(io.Discard, in); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return nil
}

// attr returns the value of el's attribute with the local name name, or "".
func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return strings.TrimSpace(a.Value)
		}
	}
	return ""
}

// ooxmlMacros reads the OPC package of size bytes at r and says whether it has a macro part: a
// part whose content type ([Content_Types].xml: its Override, else the Default of its extension)
// is in macroContentTypes, or an internal relationship of a type in macroRelationshipTypes whose
// target part is in the package. It reads [Content_Types].xml and every relationship part
// whole, and returns an error for a file that is not a ZIP archive with [Content_Types].xml and
// for any of those parts that cannot be read whole.
func ooxmlMacros(r io.ReaderAt, size int64) (bool, error) {
	z, err := ooxml.Open(r, size)
	if err != nil {
		return false, err
	}
	parts := map[string]bool{}
	var types *zip.File
	for _, f := range z.File {
		n := ooxml.PartName(f.Name)
		if strings.HasSuffix(n, "/") {
			continue
		}
		parts[n] = true
		if n == "[content_types].xml" {
			types = f
		}
	}
	if types == nil {
		return false, ooxml.ErrNotOPC
	}
	left := int64(totalMax)
	defaults := map[string]string{}
	overrides := map[string]string{}
	err = elements(types, &left, func(el xml.StartElement) {
		switch el.Name.Local {
		case "Default":
			defaults[strings.ToLower(attr(el, "Extension"))] = mediaType(attr(el, "ContentType"))
		case "Override":
			overrides[ooxml.PartName(attr(el, "PartName"))] = mediaType(attr(el, "ContentType"))
		}
	})
	if err != nil {
		return false, err
	}
	found := false
	for n := range parts {
		ct, ok := overrides[n]
		if !ok {
			ct = defaults[strings.TrimPrefix(path.Ext(n), ".")]
		}
		if macroContentTypes[ct] {
			found = true
		}
	}
	for _, f := range z.File {
		n := ooxml.PartName(f.Name)
		if !ooxml.RelationshipPart(n) {
			continue
		}
		// The source of word/_rels/document.xml.rels is word/document.xml; targets are
		// relative to the source's folder, or absolute from the package's root.
		base := path.Dir(path.Dir(n))
		err := elements(f, &left, func(el xml.StartElement) {
			if el.Name.Local != "Relationship" ||
				!macroRelationshipTypes[strings.ToLower(attr(el, "Type"))] ||
				strings.EqualFold(attr(el, "TargetMode"), "External") {
				return
			}
			target := attr(el, "Target")
			if strings.HasPrefix(target, "/") {
				target = path.Clean(target)
			} else {
				target = path.Join("/", base, target)
			}
			if parts[ooxml.PartName(target)] {
				found = true
			}
		})
		if err != nil {
			return false, err
		}
	}
	return found, nil
}

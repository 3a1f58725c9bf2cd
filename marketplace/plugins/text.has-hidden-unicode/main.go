// Official plugin text.has-hidden-unicode (protocol 1): does the UTF-8 text contain invisible
// or direction-changing Unicode characters of the kinds used to hide text?
//
// It reads the input as a stream of UTF-8 runes, keeping only the little context the hard cases
// need: the rune before (an emoji before a zero-width joiner), the last rune that is not a
// combining mark (the script a joiner or non-joiner sits in), the rune after a joiner that
// follows an emoji, and the tag characters after a black flag. Memory does not grow with the
// input. Input that is not UTF-8 text (an invalid sequence, or a NUL byte) fails the run: it has
// no answer.
package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"unicode"
	"unicode/utf8"

	"lockd/sdk"
)

// The characters the check names.
const (
	zwsp        = 0x200B  // ZERO WIDTH SPACE
	zwnj        = 0x200C  // ZERO WIDTH NON-JOINER
	zwj         = 0x200D  // ZERO WIDTH JOINER
	wordJoiner  = 0x2060  // WORD JOINER
	mongolianVS = 0x180E  // MONGOLIAN VOWEL SEPARATOR
	bom         = 0xFEFF  // ZERO WIDTH NO-BREAK SPACE, a byte order mark at the start
	blackFlag   = 0x1F3F4 // WAVING BLACK FLAG, the base of the subdivision flags' tag sequences
	tagFirst    = 0xE0000 // the Tags block
	tagLast     = 0xE007F
	cancelTag   = 0xE007F // CANCEL TAG, the end of an emoji tag sequence
	vs16        = 0xFE0F  // VARIATION SELECTOR-16, emoji presentation
)

var (
	errNotUTF8 = errors.New("the input is not valid UTF-8")
	errNotText = errors.New("the input holds a NUL byte: it is not text")
)

// rgiFlags are the tag specifications of the emoji subdivision flags Unicode recommends for
// general interchange (England, Scotland, Wales): a black flag followed by one of them and a
// cancel tag is an emoji, not hidden text. Any other tag sequence can carry invisible ASCII.
var rgiFlags = map[string]bool{"gbeng": true, "gbsct": true, "gbwls": true}

// joiningScripts are the scripts in which a zero-width joiner or non-joiner is ordinary
// spelling: the cursive scripts whose letters join (Arabic, used for Persian, Syriac, N'Ko,
// Mongolian and their kin), and the Brahmic scripts of India and South-East Asia, where the
// joiners choose between conjuncts, half forms and explicit viramas.
var joiningScripts = []*unicode.RangeTable{
	unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian, unicode.Mandaic,
	unicode.Manichaean, unicode.Psalter_Pahlavi, unicode.Adlam, unicode.Hanifi_Rohingya,
	unicode.Sogdian, unicode.Phags_Pa,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya,
	unicode.Tamil, unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala,
	unicode.Tibetan, unicode.Myanmar, unicode.Khmer, unicode.Tai_Tham, unicode.Balinese,
	unicode.Javanese, unicode.Limbu, unicode.Tirhuta, unicode.Grantha, unicode.Sharada,
	unicode.Takri, unicode.Brahmi, unicode.Kaithi, unicode.Chakma, unicode.Newa, unicode.Modi,
	unicode.Siddham,
}

// bidiControl says whether c is a bidi embedding, override or isolate control (LRE, RLE, PDF,
// LRO, RLO, LRI, RLI, FSI, PDI). The implicit marks (LRM, RLM, ALM) are ordinary in
// right-to-left text and are not counted.
func bidiControl(c rune) bool {
	return c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069
}

// pictographic says whether c is an emoji that a zero-width joiner may join to: the ranges of
// Unicode's Extended_Pictographic property, taken a little wider (whole blocks) since the
// standard library has no table of it.
func pictographic(c rune) bool {
	switch {
	case c == 0x00A9, c == 0x00AE, c == 0x203C, c == 0x2049, c == 0x2122, c == 0x2139,
		c >= 0x2194 && c <= 0x21AA, c >= 0x231A && c <= 0x23FF, c == 0x24C2,
		c >= 0x25AA && c <= 0x25FE, c >= 0x2600 && c <= 0x27BF, c >= 0x2934 && c <= 0x2935,
		c >= 0x2B05 && c <= 0x2B55, c == 0x3030, c == 0x303D, c == 0x3297, c == 0x3299:
		return true
	case c >= 0x1F000 && c <= 0x1FAFF:
		// Regional indicators and skin tone modifiers are emoji components, not pictographs.
		return !(c >= 0x1F1E6 && c <= 0x1F1FF) && !(c >= 0x1F3FB && c <= 0x1F3FF)
	case c >= 0x1FC00 && c <= 0x1FFFD:
		return true
	}
	return false
}

// emojiBeforeJoiner says whether c may stand before the joiner of an emoji ZWJ sequence: a
// pictograph, a skin tone modifier, the emoji presentation selector, or the end of a tag
// sequence.
func emojiBeforeJoiner(c rune) bool {
	return pictographic(c) || c >= 0x1F3FB && c <= 0x1F3FF || c == vs16 || c == cancelTag
}

// inJoiningScript says whether c belongs to one of joiningScripts.
func inJoiningScript(c rune) bool {
	return c >= 0 && unicode.IsOneOf(joiningScripts, c)
}

// mark says whether c is a combining mark (general category M), which leaves the script of the
// letter it sits on unchanged. There is none below U+0300, which the caller skips for speed.
func mark(c rune) bool {
	return unicode.In(c, unicode.Mn, unicode.Mc, unicode.Me)
}

// hidden reads UTF-8 text from r to its end and says whether it holds a character the question
// counts: a bidi embedding, override or isolate control; U+200B, U+2060 or U+180E; U+FEFF
// anywhere but as the first character; a tag character (U+E0000-U+E007F) other than in one of
// the three recommended subdivision flags (U+1F3F4, the tags of gbeng, gbsct or gbwls, U+E007F);
// a zero-width joiner neither between an emoji and a pictograph nor after a letter of
// joiningScripts; a zero-width non-joiner not after a letter of joiningScripts. It reads to the
// end even once it has found one (rest): it returns an error for input that is not valid UTF-8
// or holds a NUL byte anywhere, and for a read error.
func hidden(r io.Reader) (bool, error) {
	in := bufio.NewReaderSize(r, 64*1024)
	first := true
	prev := rune(-1) // the rune before c; -1 at the start
	base := rune(-1) // the last rune before c that is not a combining mark
	emojiJoiner := false
	inFlag := false // after a black flag, collecting its tag specification
	var tags []byte
	for {
		c, size, err := in.ReadRune()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
		if c == utf8.RuneError && size == 1 {
			return false, errNotUTF8
		}
		if c == 0 {
			return false, errNotText
		}
		if emojiJoiner {
			// A joiner after an emoji must join it to another.
			if !pictographic(c) {
				return true, rest(in)
			}
			emojiJoiner = false
		}
		if inFlag {
			switch {
			case c == cancelTag:
				if !rgiFlags[string(tags)] {
					return true, rest(in)
				}
				inFlag = false
				first, prev, base = false, c, c
				continue
			case c >= 0xE0030 && c <= 0xE0039 || c >= 0xE0061 && c <= 0xE007A:
				if len(tags) == 5 {
					return true, rest(in)
				}
				tags = append(tags, byte(c-tagFirst))
				prev = c
				continue
			case len(tags) > 0:
				// A tag sequence that is not a subdivision flag, or one left unterminated.
				return true, rest(in)
			}
			inFlag = false
		}
		switch {
		case bidiControl(c), c == zwsp, c == wordJoiner, c == mongolianVS:
			return true, rest(in)
		case c == bom && !first:
			return true, rest(in)
		case c >= tagFirst && c <= tagLast:
			return true, rest(in)
		case c == zwj:
			if emojiBeforeJoiner(prev) {
				emojiJoiner = true
			} else if !inJoiningScript(base) {
				return true, rest(in)
			}
		case c == zwnj:
			if !inJoiningScript(base) {
				return true, rest(in)
			}
		case c == blackFlag:
			inFlag, tags = true, tags[:0]
		}
		first, prev = false, c
		if c < 0x300 || !mark(c) {
			base = c
		}
	}
	// A joiner that ends the text after an emoji joins nothing; a flag's tags left open hide.
	return emojiJoiner || inFlag && len(tags) > 0, nil
}

// rest reads in to its end once the answer is known, and returns an error when what remains
// is not UTF-8 text: the answer is only for a file that is text to its end.
func rest(in *bufio.Reader) error {
	for {
		c, size, err := in.ReadRune()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c == utf8.RuneError && size == 1 {
			return errNotUTF8
		}
		if c == 0 {
			return errNotText
		}
	}
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		return hidden(in)
	})
}

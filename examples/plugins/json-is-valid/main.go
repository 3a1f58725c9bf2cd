// Example plugin in Go (protocol 1): is the file one valid JSON text, strictly as RFC 8259's
// grammar says? Valid UTF-8 throughout, one value with only whitespace around it, nothing after
// it; duplicate member names are allowed (the grammar does not forbid them), and so are escaped
// lone surrogates (\ud800: the grammar allows any four hex digits). No byte order mark.
//
// It is a streaming validator with an explicit stack: memory stays one byte per open bracket,
// and nesting has no limit but the plugin's memory (encoding/json stops at 10 000 levels, which
// would turn a valid deep document into a wrong 0).
package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"lockd/sdk"
)

// errInvalid ends validation: the text is not JSON. Any other error is the input's own.
var errInvalid = errors.New("not JSON")

type validator struct {
	r     *bufio.Reader
	stack []byte // the closing bracket of every open object ('}') and array (']')
}

// next returns the next byte; io.EOF at the end.
func (v *validator) next() (byte, error) {
	return v.r.ReadByte()
}

// peek returns the next byte without taking it; io.EOF at the end.
func (v *validator) peek() (byte, error) {
	b, err := v.r.Peek(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// space skips RFC 8259's whitespace: space, tab, line feed, carriage return.
func (v *validator) space() error {
	for {
		c, err := v.peek()
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil
		}
		_, _ = v.next()
	}
}

// expect takes the next byte, which must be want.
func (v *validator) expect(want byte) error {
	c, err := v.next()
	if err == io.EOF || err == nil && c != want {
		return errInvalid
	}
	return err
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str takes a string after its opening quote: no control character, only the eight escapes and
// \uXXXX, and valid UTF-8 (no overlong forms, no encoded surrogates, nothing past U+10FFFF).
func (v *validator) str() error {
	for {
		c, err := v.next()
		if err == io.EOF {
			return errInvalid
		}
		if err != nil {
			return err
		}
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return errInvalid
		case c == '\\':
			e, err := v.next()
			if err == io.EOF {
				return errInvalid
			}
			if err != nil {
				return err
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for i := 0; i < 4; i++ {
					h, err := v.next()
					if err == io.EOF || err == nil && !isHex(h) {
						return errInvalid
					}
					if err != nil {
						return err
					}
				}
			default:
				return errInvalid
			}
		case c >= 0x80:
			if err := v.utf8(c); err != nil {
				return err
			}
		}
	}
}

// utf8 takes the rest of the multi-byte sequence that lead starts, and checks it whole.
func (v *validator) utf8(lead byte) error {
	var n int
	switch {
	case lead&0xe0 == 0xc0:
		n = 2
	case lead&0xf0 == 0xe0:
		n = 3
	case lead&0xf8 == 0xf0:
		n = 4
	default:
		return errInvalid
	}
	seq := []byte{lead}
	for len(seq) < n {
		c, err := v.next()
		if err == io.EOF {
			return errInvalid
		}
		if err != nil {
			return err
		}
		seq = append(seq, c)
	}
	if !utf8.Valid(seq) {
		return errInvalid
	}
	return nil
}

// digits takes one or more digits when atLeastOne, else zero or more.
func (v *validator) digits(atLeastOne bool) error {
	n := 0
	for {
		c, err := v.peek()
		if err != nil && err != io.EOF {
			return err
		}
		if err == io.EOF || c < '0' || c > '9' {
			if atLeastOne && n == 0 {
				return errInvalid
			}
			return nil
		}
		_, _ = v.next()
		n++
	}
}

// number takes a number whose first byte, '-' or a digit, is first.
func (v *validator) number(first byte) error {
	if first == '-' {
		c, err := v.next()
		if err == io.EOF || err == nil && (c < '0' || c > '9') {
			return errInvalid
		}
		if err != nil {
			return err
		}
		first = c
	}
	// The integer part: 0 alone, or a non-zero digit and more digits.
	if first != '0' {
		if err := v.digits(false); err != nil {
			return err
		}
	}
	c, err := v.peek()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if c == '.' {
		_, _ = v.next()
		if err := v.digits(true); err != nil {
			return err
		}
		if c, err = v.peek(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
	if c == 'e' || c == 'E' {
		_, _ = v.next()
		if c, err := v.peek(); err == nil && (c == '+' || c == '-') {
			_, _ = v.next()
		}
		return v.digits(true)
	}
	return nil
}

// literal takes the rest of true, false or null.
func (v *validator) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		if err := v.expect(rest[i]); err != nil {
			return err
		}
	}
	return nil
}

// value takes one value. An object or array is only opened (its closing bracket goes on the
// stack) with its first member or element; valid takes the rest.
func (v *validator) value() error {
	if err := v.space(); err != nil {
		if err == io.EOF {
			return errInvalid
		}
		return err
	}
	c, _ := v.next()
	switch {
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		v.stack = append(v.stack, closing)
		if err := v.space(); err != nil {
			if err == io.EOF {
				return errInvalid
			}
			return err
		}
		if p, _ := v.peek(); p == closing {
			_, _ = v.next()
			v.stack = v.stack[:len(v.stack)-1]
			return nil
		}
		if closing == '}' {
			return v.member()
		}
		return v.value()
	case c == '"':
		return v.str()
	case c == '-' || c >= '0' && c <= '9':
		return v.number(c)
	case c == 't':
		return v.literal("rue")
	case c == 'f':
		return v.literal("alse")
	case c == 'n':
		return v.literal("ull")
	}
	return errInvalid
}

// member takes an object member's name and colon, then its value.
func (v *validator) member() error {
	if err := v.space(); err != nil {
		if err == io.EOF {
			return errInvalid
		}
		return err
	}
	if err := v.expect('"'); err != nil {
		return err
	}
	if err := v.str(); err != nil {
		return err
	}
	if err := v.space(); err != nil && err != io.EOF {
		return err
	}
	if err := v.expect(':'); err != nil {
		return err
	}
	return v.value()
}

// valid runs the whole text: a value, then after each value either the end of the text (at the
// top level), a comma and the next member or element, or the closing bracket.
func (v *validator) valid() (bool, error) {
	err := v.value()
	for err == nil {
		if err = v.space(); err == io.EOF {
			return len(v.stack) == 0, nil
		}
		if err != nil {
			break
		}
		if len(v.stack) == 0 {
			return false, nil // something follows the value
		}
		c, _ := v.next()
		top := v.stack[len(v.stack)-1]
		switch {
		case c == top:
			v.stack = v.stack[:len(v.stack)-1]
		case c == ',' && top == '}':
			err = v.member()
		case c == ',':
			err = v.value()
		default:
			return false, nil
		}
	}
	if err == errInvalid {
		return false, nil
	}
	return false, err
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		v := validator{r: bufio.NewReaderSize(in, 64*1024)}
		return v.valid()
	})
}

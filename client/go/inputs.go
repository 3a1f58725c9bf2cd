// fd 6: the values a human typed for a protocol-2 plugin's inputs, read strictly.

package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The contract's bounds on inputs: at most 4 per manifest, names [a-z0-9_]{1,32}, values at most
// 1024 bytes; fd 6 itself is refused past 64 KiB, as lockplugin.h refuses it.
const (
	inputsMax      = 4
	inputNameMax   = 32
	inputValueMax  = 1024
	inputsBytesMax = 64 * 1024
)

// ErrInputsInvalid wraps every way fd 6 is not what lockd writes there.
var ErrInputsInvalid = errors.New("sdk: fd 6 is not lockd's canonical inputs JSON")

// Inputs returns the typed values of the plugin's inputs (protocol 2), by input name, from fd 6.
// It reads fd 6 from its start each time. It returns ErrNoInputs when the process had no fd 6 at
// its start, and an error wrapping ErrInputsInvalid unless fd 6 holds exactly what lockd writes:
// one JSON object, valid UTF-8, at most 4 members with names [a-z0-9_]{1,32} in strictly
// ascending order (no duplicates), each value a string of at most 1024 bytes, nothing after it,
// at most 64 KiB in all.
func Inputs() (map[string]string, error) {
	if inputsFile == nil {
		return nil, ErrNoInputs
	}
	buf := make([]byte, inputsBytesMax+1)
	n := 0
	for n < len(buf) {
		k, err := inputsFile.ReadAt(buf[n:], int64(n))
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sdk: reading fd 6: %w", err)
		}
	}
	if n > inputsBytesMax {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInputsInvalid, inputsBytesMax)
	}
	return parseInputs(buf[:n])
}

// parseInputs is Inputs' parser, on a buffer.
func parseInputs(raw []byte) (map[string]string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInputsInvalid}, args...)...)
	}
	// encoding/json would replace invalid UTF-8 by U+FFFD without a word: check first.
	if !utf8.Valid(raw) {
		return nil, bad("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad("not a JSON object")
	}
	values := map[string]string{}
	last := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("%v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, bad("a member name is not a string")
		}
		if !inputNameValid(name) {
			return nil, bad("%q is not an input name", name)
		}
		if len(values) > 0 && name <= last {
			return nil, bad("member %q is a duplicate or out of order", name)
		}
		if len(values) == inputsMax {
			return nil, bad("more than %d inputs", inputsMax)
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, bad("%v", err)
		}
		value, ok := tok.(string)
		if !ok {
			return nil, bad("the value of %q is not a string", name)
		}
		if len(value) == 0 || len(value) > inputValueMax {
			return nil, bad("the value of %q is not 1..%d bytes", name, inputValueMax)
		}
		values[name] = value
		last = name
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, bad("the object does not end")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("something follows the object")
	}
	return values, nil
}

// inputNameValid says whether name is [a-z0-9_]{1,32}.
func inputNameValid(name string) bool {
	if len(name) == 0 || len(name) > inputNameMax {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

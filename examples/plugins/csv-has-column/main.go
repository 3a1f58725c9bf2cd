// Example plugin in Go (protocol 2): does the header row of the CSV file (RFC 4180, as
// encoding/csv reads it) have a column named ${column}, the value a human typed? The detail, for
// the human only, says which column.
//
// Only the first record is read. A file without one, or whose first record is not valid CSV,
// fails the run (plugin_error): it has no header to answer about. One UTF-8 byte order mark
// before the first field is skipped, as spreadsheet exports write it.
package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"

	"lockd/sdk"
)

func hasColumn(in *os.File) (bool, error) {
	inputs, err := sdk.Inputs()
	if err != nil {
		return false, err
	}
	column, ok := inputs["column"]
	if !ok {
		return false, errors.New("no value for input column")
	}

	r := bufio.NewReader(in)
	if bom, err := r.Peek(3); err == nil && bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = r.Discard(3)
	}
	header, err := csv.NewReader(r).Read()
	if err == io.EOF {
		return false, errors.New("no header row")
	}
	if err != nil {
		return false, err
	}
	for i, name := range header {
		if name == column {
			// Detail is an error only without fd 7, which this manifest always has.
			_ = sdk.Detail(fmt.Sprintf("column %d of %d", i+1, len(header)))
			return true, nil
		}
	}
	return false, nil
}

func main() {
	sdk.Run(hasColumn)
}

// Test plugin (protocol 2): does the file start with the typed digits? Reads fd 6 through
// sdk.Inputs and says on fd 7 what it compared.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"lockd/sdk"
)

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		inputs, err := sdk.Inputs()
		if err != nil {
			return false, err
		}
		prefix := []byte(inputs["prefix"])
		head := make([]byte, len(prefix))
		n, err := io.ReadFull(in, head)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return false, err
		}
		if err := sdk.Detail(fmt.Sprintf("compared %d bytes", len(prefix))); err != nil {
			return false, err
		}
		return bytes.Equal(head[:n], prefix), nil
	})
}

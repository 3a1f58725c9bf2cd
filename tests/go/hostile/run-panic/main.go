// Test plugin: panics inside sdk.Run, which must fail the run (exit 1), not answer.
package main

import (
	"os"

	"lockd/sdk"
)

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		var table []bool
		return table[len(table)], nil // index out of range
	})
}

// Test plugin (protocol 1, no detail): sdk.Detail must say there is no fd 7 whatever the Go
// runtime put at 7, and the answer still goes through: 1 when Detail returned ErrNoDetail.
package main

import (
	"errors"
	"os"

	"lockd/sdk"
)

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		return errors.Is(sdk.Detail("nobody reads this"), sdk.ErrNoDetail), nil
	})
}

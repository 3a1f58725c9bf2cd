// Test plugin: a goroutine panics while sdk.Run's function waits for it. No recover can catch
// that: the Go runtime ends the process with status 2, plugin_error as well.
package main

import (
	"os"

	"lockd/sdk"
)

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		done := make(chan bool)
		go func() {
			panic("worker failed")
		}()
		return <-done, nil
	})
}

// Test plugin: imports the SDK (its init decides fds 3, 6 and 7) but panics in main before using
// it. The Go runtime exits with status 2: plugin_error, never an answer.
package main

import (
	"lockd/sdk"
)

func main() {
	in := sdk.Input()
	var buf [1]byte
	_, _ = in.Read(buf[:])
	panic("this plugin always panics")
}

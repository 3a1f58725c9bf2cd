// A lockd test plugin in Go that panics before answering: the Go runtime exits with status 2,
// which must read as plugin_error (cause exit:2), never as an answer.
package main

import "os"

func main() {
	in := os.NewFile(3, "input")
	var buf [1]byte
	_, _ = in.Read(buf[:])
	panic("go-panic: this plugin always panics")
}

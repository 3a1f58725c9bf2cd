// Test plugin: writes a whole answer, then exits 2, as a crash after a premature print would.
// lockd must read it as plugin_error (exit:2), never as the 1 it printed.
package main

import "os"

func main() {
	_, _ = os.Stdout.Write([]byte("1\n"))
	os.Exit(2)
}

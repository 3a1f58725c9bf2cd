// Package sdk is the Go SDK for lockd plugins: the plugin contract's runtime and answer, as
// lockd-plugin(7) states them.
//
// A plugin reads the file it is asked about from fd 3 (Input), the values a human typed for its
// inputs from fd 6 (Inputs, protocol 2), may write a human-only detail to fd 7 (Detail, protocol
// 2 with detail = true), and ends with exactly one of Answer(true), Answer(false) or Fail. Run
// does all of it around one function:
//
//	func main() {
//		sdk.Run(func(in *os.File) (bool, error) {
//			...
//			return found, nil
//		})
//	}
//
// The answer is only what Answer writes on stdout, "1\n" or "0\n", followed by exit status 0.
// Nothing answers through the exit status: a panic (exit 2), log.Fatal (exit 1), Fail, or
// returning from main without answering all read as plugin_error, never as a 0. Print nothing
// else on stdout: bytes that reached the pipe before the answer make the run bad_output.
//
// Build plugins static, with CGO_ENABLED=0: lockd refuses a binary with an interpreter. The
// package uses the standard library only.
package sdk

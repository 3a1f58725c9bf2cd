// A lockd test plugin in Go: starts goroutines that each search part of fd 3 for "lockd" and
// answers 1 if any part holds it, else 0. Proves the Go runtime (threads, signals, its memory
// reservations) starts and answers under the sandbox with the contract's 128 MiB.
package main

import (
	"bytes"
	"io"
	"os"
	"sync"
)

const workers = 8

var needle = []byte("lockd")

func fail() {
	// Anything but exactly "1" or "0" with status 0 is a plugin_error: never a 0.
	os.Exit(1)
}

func main() {
	in := os.NewFile(3, "input")
	if in == nil {
		fail()
	}
	st, err := in.Stat()
	if err != nil {
		fail()
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		// Not sized: read it whole, then search the parts in parallel all the same.
		data, err := io.ReadAll(in)
		if err != nil {
			fail()
		}
		size = int64(len(data))
		in = nil
		answer(search(size, func(off int64, buf []byte) (int, error) {
			return copy(buf, data[off:]), nil
		}))
		return
	}
	answer(search(size, func(off int64, buf []byte) (int, error) {
		return in.ReadAt(buf, off)
	}))
}

// search splits [0, size) among the workers, each reading its part plus len(needle)-1 bytes of
// the next so that a match across a boundary is not missed.
func search(size int64, readAt func(off int64, buf []byte) (int, error)) bool {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		found bool
		bad   bool
	)
	part := (size + workers - 1) / workers
	for i := int64(0); i < workers; i++ {
		start := i * part
		if start >= size {
			break
		}
		end := start + part + int64(len(needle)) - 1
		if end > size {
			end = size
		}
		wg.Add(1)
		go func(start, end int64) {
			defer wg.Done()
			buf := make([]byte, end-start)
			// ReadAt may return io.EOF with a full buffer at the end of the file; only a
			// short read is a failure.
			if n, _ := readAt(start, buf); int64(n) != end-start {
				mu.Lock()
				bad = true
				mu.Unlock()
				return
			}
			if bytes.Contains(buf, needle) {
				mu.Lock()
				found = true
				mu.Unlock()
			}
		}(start, end)
	}
	wg.Wait()
	if bad {
		fail()
	}
	return found
}

func answer(b bool) {
	out := "0\n"
	if b {
		out = "1\n"
	}
	if n, err := os.Stdout.WriteString(out); err != nil || n != len(out) {
		fail()
	}
	os.Exit(0)
}

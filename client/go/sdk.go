// The plugin contract's descriptors and answer, for Go plugins.

package sdk

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
)

// The descriptors lockd gives a plugin (the contract's Runtime table).
const (
	InputFD  = 3 // the file asked about, read-only
	InputsFD = 6 // the canonical JSON of the typed inputs (protocol 2 with inputs)
	DetailFD = 7 // the detail pipe (protocol 2 with detail = true)
)

// DetailMax is what lockd keeps of fd 7: Detail writes at most this many bytes per process.
const DetailMax = 4096

// ErrNoDetail is Detail's error for a plugin that has no detail pipe.
var ErrNoDetail = errors.New("sdk: no detail pipe (fd 7): the manifest has no detail = true, or this is not a lockd run")

// ErrNoInputs is Inputs' error for a plugin that has no inputs (fd 6).
var ErrNoInputs = errors.New("sdk: no inputs (fd 6): the manifest declares none, or this is not a lockd run")

// What the process held when it started, decided once in init, before main and before the
// plugin could open anything of its own: a descriptor the plugin (or the Go runtime) later puts
// at 3, 6 or 7 is never taken for lockd's. The contract allows the runtime to use 7 when a plugin
// has no detail; deciding at Detail's call would write the detail into whatever sits there.
var (
	inputFile  *os.File // fd 3, a regular file open for reading only
	inputsFile *os.File // fd 6, when open for reading
	detailFile *os.File // fd 7, when lockd's detail pipe
)

func init() {
	decide(os.Getenv("LOCKFILE_PLUGIN_PROTOCOL"))
}

// fdMode returns fd's open flags and file type, or ok false when fd is not open.
func fdMode(fd int) (flags int, mode uint32, ok bool) {
	var st syscall.Stat_t

	f, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, 0, false
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, 0, false
	}
	return int(f), st.Mode & syscall.S_IFMT, true
}

// decide records which of lockd's descriptors this process has. Protocol 2 is what lockd's
// environment says (LOCKFILE_PLUGIN_PROTOCOL); fds 6 and 7 exist only there.
func decide(protocol string) {
	if flags, mode, ok := fdMode(InputFD); ok && flags&syscall.O_ACCMODE == syscall.O_RDONLY &&
		mode == syscall.S_IFREG {
		inputFile = os.NewFile(InputFD, "input")
	}
	if protocol != "2" {
		return
	}
	if flags, _, ok := fdMode(InputsFD); ok && flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		inputsFile = os.NewFile(InputsFD, "inputs")
	}
	if flags, mode, ok := fdMode(DetailFD); ok && flags&syscall.O_ACCMODE == syscall.O_WRONLY &&
		mode == syscall.S_IFIFO {
		detailFile = os.NewFile(DetailFD, "detail")
	}
}

// Input returns the file asked about, lockd's fd 3, as it was when the process started (its
// offset is the plugin's own). A process started without it fails: there is nothing to answer
// about.
func Input() *os.File {
	if inputFile == nil {
		failf("sdk: no input file on fd 3 (run the plugin with lockctl plugin test)")
	}
	return inputFile
}

// writeAll writes b whole to fd, retrying short writes and EINTR, bypassing os.File so that no
// buffering or poller stands between the answer and the pipe.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return syscall.EIO
		}
		b = b[n:]
	}
	return nil
}

// Answer writes exactly "1\n" (true) or "0\n" (false) on stdout and exits with status 0. It never
// returns. When the answer can not be written whole it exits with status 1, which lockd reads as
// plugin_error, so a half-written answer is never taken for one.
func Answer(one bool) {
	b := []byte("0\n")
	if one {
		b = []byte("1\n")
	}
	if writeAll(1, b) != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// Fail gives up: exits with status 1 writing nothing on stdout. It never returns. The agent sees
// plugin_error; the cause (exit:1) goes to lockd's audit only.
func Fail() {
	os.Exit(1)
}

// failf writes why on stderr (lockd drains it unread; only its size is audited) and fails.
func failf(format string, args ...any) {
	_ = writeAll(2, []byte(fmt.Sprintf(format, args...)+"\n"))
	Fail()
}

var detailMu sync.Mutex
var detailUsed int

// Detail writes a human-only detail on fd 7 (protocol 2 with detail = true). All calls of a
// process together write at most DetailMax bytes, which is what lockd keeps; the rest is cut off
// and returns no error. It returns ErrNoDetail when the process had no detail pipe at its start,
// and the write's error otherwise. The agent never sees the detail.
func Detail(text string) error {
	if detailFile == nil {
		return ErrNoDetail
	}
	detailMu.Lock()
	defer detailMu.Unlock()
	room := DetailMax - detailUsed
	if room <= 0 {
		return nil
	}
	if len(text) > room {
		text = text[:room]
	}
	detailUsed += len(text)
	return writeAll(DetailFD, []byte(text))
}

// Run calls f with the input file and answers what it returns. An error from f, or a panic in
// it, fails the run (the message on stderr): neither can read as an answer. It never returns.
// A panic in another goroutine ends the process with status 2, which is plugin_error too.
func Run(f func(in *os.File) (bool, error)) {
	in := Input()
	one, err := call(f, in)
	if err != nil {
		failf("%v", err)
	}
	Answer(one)
}

// call runs f, turning a panic into an error.
func call(f func(in *os.File) (bool, error), in *os.File) (one bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return f(in)
}

// Unit tests of package sdk: the parser of fd 6, and the process-level contract (what reaches
// stdout, the exit status, fds 3, 6 and 7) checked in a child copy of the test binary.

package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperEnv names the helper a child copy of the test binary runs instead of the tests.
const helperEnv = "LOCKD_SDK_TEST_HELPER"

// The helpers: each does what a plugin would, then reports on stdout or stderr.
var helpers = map[string]func(){
	"answer-one":  func() { Answer(true) },
	"answer-zero": func() { Answer(false) },
	"fail":        func() { Fail() },
	"return":      func() {},
	"run-one": func() {
		Run(func(in *os.File) (bool, error) {
			b := make([]byte, 16)
			n, _ := in.Read(b)
			return string(b[:n]) == "yes", nil
		})
	},
	"run-error": func() {
		Run(func(in *os.File) (bool, error) { return true, errors.New("cannot parse") })
	},
	"run-panic": func() {
		Run(func(in *os.File) (bool, error) {
			var m map[string]int
			m["x"] = 1
			return true, nil
		})
	},
	"detail": func() {
		err := Detail(strings.Repeat("a", 3000))
		err2 := Detail(strings.Repeat("b", 3000))
		err3 := Detail("c")
		fmt.Fprintf(os.Stderr, "%v %v %v", err, err2, err3)
		Answer(true)
	},
	"inputs": func() {
		v, err := Inputs()
		if err != nil {
			fmt.Fprint(os.Stderr, err)
			Fail()
		}
		again, _ := Inputs()
		fmt.Fprint(os.Stderr, v["needle"], "|", again["needle"])
		Answer(true)
	},
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		helpers[name]()
		os.Exit(3) // a helper that returns: like a plugin returning from main
	}
	os.Exit(m.Run())
}

// child describes the descriptors and environment of one helper run.
type child struct {
	input    []byte // fd 3, a read-only regular file, when not nil
	inputs   []byte // fd 6, when not nil
	detail   bool   // fd 7, the write end of a pipe
	detailRO bool   // fd 7, the read end of a pipe (not lockd's)
	protocol string
}

type outcome struct {
	stdout, stderr string
	detail         []byte
	code           int
}

func file(t *testing.T, name string, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func run(t *testing.T, helper string, c child) outcome {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{helperEnv + "=" + helper}
	if c.protocol != "" {
		cmd.Env = append(cmd.Env, "LOCKFILE_PLUGIN_PROTOCOL="+c.protocol)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	extra := make([]*os.File, 5)
	if c.input != nil {
		extra[0] = file(t, "input", c.input)
	}
	if c.inputs != nil {
		extra[3] = file(t, "inputs", c.inputs)
	}
	var detailR *os.File
	if c.detail || c.detailRO {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		detailR = r
		extra[4] = w
		if c.detailRO {
			extra[4] = r
		}
	}
	cmd.ExtraFiles = extra
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	o := outcome{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		o.code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if c.detail {
		extra[4].Close()
		buf := new(bytes.Buffer)
		_, _ = buf.ReadFrom(detailR)
		o.detail = buf.Bytes()
	}
	return o
}

func TestAnswer(t *testing.T) {
	for helper, want := range map[string]string{"answer-one": "1\n", "answer-zero": "0\n"} {
		o := run(t, helper, child{input: []byte("x")})
		if o.stdout != want || o.code != 0 {
			t.Errorf("%s: stdout %q, exit %d; want %q, 0", helper, o.stdout, o.code, want)
		}
	}
}

func TestFailIsNeverAnAnswer(t *testing.T) {
	for _, helper := range []string{"fail", "run-error", "run-panic", "return"} {
		o := run(t, helper, child{input: []byte("x")})
		if o.stdout != "" || o.code == 0 {
			t.Errorf("%s: stdout %q, exit %d; want nothing and a non-zero exit", helper,
				o.stdout, o.code)
		}
	}
	o := run(t, "run-panic", child{input: []byte("x")})
	if !strings.Contains(o.stderr, "panic: assignment to entry in nil map") {
		t.Errorf("run-panic: stderr %q does not say what panicked", o.stderr)
	}
	o = run(t, "run-error", child{input: []byte("x")})
	if !strings.Contains(o.stderr, "cannot parse") {
		t.Errorf("run-error: stderr %q does not carry the error", o.stderr)
	}
}

func TestRunReadsFD3(t *testing.T) {
	if o := run(t, "run-one", child{input: []byte("yes")}); o.stdout != "1\n" || o.code != 0 {
		t.Errorf("yes: %q, exit %d", o.stdout, o.code)
	}
	if o := run(t, "run-one", child{input: []byte("no")}); o.stdout != "0\n" || o.code != 0 {
		t.Errorf("no: %q, exit %d", o.stdout, o.code)
	}
	// Without fd 3 there is nothing to answer about: a failure, never a 0.
	if o := run(t, "run-one", child{}); o.stdout != "" || o.code != 1 ||
		!strings.Contains(o.stderr, "fd 3") {
		t.Errorf("no fd 3: %q, exit %d, stderr %q", o.stdout, o.code, o.stderr)
	}
}

func TestDetail(t *testing.T) {
	o := run(t, "detail", child{input: []byte("x"), detail: true, protocol: "2"})
	if o.stdout != "1\n" || o.stderr != "<nil> <nil> <nil>" {
		t.Fatalf("stdout %q, stderr %q", o.stdout, o.stderr)
	}
	want := strings.Repeat("a", 3000) + strings.Repeat("b", DetailMax-3000)
	if string(o.detail) != want {
		t.Errorf("detail: %d bytes, want the first %d", len(o.detail), DetailMax)
	}
	// A pipe at 7 is not lockd's unless lockd's environment says protocol 2 and it is the
	// write end: decided at the start, whatever sits at 7 later.
	for _, c := range []child{
		{input: []byte("x"), detail: true, protocol: "1"},
		{input: []byte("x"), detail: true},
		{input: []byte("x"), detailRO: true, protocol: "2"},
		{input: []byte("x"), protocol: "2"},
	} {
		o := run(t, "detail", c)
		if !strings.HasPrefix(o.stderr, ErrNoDetail.Error()) || len(o.detail) != 0 {
			t.Errorf("%+v: stderr %q, detail %q; want ErrNoDetail", c, o.stderr, o.detail)
		}
	}
}

func TestInputsFromFD6(t *testing.T) {
	o := run(t, "inputs", child{input: []byte("x"), inputs: []byte(`{"needle":"caf\u00e9"}`),
		protocol: "2"})
	if o.stdout != "1\n" || o.stderr != "café|café" {
		t.Errorf("stdout %q, stderr %q", o.stdout, o.stderr)
	}
	o = run(t, "inputs", child{input: []byte("x"), inputs: []byte(`{"needle":"x"}`),
		protocol: "1"})
	if o.code != 1 || o.stderr != ErrNoInputs.Error() {
		t.Errorf("protocol 1: exit %d, stderr %q", o.code, o.stderr)
	}
	o = run(t, "inputs", child{input: []byte("x"), inputs: []byte(`{"needle":"x"} {}`),
		protocol: "2"})
	if o.code != 1 || !strings.Contains(o.stderr, "follows") {
		t.Errorf("trailing: exit %d, stderr %q", o.code, o.stderr)
	}
}

func TestParseInputs(t *testing.T) {
	good := map[string]map[string]string{
		`{}`:                                {},
		`{"needle":"a"}`:                    {"needle": "a"},
		`{"a":"1","b":"2","c":"3","d":"4"}`: {"a": "1", "b": "2", "c": "3", "d": "4"},
		`{"e":"\u00e9\ud83d\ude00"}`:        {"e": "é😀"},
		" {\"x_1\" : \"v\"}\n":              {"x_1": "v"},
	}
	for raw, want := range good {
		got, err := parseInputs([]byte(raw))
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: %v, %v; want %v", raw, got, err, want)
		}
	}
	bad := []string{
		``, `[]`, `"x"`, `{`, `{"a":"1",}`, `{"a":"1"}x`, `{"a":"1"}{}`,
		`{"a":"1","a":"2"}`, `{"b":"1","a":"2"}`, `{"A":"1"}`, `{"":"1"}`,
		`{"` + strings.Repeat("a", 33) + `":"1"}`, `{"a":1}`, `{"a":null}`, `{"a":["x"]}`,
		`{"a":{}}`, `{"a":""}`, `{"a":"` + strings.Repeat("x", 1025) + `"}`,
		`{"a":"1","b":"2","c":"3","d":"4","e":"5"}`, "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}",
	}
	for _, raw := range bad {
		if got, err := parseInputs([]byte(raw)); !errors.Is(err, ErrInputsInvalid) {
			t.Errorf("%q: %v, %v; want ErrInputsInvalid", raw, got, err)
		}
	}
}

// Package sdktest runs a Go plugin under lockd's own sandbox from `go test`: it builds the plugin
// as lockd needs it (static, CGO_ENABLED=0) and runs it with `lockctl plugin test`, the runner
// lockd uses, on one fixture (Run) or on every fixture of fixtures/one/ and fixtures/zero/
// (Fixtures).
//
// lockctl is $LOCKCTL, or lockctl on $PATH. As root each run gets a fresh ephemeral uid, as under
// lockd; otherwise it runs as the caller with every other part of the sandbox.
package sdktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Outcome is what a run ended with, as lockd names it.
type Outcome string

// The outcomes: an answer, a failure (any: lockd tells the agent no more), and a value lockctl
// refused before the run, as lockd refuses it (E_INPUT_INVALID): the plugin did not run.
const (
	One          Outcome = "1"
	Zero         Outcome = "0"
	PluginError  Outcome = "plugin_error"
	InputInvalid Outcome = "input_invalid"
)

// Result is one run as `lockctl plugin test --json` reports it.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// Cause says why a run is plugin_error: exit:N, signal:NAME, bad_output, timeout, oom,...
	Cause string `json:"cause"`
	// Error is lockctl's message for input_invalid, or why a fixture could not run.
	Error string `json:"error"`
	// Detail is what the plugin wrote on fd 7, escaped as lockctl shows it.
	Detail      string `json:"detail"`
	DetailBytes int64  `json:"detail_bytes"`
	CPUUsec     int64  `json:"cpu_usec"`
	// PeakMemoryBytes is the plugin's own peak; 0 when lockctl could not tell it.
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	WallUsec        int64 `json:"wall_usec"`
	StdoutBytes     int64 `json:"stdout_bytes"`
	StderrBytes     int64 `json:"stderr_bytes"`
}

// fixtureResult is one fixture's line of `lockctl plugin test DIR --fixtures --json`.
type fixtureResult struct {
	Result
	Fixture string `json:"fixture"`
	Expect  string `json:"expect"`
	OK      bool   `json:"ok"`
}

type fixturesReport struct {
	Fixtures []fixtureResult `json:"fixtures"`
	Passed   int             `json:"passed"`
	Failed   int             `json:"failed"`
	Errors   []string        `json:"errors"`
}

// track stats what lockctl will read (the manifest, the fixtures and their inputs, lockctl
// itself) from this process, so that `go test`'s cache, which knows only the files a test touches
// itself (by size and modification time for a stat), runs the test again when one changed.
func track(t testing.TB, ctl string, paths ...string) {
	t.Helper()
	if ctl != "" {
		_, _ = os.Stat(ctl)
	}
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				_, _ = os.Stat(path)
			}
			return nil
		})
	}
}

// lockctl returns the lockctl to use, or fails the test.
func lockctl(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LOCKCTL"); p != "" {
		return p
	}
	p, err := exec.LookPath("lockctl")
	if err != nil {
		t.Fatalf("sdktest: no lockctl: set $LOCKCTL or put lockctl on $PATH (%v)", err)
	}
	return p
}

// goTool returns the go command that runs this test, so the plugin is built by the same Go.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// Build builds the plugin in dir (its main package) the way lockd needs it, static with
// CGO_ENABLED=0 and -trimpath, into a temporary directory removed after the test, and returns
// the binary's path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plugin")
	cmd := exec.Command(goTool(), "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sdktest: building %s: %v\n%s", dir, err, msg)
	}
	return out
}

// lockctlJSON runs lockctl with args and decodes its --json output into v. The exit status is
// not an error by itself (a plugin_error exits 1); output that is not JSON is.
func lockctlJSON(t testing.TB, v any, args ...string) {
	t.Helper()
	ctl := lockctl(t)
	track(t, ctl, filepath.Join(args[2], "plugin.toml"))
	cmd := exec.Command(ctl, append(args, "--json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("sdktest: %s: %v", cmd, err)
	}
	if jerr := json.Unmarshal(stdout.Bytes(), v); jerr != nil {
		t.Fatalf("sdktest: %s: %v\n%s%s", cmd, err, stdout.String(), stderr.String())
	}
}

// Run builds the plugin in dir and runs it once on fixture under `lockctl plugin test`, with
// inputs (by input name; nil for a plugin without inputs) as its fd 6, and returns the outcome:
// One, Zero, PluginError, or InputInvalid for a value that does not fit its input.
func Run(t testing.TB, dir, fixture string, inputs map[string]string) Outcome {
	t.Helper()
	return RunResult(t, dir, fixture, inputs).Outcome
}

// RunResult is Run with the whole report: the cause of a plugin_error, the detail, the figures.
func RunResult(t testing.TB, dir, fixture string, inputs map[string]string) Result {
	t.Helper()
	bin := Build(t, dir)
	track(t, "", fixture)
	args := []string{"plugin", "test", dir, fixture, "--plugin", bin}
	if inputs != nil {
		path := filepath.Join(t.TempDir(), "inputs.json")
		b, err := json.Marshal(inputs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--inputs", path)
	}
	var r Result
	lockctlJSON(t, &r, args...)
	if r.Outcome == "" {
		t.Fatalf("sdktest: lockctl reported no outcome")
	}
	return r
}

// Fixtures builds the plugin in dir and runs it on every file of dir/fixtures/one/ (each must
// answer 1) and dir/fixtures/zero/ (each must answer 0), a fixture's inputs read from
// NAME.inputs.json beside it, one subtest per fixture. A mismatch, a plugin_error, or an answer
// directory without a fixture fails the test.
func Fixtures(t *testing.T, dir string) {
	t.Helper()
	bin := Build(t, dir)
	track(t, "", filepath.Join(dir, "fixtures"))
	var rep fixturesReport
	lockctlJSON(t, &rep, "plugin", "test", dir, "--fixtures", "--plugin", bin)
	for _, msg := range rep.Errors {
		t.Error(msg)
	}
	for _, f := range rep.Fixtures {
		f := f
		t.Run(f.Fixture, func(t *testing.T) {
			switch {
			case f.OK:
			case f.Cause != "":
				t.Errorf("expected %s, got %s (%s)", f.Expect, f.Outcome, f.Cause)
			case f.Error != "":
				t.Errorf("expected %s, not run: %s", f.Expect, f.Error)
			default:
				t.Errorf("expected %s, got %s", f.Expect, f.Outcome)
			}
		})
	}
}

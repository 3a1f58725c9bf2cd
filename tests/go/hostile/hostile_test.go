// Go plugins that misbehave, run under lockd's real sandbox through lockctl plugin test: each
// outcome is what the plugin contract's Answer section says, never an answer it did not give.
package hostile

import (
	"os"
	"path/filepath"
	"testing"

	"lockd/sdk/sdktest"
)

func fixture(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHostileGoPlugins(t *testing.T) {
	for _, c := range []struct {
		dir, content   string
		inputs         map[string]string
		outcome, cause string
		detail         string
	}{
		// A plain panic exits 2; one inside sdk.Run is recovered and fails (exit 1); one in
		// another goroutine can not be recovered: exit 2. None is an answer.
		{dir: "panic-in-main", content: "x", outcome: "plugin_error", cause: "exit:2"},
		{dir: "run-panic", content: "x", outcome: "plugin_error", cause: "exit:1"},
		{dir: "goroutine-panic", content: "x", outcome: "plugin_error", cause: "exit:2"},
		// "1\n" on stdout, then a non-zero exit: the status wins.
		{dir: "answer-then-exit", content: "x", outcome: "plugin_error", cause: "exit:2"},
		// No detail pipe: Detail says so, decided at the start.
		{dir: "detail-absent", content: "x", outcome: "1"},
		// fd 6: a value that fits is read strictly; one that does not fit its kind or its
		// max_bytes is refused before any run, as lockd refuses it (E_INPUT_INVALID).
		{dir: "inputs", content: "2024-06", inputs: map[string]string{"prefix": "2024"},
			outcome: "1", detail: "compared 4 bytes"},
		{dir: "inputs", content: "1999-06", inputs: map[string]string{"prefix": "2024"},
			outcome: "0", detail: "compared 4 bytes"},
		{dir: "inputs", content: "2024-06", inputs: map[string]string{"prefix": "20245"},
			outcome: "input_invalid"},
		{dir: "inputs", content: "2024-06", inputs: map[string]string{"prefix": "20a4"},
			outcome: "input_invalid"},
	} {
		c := c
		t.Run(c.dir+"/"+c.outcome, func(t *testing.T) {
			r := sdktest.RunResult(t, c.dir, fixture(t, c.content), c.inputs)
			if string(r.Outcome) != c.outcome || r.Cause != c.cause || r.Detail != c.detail {
				t.Errorf("got %s (%s) detail %q; want %s (%s) detail %q", r.Outcome,
					r.Cause, r.Detail, c.outcome, c.cause, c.detail)
			}
			if c.outcome == "input_invalid" && r.WallUsec != 0 {
				t.Errorf("the plugin ran (wall %d us) with a value that does not fit",
					r.WallUsec)
			}
		})
	}
}

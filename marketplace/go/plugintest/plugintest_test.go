// Tests of the plugintest package on its own fixtures (fixtures/one, zero and error: "yes",
// "no" and "bad"), and a fuzz target seeded by them as a plugin's are.
package plugintest

import (
	"errors"
	"testing"
)

// answer is a check that answers 1 for "yes", 0 for "no" and fails otherwise.
func answer(b []byte) (bool, error) {
	switch string(b) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, errors.New("neither yes nor no")
}

// The fixtures give their directories' answers.
func TestCheckFixtures(t *testing.T) {
	CheckFixtures(t, answer)
}

// Seeds come in the order one, zero, error, and max leaves out the longer ones.
func TestSeeds(t *testing.T) {
	got := Seeds(t, 0)
	if len(got) != 3 || string(got[0]) != "yes" || string(got[1]) != "no" || string(got[2]) != "bad" {
		t.Fatalf("Seeds(0): %q", got)
	}
	if got := Seeds(t, 3); len(got) != 1 || string(got[0]) != "no" {
		t.Fatalf("Seeds(3): %q", got)
	}
}

// FuzzAnswer runs the check on the fixtures and any bytes: it ends without a panic.
func FuzzAnswer(f *testing.F) {
	for _, b := range Seeds(f, 0) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = answer(b)
	})
}

package lua

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every .lua file is embedded as a script, and each states its contract in
// its header: KEYS, ARGV and the reply.
func TestEveryScriptFileIsUsedAndDocumented(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .lua files: %v", err)
	}
	names := map[string]bool{}
	for _, s := range New().All() {
		names[s.Name()] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		if !names[name] {
			t.Errorf("%s is not in Scripts.All()", f)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var header strings.Builder
		for _, line := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line + "\n")
		}
		h := header.String()
		for _, want := range []string{"-- " + f + ":", "KEYS[1]", "ARGV", "Reply:"} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: header lacks %q", f, want)
			}
		}
	}
	if len(files) != len(names) {
		t.Errorf("%d .lua files but %d scripts", len(files), len(names))
	}
}

package pluginhost

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scriptArchive writes a script archive as `hayloft_plugin pack` lays one
// out: a "#!" line, a script, then a zip with the given entries. The
// script answers `describe` itself with a component named "fromrun", so a
// test tells which answer the host took.
func scriptArchive(t *testing.T, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("#!/bin/sh\n" +
		`echo '{"name":"arch","version":"1","protocol":"hayloft.plugin.v1","components":[{"kind":"scorer","name":"fromrun"}]}'` +
		"\nexit 0\n")
	z := zip.NewWriter(&buf)
	z.SetOffset(int64(buf.Len()))
	for name, body := range entries {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "arch.pyz")
	if err := os.WriteFile(path, buf.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDescribeArchive: a script archive's stored describe answer is read
// without running it, after its pin is checked; without one, or for any
// other file, the plugin is run as before.
func TestDescribeArchive(t *testing.T) {
	stored := `{"name":"arch","version":"1","protocol":"hayloft.plugin.v1","components":[{"kind":"scorer","name":"stored"}]}`
	tests := []struct {
		name    string
		entries map[string]string
		pin     string // "" pins nothing, "bad" a wrong sha256
		want    string // the scorer described
		wantErr string // or the error's text
	}{
		{"stored answer", map[string]string{archiveDescribe: stored, "__main__.py": "x"}, "", "stored", ""},
		{"stored answer, pinned", map[string]string{archiveDescribe: stored}, "ok", "stored", ""},
		{"pin checked first", map[string]string{archiveDescribe: stored}, "bad", "", "sha256 mismatch"},
		{"no stored answer", map[string]string{"__main__.py": "x"}, "", "fromrun", ""},
		{"bad stored answer", map[string]string{archiveDescribe: "{"}, "", "", archiveDescribe + ": no valid JSON"},
		{"no protocol", map[string]string{archiveDescribe: `{"name":"arch"}`}, "", "", archiveDescribe + ": no protocol named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := scriptArchive(t, tt.entries)
			spec := Spec{Name: "arch", Source: path}
			switch tt.pin {
			case "ok":
				spec.SHA256 = fileSHA256(t, path)
			case "bad":
				spec.SHA256 = strings.Repeat("0", 64)
			}
			h := newHost(t, Options{})
			if err := h.AddPlugin(spec); err != nil {
				t.Fatal(err)
			}
			got, err := h.Describe(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var scorers []string
			for _, e := range got {
				if e.Plugin == "arch" {
					scorers = append(scorers, e.Name)
				}
			}
			if strings.Join(scorers, " ") != tt.want {
				t.Errorf("described %q, want %q", scorers, tt.want)
			}
		})
	}
}

// TestDescribeArchiveOnlyScripts: a file that is not a script archive (a
// Go plugin binary) is not read as one.
func TestDescribeArchiveOnlyScripts(t *testing.T) {
	fi, err := os.Stat(pluginBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := describeArchive(&Source{Name: "acme", Path: pluginBin}, fi.Size()); ok || err != nil {
		t.Errorf("a Go binary read as a script archive: ok %v, err %v", ok, err)
	}
}

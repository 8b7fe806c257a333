package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func BenchmarkParseFull(b *testing.B) {
	src, err := os.ReadFile("testdata/full.hcl")
	if err != nil {
		b.Fatal(err)
	}
	opts := LoadOptions{Env: []string{"LANG_CODE=zh"}}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("testdata/full.hcl", src, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseLarge decodes a sweep-sized config: 100 models, 50 tasks and
// 50 evals over all models.
func BenchmarkParseLarge(b *testing.B) {
	var sb strings.Builder
	var models []string
	for i := range 100 {
		fmt.Fprintf(&sb, "model \"openai\" \"m%d\" {\n  base_url = \"http://127.0.0.1:%d/v1\"\n  max_concurrency = 16\n  temperature = 0\n  stop = [\"</s>\"]\n}\n", i, 8000+i)
		models = append(models, fmt.Sprintf("model.openai.m%d", i))
	}
	for i := range 50 {
		fmt.Fprintf(&sb, "task \"niah\" \"t%d\" {\n  lengths = range(1000, 128001, 1000)\n  depths = [0, 25, 50, 75, 100]\n  haystack = \"data/x.txt\"\n}\n", i)
		fmt.Fprintf(&sb, "eval \"e%d\" {\n  task = task.niah.t%d\n  models = [%s]\n  retrievers = [null]\n  scorers = [\"contains\"]\n}\n", i, i, strings.Join(models, ", "))
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("large.hcl", src, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
